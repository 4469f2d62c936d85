"""The configuration of an online actor-critic run (``rtrl rl``'s options, an RL run folder's ``config.json``): plain
validated data (``rtrl.config``); ``rtrl.rl.assemble`` builds what it names."""

from __future__ import annotations

from rtrl.cells.lookup import cell_import, cell_name
from rtrl.checks import check_shares
from rtrl.config import (
    MAX_SEED,
    Config,
    Invalid,
    OptionError,
    defaults,
    flag,
    non_negative_float,
    non_negative_int,
    one_of,
    option,
    optional,
    pairs,
    positive_float,
    positive_int,
    random_seed,
    says_what_unread_does,
    unit_interval,
)
from rtrl.methods import REGISTRY
from rtrl.rl.algorithms import ALGORITHMS, options_of
from rtrl.rl.algorithms.ac import ENTROPY_SIGNS, HEAD_INITS
from rtrl.rl.envs import env_import, env_name
from rtrl.rl.envs.extra_inputs import PARTS, parts_of
from rtrl.rl.transforms import PER_ENVIRONMENT, STEP_RULES


def extra_parts(value):
    """The extra inputs (``rtrl.rl.envs.extra_inputs.parts_of``): names from ``PARTS`` as a tuple in their order;
    ``True`` (older run folders' switch) all three, ``False`` none."""
    try:
        return parts_of(value)
    except ValueError:
        raise Invalid(f"names from {list(PARTS)} (comma-separated), or true or false") from None


extra_parts.bare = PARTS  # the value of the flag given alone (rtrl.run.options)


# option -> the step rules that read it
STEP_OPTIONS = {"kappa": ("obgd", "adaptive_obgd"), "clip": ("adam", "sgd"), "critic_lr": ("intentional",)}
ALGORITHM_OPTIONS = tuple(dict.fromkeys(name for algorithm in ALGORITHMS for name in options_of(algorithm)
                                        if name not in STEP_OPTIONS))


def readers(option_name: str) -> str:
    """The algorithms that read ``option_name`` (``options_of``), for its help: ``q, qrc, sarsa``."""
    return ", ".join(a for a in ALGORITHMS if option_name in options_of(a))


def never_read(values: dict) -> dict[str, str]:
    """Every option that the run ``values`` (an ``RLConfig``'s fields) configures never reads, whatever its value, each
    with why: another algorithm's (``options_of``), a step rule's (``STEP_OPTIONS``; an algorithm may read ``clip``
    too, as QRC's secondary weights do), ``critic_lr`` outside ``ac``, or ``truncation`` without ``method`` tbptt.
    Only ``algorithm``, ``optimizer`` and ``method`` decide it; a run folder's ``config.json`` leaves these out
    (``RLConfig.stored``)."""
    algorithm, optimizer, method = values["algorithm"], values["optimizer"], values["method"]
    reads = options_of(algorithm)
    found = {}
    for name in ALGORITHM_OPTIONS:
        if name not in reads:
            users = [a for a in ALGORITHMS if name in options_of(a)]
            found[name] = f"algorithm {algorithm!r} does not read it (only {', '.join(users)})"
    for name, rules in STEP_OPTIONS.items():
        if optimizer not in rules and name not in reads:
            users = " or ".join(rules) + "".join(f", or algorithm {a}" for a in ALGORITHMS if name in options_of(a))
            found[name] = f"optimizer {optimizer!r} does not read it (only {users})"
    if algorithm != "ac":  # the critic's own constant: an algorithm with a critic
        found.setdefault("critic_lr", f"algorithm {algorithm!r} does not read it (only ac, an actor and a critic)")
    if method != "tbptt":
        found["truncation"] = f"only method tbptt reads it, not {method!r}"
    return found


def unread(values: dict) -> list[tuple[str, str]]:
    """The options of ``never_read(values)`` that ``values`` gives, each differing from its default (``clip`` None,
    ``--no-clip``, says what a rule without a clip does anyway, so it is not given), each with why."""
    default = defaults(RLConfig)
    return [(name, why) for name, why in never_read(values).items()
            if values[name] != default[name] and not says_what_unread_does(name, values[name])]


# Registered cells whose output ends in an N x N matrix (``output_map="matrix"``, their own default) that the heads'
# first linear map absorbs: an agent builds them without it (``rtrl.rl.assemble.torso_args``), and its config.json
# names the form it built.
OUTPUT_MATRIX_CELLS = ("lru", "rtu")


def with_old_output_map(data: dict) -> dict:
    """``data`` (a ``config.json`` we wrote) with ``output_map="matrix"`` named in its ``cell_args`` where its torso is
    one of ``OUTPUT_MATRIX_CELLS`` and it names none: a file from before agents named the form they built, whose
    torso had the cell's own default."""
    args = data.get("cell_args")
    if data.get("cell") not in OUTPUT_MATRIX_CELLS or not isinstance(args, dict) or "output_map" in args:
        return data
    return {**data, "cell_args": {**args, "output_map": "matrix"}}


def check_split(seeds: int, envs: int, devices: int) -> None:
    """What ``devices`` split: the environments of one seed (``envs`` a multiple of ``devices``), or the seeds when
    there are several, each device running an equal share of them with all their environments (``seeds`` a
    multiple of ``devices``, ``envs`` anything); ``OptionError`` naming the option that does not divide."""
    if seeds == 1:
        check_shares(envs, devices, "envs", "environments")
    elif seeds % devices:
        raise OptionError(f"seeds must be a multiple of devices={devices} when there are several (the devices split "
                          f"the seeds, each device an equal share of them with their environments), got seeds "
                          f"{seeds}; choose --seeds a multiple of --devices, or --devices a divisor of {seeds}",
                          "seeds")


class RLConfig(Config):
    """Everything that defines a run (the run folder's ``config.json``; ``rtrl rl``'s options), as plain data:
    construction checks every field and builds nothing (``rtrl.rl.assemble`` builds the environment and the
    agent)."""

    command = "rtrl rl"
    size_options = "--hidden, --envs, --seeds, --head-hidden or --truncation"
    env: str = option("tmaze", "an environment from `rtrl list`, or gymnasium:ID (any registered Gymnasium "
                      "environment, stepped on the host)", env_name, "NAME", imports=env_import)
    env_args: tuple = option((), "an environment option, e.g. memory_length=20, or a keyword of gymnasium.make "
                             "(repeatable)", pairs, "KEY=VALUE")
    algorithm: str = option("ac", f"{', '.join(ALGORITHMS)}: `rtrl list algorithms` says what each learns and its "
                            "options", one_of(ALGORITHMS), "NAME")
    cell: str = option("elman", "a cell from `rtrl list`, or the import path of any other, e.g. flax.linen:GRUCell "
                       "(sized by the observation and --hidden; a cell object goes to rtrl.rl.assemble)", cell_name,
                       "NAME", imports=cell_import)
    cell_args: tuple = option((), "a cell option, e.g. activation=relu (repeatable)", pairs, "KEY=VALUE")
    hidden: int = option(32, "hidden size of the recurrent torso", positive_int, "N")
    method: str = option("auto", "a trace method from `rtrl list` (auto: the cheapest exact one for the torso), "
                         "or tbptt (a rolling window of --truncation steps; a method object goes to "
                         "rtrl.rl.assemble)", one_of(REGISTRY), "NAME")
    truncation: int = option(8, "--method tbptt: its window", positive_int, "K")
    head_hidden: int = option(0, "width of a tanh layer between the torso and the heads (the policy and value heads, "
                              "or the action values; 0: linear heads on the torso)", non_negative_int, "M")
    envs: int = option(16, "environments stepped in parallel", positive_int, "E")
    steps: int = option(100_000, "environment steps per environment", positive_int, "S")
    gamma: float = option(0.99, "discount", unit_interval, "G")
    lam: float = option(0.8, "lambda of the parameter-space eligibility traces (0: one-step actor-critic)",
                        unit_interval, "L")
    epsilon: float = option(0.01, f"{readers('epsilon')}: the exploration rate epsilon reached after --explore-steps",
                            unit_interval, "E")
    explore_steps: int = option(10_000, f"{readers('explore_steps')}: steps over which epsilon falls linearly from "
                                "1 to --epsilon", positive_int, "S")
    h_lr: float = option(1e-5, f"{readers('h_lr')}: the step size of the secondary weights h (plain steps, clipped "
                         "to --clip)", positive_float, "LR")
    h_beta: float = option(1.0, f"{readers('h_beta')}: the regulariser beta of the secondary weights h",
                           non_negative_float, "B")
    head_init: str = option("glorot", f"{readers('head_init')}: the heads' weights at the start: "
                            + "; ".join(f"{k}: {v}" for k, v in HEAD_INITS.items()), one_of(HEAD_INITS), "INIT")
    encoder_blocks: int = option(0, f"{readers('encoder_blocks')}: blocks before the torso, each a linear layer of "
                                 "--encoder-width units (sparse initialisation: nine in ten weights zero), a LayerNorm "
                                 "without parameters "
                                 "and a leaky ReLU (Farr et al.'s MuJoCo torso; the cell then reads --encoder-width "
                                 "inputs); their gradient is the step's immediate one, cut where it reaches the "
                                 "torso's state, as in Farr et al.'s code (for exact traces use the cell "
                                 "rtrl.cells.encoder:encoded)", non_negative_int, "K")
    encoder_width: int = option(128, f"{readers('encoder_width')}: the width of each --encoder-blocks block",
                                positive_int, "M")
    split_torso: bool = option(False, f"{readers('split_torso')}: the policy reads the first half of the torso's "
                               "units and the value the second, each through its own --head-hidden layer (separate "
                               "actor and critic networks where the cell is element-wise: minGRU, LRU, RTU, ...)", flag)
    critic_network: bool = option(False, f"{readers('critic_network')}: the value a network of its own beside the "
                                  "policy's, the cell and its --encoder-blocks twice (Farr et al.'s separate actor "
                                  "and critic; rtrl.cells.Parallel), neither's gradient reaching the other", flag)
    init_std: float = option(1.0, "ac on a Box action space: the Gaussian policy's standard deviation at the start "
                             "(its log is learnt)", positive_float, "S")
    state_std: bool = option(False, "ac on a Box action space: the Gaussian policy's log standard deviation is a head "
                             "on the torso, as its mean is (Farr et al.'s state_dependent_std), not one learnt "
                             "vector", flag)
    std_map: str = option("exp", "ac on a Box action space, with --state-std: the head's map to the standard "
                          "deviation, exp (of a log) or softplus (Farr et al.'s state_dependent_std)",
                          one_of(("exp", "softplus")), "MAP")
    entropy: float = option(0.01, f"{readers('entropy')}: weight of the policy's entropy", non_negative_float, "C")
    entropy_sign: str = option("positive", f"{readers('entropy_sign')}: how --entropy enters the update: "
                               + "; ".join(f"{k}: {v}" for k, v in ENTROPY_SIGNS.items()), one_of(ENTROPY_SIGNS),
                               "RULE")
    value_coef: float = option(1.0, f"{readers('value_coef')}: weight of the value's gradient in the traces",
                               non_negative_float, "C")
    td_refresh: bool = option(False, f"{readers('td_refresh')}: the step's value v_t evaluated again after its "
                              "update (from the carry the step began with), so the TD error reads both of its values "
                              "at the current parameters, as Farr et al.'s code does; off: v_t as acted on, one "
                              "update behind", flag)
    # measured (docs/rl-history.md): obgd at lr 1, kappa 2 was slower on masked CartPole and did not learn
    # MemoryChain(20)
    optimizer: str = option("adam", "the step-size rule: adam, sgd, obgd (Elsayed et al.'s overshooting-bounded "
                            "step), adaptive_obgd (stream-x's) or intentional (Farr et al.'s; docs/rl.md)",
                            one_of(STEP_RULES), "NAME")
    lr: float = option(1e-3, "learning rate, any positive step (intentional: the fraction eta in (0, 1] of the TD "
                       "error a step intends)",
                       positive_float, "LR")
    critic_lr: float | None = option(None, "intentional, ac: the critic's fraction eta, --lr then the actor's, "
                                     "each with traces of its own and the actor's TD error normalised (Farr et "
                                     "al.'s intentional actor-critic; default: one --lr, one trace of both)",
                                     optional(positive_float), "LR")
    kappa: float = option(2.0, "obgd / adaptive_obgd: the overshooting bound", positive_float, "K")
    clip: float | None = option(1.0, "adam / sgd: clip the update's global norm to this, qrc: h's step too "
                                "(`--no-clip`: do not)",
                                optional(positive_float), "C")
    extra_inputs: tuple = option((), "extras appended to the observation, comma-separated: action (the previous "
                                 "action, a one-hot or a Box action as the environment took it), reward (the previous "
                                 "reward), time (the time in the episode over its limit, less 1/2, never "
                                 "normalised); the flag alone: all three",
                                 extra_parts, "PARTS")
    normalize_obs: bool = option(True, "normalise observations by running mean and variance", flag)
    scale_rewards: bool = option(True, "scale rewards by the running deviation of the discounted return", flag)
    update_every: int = option(1, "an update every k steps (the ascents of k steps summed)", positive_int, "K")
    health_every: int = option(16, "steps between samples of the learner's health figures (1: every step)",
                               positive_int, "K")
    record_every: int = option(1000, "steps between metrics records (and checkpoints)", positive_int, "R")
    fidelity_every: int = option(0, "every M steps, the cosine of the online gradients with BPTT's (0: off; "
                                 f"{', '.join(a for a, cls in ALGORITHMS.items() if cls.checked == 1)}: of "
                                 "Q(s_t, a_t)'s, as cos_value)", non_negative_int, "M")
    seed: int = option(0, "seed of the parameters, the environments and the actions", random_seed, "SEED")
    seeds: int = option(1, "seeds run in one call under jax.vmap: SEED, SEED+1, ... (with --devices, split over the "
                        "devices; a host environment's on one device); a record's return is their mean, "
                        "return_per_seed each one's", positive_int, "S")
    dtype: str = option("float32", "float32 or float64", one_of(("float32", "float64")), "DTYPE")
    devices: int = option(1, "devices to split the environments over (--envs a multiple of it), or with --seeds "
                          "S > 1 the seeds, each with its environments (S a multiple of it; docs/devices.md)",
                          positive_int, "N")

    def __post_init__(self) -> None:
        super().__post_init__()
        check_split(self.seeds, self.envs, self.devices)
        if self.seed + self.seeds - 1 > MAX_SEED:  # the last seed of the call must be a seed too
            raise OptionError(f"seed + seeds - 1 must be at most 2**32 - 1 = {MAX_SEED} (the seeds run are seed, "
                              f"seed + 1, ..., seed + seeds - 1), got seed {self.seed} with seeds {self.seeds}",
                              "seed")
        for name, why in unread(self.to_dict()):
            raise OptionError(f"{name} does nothing here: {why}; drop it", name)
        if self.optimizer == "intentional" and self.lr > 1:
            raise OptionError(f"lr must be at most 1 under optimizer 'intentional' (the fraction eta of the TD error "
                              f"a step intends), got {self.lr}", "lr")
        if self.critic_lr is not None:
            if self.critic_lr > 1:
                raise OptionError(f"critic_lr must be at most 1 (the fraction eta of the TD error a step intends), "
                                  f"got {self.critic_lr}", "critic_lr")
        if self.encoder_width != defaults(RLConfig)["encoder_width"] and not self.encoder_blocks:
            raise OptionError(f"encoder_width does nothing here: encoder_blocks is 0 (no block to size); give "
                              f"--encoder-blocks K >= 1 or drop --encoder-width {self.encoder_width}", "encoder_width")
        if self.std_map != "exp" and not self.state_std:
            raise OptionError(f"std_map does nothing here: without --state-std the spread is one learnt log_std "
                              f"vector, not a head to map; give --state-std or drop --std-map {self.std_map}",
                              "std_map")
        if self.entropy_sign != "positive" and self.entropy == 0:
            raise OptionError(f"entropy_sign does nothing here: entropy is 0 (no entropy term to sign); give "
                              f"--entropy C > 0 or drop --entropy-sign {self.entropy_sign}", "entropy_sign")
        if self.entropy_sign == "td+statistics" and self.optimizer != "intentional":
            raise OptionError(f"entropy_sign td+statistics signs the entropy term in the intentional step's "
                              f"statistics, and optimizer is {self.optimizer!r}; give --optimizer intentional or "
                              f"--entropy-sign td", "entropy_sign")
        if self.algorithm == "qrc" and self.optimizer in PER_ENVIRONMENT:
            raise ValueError(f"optimizer must be adam, sgd or obgd under algorithm 'qrc' (its correction is added to "
                             f"the TD ascent), got {self.optimizer!r}")
        if self.optimizer in PER_ENVIRONMENT and self.update_every != 1:
            raise ValueError(f"update_every must be 1 under optimizer {self.optimizer!r} (its step reads each "
                             f"step's traces), got {self.update_every}")

    @classmethod
    def unread_options(cls, values: dict) -> list[str]:
        """The names of ``unread(values)``; none where ``values`` are not valid (construction names what is wrong)."""
        try:
            return [name for name, _ in unread(values)]
        except (KeyError, TypeError, ValueError):
            return []

    @classmethod
    def never_read_options(cls, values: dict) -> dict[str, str]:
        """``never_read(values)``; none where ``values`` are not valid."""
        try:
            return never_read(values)
        except (KeyError, TypeError, ValueError):
            return {}

    @classmethod
    def from_dict(cls, data, where: str = "the configuration", complete: bool = False, trusted: bool = True
                  ) -> RLConfig:
        """``Config.from_dict`` (which sets a file's options its run never read back at their defaults); an LRU or RTU
        torso without ``output_map`` was written before agents named it (``OUTPUT_MATRIX_CELLS``): its run had the
        cell's own default, the output matrix, so that is named."""
        if complete and isinstance(data, dict):
            data = with_old_output_map(data)
        return super().from_dict(data, where, complete, trusted)

    def label(self, method: str | None = None) -> str:
        """The legend's name of the run: its torso and method (``method``: what ``auto`` chose, where known)."""
        method = method or self.method
        return f"{self.cell} {method}" + (f" K={self.truncation}" if method == "tbptt" else "")
