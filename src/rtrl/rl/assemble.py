"""``assemble(config)``: the environment and the agent (its cell and method) that an ``RLConfig`` names, each built
once; every error a ``ValueError`` (or ``OptionError``) naming the option, raised before anything is written."""

from __future__ import annotations

import dataclasses
import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import optax

from rtrl.cells import Cell
from rtrl.cells.lookup import make_cell
from rtrl.config import OptionError, defaults
from rtrl.devices import bytes_of, floats_of
from rtrl.methods import Method
from rtrl.rl.algorithm import Algorithm
from rtrl.rl.algorithms import ALGORITHMS, BOX
from rtrl.rl.config import OUTPUT_MATRIX_CELLS, RLConfig
from rtrl.rl.envs import Env, EpisodeStats, make
from rtrl.rl.envs.extra_inputs import ExtraInputs
from rtrl.rl.rolling import RollingTBPTT
from rtrl.rl.transforms import eligibility, update_rule
from rtrl.validate import what


class RLAssembly(NamedTuple):
    """An RL run's parts: its configuration, the environment and the agent."""

    config: RLConfig
    env: Env
    agent: Algorithm

    def memory_needed(self) -> int:
        """The bytes of the state the run holds (``rtrl.devices.check_memory``), per seed times ``seeds`` (their
        states are held side by side), worked out on shapes alone: the parameters (the heads' too), the update
        rule's state (``rule``: its eligibility traces, one set per environment and two under ``critic_lr``, and its
        statistics: Adam's moments, the intentional step's, QRC's secondary weights and their traces, ...), and per
        environment the torso's online state (traces, or tbptt's window), the environment's state, the observation
        and the inputs that the fidelity check keeps. Within 10% of what the compiled step takes as its argument
        (2 to 4% below it on tests/test_rl_sizes.py's tiny runs: the pending step, tallies and keys are left out); a
        lower bound of what a run needs, as its step's temporaries and output come on top."""
        c, env, agent = self.config, self.env, self.agent
        dtype = jnp.dtype(c.dtype)
        host = getattr(env, "host", False)

        def state():
            params = agent.init(jax.random.PRNGKey(0), dtype)
            environments = () if host else jax.vmap(env.reset)(jax.random.split(jax.random.PRNGKey(0), c.envs))[1]
            return params, self.rule(c.envs).init(params), agent.torso.memory(params, c.envs), environments

        inputs = c.envs * env.obs_size * (1 + (env.max_steps if c.fidelity_every else 0))  # obs, and the history
        return c.seeds * (bytes_of(state) + dtype.itemsize * inputs)

    def rule(self, envs: int) -> optax.GradientTransformationExtraArgs:
        """The run's update rule for ``envs`` environments (``rule_of``)."""
        return rule_of(self.config, self.agent, envs)

    def work_needed(self) -> tuple[int, int]:
        """The work the run asks for (``rtrl.devices.check_work``): the floats it updates (each step of each
        environment of each seed: the eligibility traces the rule keeps, every set of them, and the torso's online
        state), and the per-seed figures its host gathers (seeds times records)."""
        c, agent = self.config, self.agent
        key = jax.random.PRNGKey(0)
        traces = floats_of(lambda: eligibility(self.rule(1).init(agent.init(key))))  # one environment's
        memory = floats_of(lambda: agent.torso.learner.init(agent.torso.cell.init(key)))  # its traces, or window
        records = -(-c.steps // c.record_every)
        return c.steps * c.envs * c.seeds * (traces + memory), c.seeds * records


def assemble(config: RLConfig, cell: Cell | None = None, method: Method | RollingTBPTT | None = None) -> RLAssembly:
    """The parts of ``config``; ``ValueError`` naming an option the environment or the cell does not have, a cell
    that does not read the observation, or a method that does not apply. Built once per ``compiled_part`` of a
    configuration in a process (the parts are values no run changes): configurations that differ only in their
    length, record_every or seed get the same environment and agent, so they share one compiled program
    (``rtrl.rl.loop.program``).

    ``cell`` and ``method``: objects of your own (an rtrl cell, e.g. from ``rtrl.cells.from_flax``; a method object,
    e.g. ``rtrl.methods.SnAp(n=3)``) in place of what ``config`` names, which stays plain data: its ``cell`` and
    ``cell_args`` (or ``method``) are then left at their defaults (an ``OptionError`` names one given beside the
    object), and the parts are built for this call alone."""
    if not isinstance(config, RLConfig):
        raise TypeError(f"config must be an RLConfig, e.g. rl.assemble(rl.RLConfig(env='tmaze')), got {what(config)}")
    key = compiled_part(config)
    if cell is not None or method is not None:
        check_own(config, cell, method)
        parts = _assemble(key, cell, method)
        return RLAssembly(config, parts.env, parts.agent)
    try:
        hash(key)
    except TypeError:  # an unhashable option value (a dict where a number belongs): built, so its check says which
        parts = _assemble(key)
    else:
        parts = _assembled(key)
    return RLAssembly(config.replace(cell_args=parts.config.cell_args), parts.env, parts.agent)


def check_own(config: RLConfig, cell, method) -> None:
    """``cell`` an rtrl cell and ``method`` a method object where given, each replacing options of ``config`` that
    are then at their defaults; ``ValueError`` or ``OptionError`` naming what is not."""
    if cell is not None and not isinstance(cell, Cell):
        raise ValueError(f"cell must be an rtrl cell (rtrl.cells.*, or rtrl.cells.from_flax, from_equinox, ...), got "
                         f"{what(cell)}; a cell by name goes in RLConfig(cell=...)")
    if method is not None and not isinstance(method, (Method, RollingTBPTT)):
        raise ValueError(f"method must be a method object (rtrl.methods.*, e.g. TBPTT(16)), got {what(method)}; a "
                         "method by name goes in RLConfig(method=...)")
    default = defaults(RLConfig)
    replaced = (("cell", "cell_args") if cell is not None else ()) + (("method",) if method is not None else ())
    for name in replaced:
        if getattr(config, name) != default[name]:
            raise OptionError(f"{name} does nothing here: the {name.split('_')[0]} object given to assemble replaces "
                              f"what the configuration names; drop {name}", name)


def compiled_part(config: RLConfig) -> RLConfig:
    """``config`` with what a run's compiled pieces do not depend on (its steps, record_every and seed) at fixed
    values: the key under which configurations share their parts and their program."""
    return dataclasses.replace(config, steps=1, record_every=1, seed=0)


def _assemble(config: RLConfig, cell: Cell | None = None, method: Method | RollingTBPTT | None = None) -> RLAssembly:
    env = make(config.env, **dict(config.env_args))
    if config.extra_inputs:
        host = getattr(env, "host", False)
        env = (dataclasses.replace(env, extra_inputs=config.extra_inputs) if host
               else EpisodeStats(ExtraInputs.of(env.env, config.extra_inputs)))
    if getattr(env, "host", False):
        if config.devices != 1:
            raise ValueError(f"devices must be 1 for {env.name}, a Python environment stepped on the host, got "
                             f"{config.devices}")
        if config.fidelity_every and env.max_steps is None:
            raise ValueError(f"fidelity_every needs a bound on the episode's length, and {env.name} states none; "
                             "give one with --env-arg max_episode_steps=N")
    # what the cell reads: the observation, or the last encoder block's output
    reads = config.encoder_width if config.encoder_blocks else env.obs_size
    if cell is None:
        config = config.replace(cell_args=torso_args(config))
        cell = make_cell(config.cell, dict(config.cell_args), reads, config.hidden)
    # with encoder blocks the algorithm checks the width the cell reads (``rtrl.rl.agent.encoder_sizes``), once
    if not config.encoder_blocks and cell.input_size != reads:
        raise ValueError(f"cell input_size must be the observation size {reads} of {env.name}, got {cell.input_size}")
    default = defaults(RLConfig)
    for name in ("init_std", "state_std", "std_map"):  # the Gaussian policy's options
        if env.action_bounds is None and getattr(config, name) != default[name]:
            raise ValueError(f"{name} is the Gaussian policy's, for a Box action space; {env.name}'s actions are "
                             f"discrete (a categorical policy), got {name} {getattr(config, name)}")
    kind = ALGORITHMS[config.algorithm] if env.action_bounds is None else box_algorithm(config.algorithm, env.name)
    return RLAssembly(config, env, algorithm_of(kind, config, cell, env.num_actions, env.obs_size, method))


_assembled = functools.cache(_assemble)  # the parts of each compiled part of a configuration, built once


def rule_of(config: RLConfig, agent: Algorithm, envs: int) -> optax.GradientTransformationExtraArgs:
    """The update rule of ``config`` for ``agent`` and ``envs`` environments (``rtrl.rl.transforms.update_rule``:
    the traces, the TD ascent with the agent's correction if any, the step; or ``split_intentional``'s two sets,
    each on the leaves its gradient reaches where the agent says which: ``agent.reaches``)."""
    c, decay = config, config.gamma * config.lam
    return update_rule(c.optimizer, lr=c.lr, decay=decay, envs=envs, clip=c.clip, kappa=c.kappa,
                       every_k=c.update_every, correction=agent.correction(c.gamma, decay, envs),
                       critic_lr=c.critic_lr, signed=c.entropy if c.entropy_sign != "positive" else 0.0,
                       reaches=getattr(agent, "reaches", None), signed_statistics=c.entropy_sign == "td+statistics")


def torso_args(config: RLConfig) -> tuple:
    """``config.cell_args``, naming ``output_map`` where the torso is a registered LRU or RTU
    (``OUTPUT_MATRIX_CELLS``) and they name none: ``"concat"``, the cell without its N x N output matrix (so without
    N x N eligibility traces per environment), since every head's first map on the torso's output is linear and
    absorbs that matrix (the function class of the matrix cell with as many units; ``hidden`` stays the output
    width, so the cell has ``hidden / 2`` units, their two parts side by side); ``"matrix"`` where it is not
    absorbed (``split_torso``: each head reads half of the outputs) or ``hidden`` is odd."""
    args = dict(config.cell_args)
    if config.cell not in OUTPUT_MATRIX_CELLS or "output_map" in args:
        return config.cell_args
    fast = not config.split_torso and config.hidden % 2 == 0
    return tuple(sorted({**args, "output_map": "concat" if fast else "matrix"}.items()))


def algorithm_of(kind: type, config: RLConfig, cell: Cell, num_actions: int, observations: int | None = None,
                 method: Method | RollingTBPTT | None = None) -> Algorithm:
    """The algorithm ``kind`` (a class of ``rtrl.rl.algorithms``) on ``cell`` with ``config``'s method (or
    ``method``, an object) and the options it takes (``kind.options``, keyword arguments of the same names);
    ``observations``: the observation's size, which encoder blocks (``encoder_blocks``) read."""
    options = {name: getattr(config, name) for name in kind.options}
    if config.encoder_blocks:
        options["observations"] = observations
    if config.critic_lr is not None:  # the intentional rule's critic apart (``ac`` only): its gradients apart
        options["split_critic"] = True
    return kind(cell, num_actions, config.method if method is None else method, config.truncation, **options)


def box_algorithm(algorithm: str, where: str) -> type:
    """The class of ``algorithm`` for a Box action space (``BOX``); ``ValueError`` naming the option for one that
    has none."""
    if algorithm not in BOX:
        raise ValueError(f"algorithm must be {' or '.join(BOX)} (a Gaussian policy) for {where}, whose actions are a "
                         f"Box; {algorithm!r} needs a Discrete action space")
    return BOX[algorithm]
