"""The protocol card that opens every RL results table, generated from the configurations that ran.

``protocol_card(configs, anchor)`` reads the runs' ``RLConfig`` (or its options as a dict) and says what the
observation carries, the frames and environments per seed, the seeds, the discount, the environment and its
version, and how observations, rewards and the score are normalised; beside each, where it differs, the anchor's
value (``ANCHORS``: the published protocol a table is compared with), and last the differences counted and named.
Rows that differ in an item (a raw-observation row beside normalised ones, say) show each value once, in order.
Where the anchor names its agent (``ANCHORS[...]["agent"]``: the options that build it from rtrl's pieces), the card
says each row's agent (``agent``) and counts it a difference unless the options match (``agent_differs``; a
memoryless control row is compared without its torso); where a row has the anchor's agent, the card lists what no
option matches (``unmatched``).
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
from collections.abc import Mapping

from rtrl.rl.config import RLConfig
from rtrl.rl.envs.extra_inputs import PARTS, parts_of
from rtrl.rl.envs.gymnasium_env import ACTION_MAPS

SHOWN = {"action": "previous action", "reward": "previous reward", "time": "time"}

# The anchors' protocols, one dict per suite: Farr et al. 2026 (arXiv 2605.24709), their MuJoCo -P tasks and their
# POPGym Easy suite. ``environments``: the environment each task ran, by the name before its version.
# ``agent``: the ``RLConfig`` options that make the anchor's agent with rtrl's pieces (the ``-anchor-agent`` presets,
# ``rtrl.rl.control_presets.ANCHOR_AGENT``; ``cell_args`` those it must hold).
ANCHORS: dict[str, dict] = {
    "mujoco": {"name": "Farr et al. 2026, MuJoCo -P tasks", "inputs": ("time",), "frames": 2_000_000, "envs": 1,
               "seeds": 10, "gamma": 0.99,
               "environments": {"Hopper": "Hopper-v4", "Walker2d": "Walker2d-v4", "HalfCheetah": "HalfCheetah-v4",
                                "Ant": "Ant-v4"},
               "agent": {"cell": "rtu", "hidden": 384, "cell_args": {"output_map": "concat"}, "encoder_blocks": 2,
                         "encoder_width": 128, "head_hidden": 0, "head_init": "sparse", "state_std": True,
                         "std_map": "softplus",
                         "entropy": 0.01, "entropy_sign": "td+statistics", "optimizer": "intentional", "lr": 0.05,
                         "critic_lr": 0.5, "critic_network": True, "td_refresh": True},
               "actions": "clip"},  # ClipActionWrapper: rtrl's --env-arg actions=clip
    "popgym": {"name": "Farr et al. 2026, POPGym Easy", "inputs": ("action", "reward"), "frames": 10_000_000,
               "envs": 1, "seeds": 10, "gamma": 0.99, "level": "Easy"},
}
RAW_SCORE = "none: the undiscounted return of an episode"
SIGNED = {"td": " signed by the TD error", "td+statistics": " signed by the TD error, in the step statistics too"}


def inputs(config) -> tuple[str, ...]:
    """The parts the observation carries beside itself, of ``PARTS``, in their order: ``extra_inputs`` as older run
    folders hold it (a bool: ``True`` all three) or as the names of its parts (``rtrl.rl.envs.extra_inputs``'s
    ``parts_of``)."""
    value = option(config, "extra_inputs")
    try:
        return parts_of(value)
    except ValueError:
        raise ValueError(f"extra_inputs must be a bool or names of {PARTS}, got {value!r}") from None


def option(config, name: str):
    """``config``'s option ``name``: an ``RLConfig``'s field, or a dict's entry (the field's default where absent)."""
    if isinstance(config, Mapping):
        if name in config:
            return config[name]
        return next(f.default for f in dataclasses.fields(RLConfig) if f.name == name)
    return getattr(config, name)


def package_version(name: str) -> str:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def environment(config) -> str:
    """The environment, its version and its options: a Gymnasium ID with gymnasium's version, a POPGym port with
    popgym's (the package its steps are checked against), rtrl's own by name."""
    env, args = option(config, "env"), dict(option(config, "env_args"))
    if env.startswith("gymnasium:"):
        name = f"{env.partition(':')[2]} (gymnasium {package_version('gymnasium')})"
    elif env.startswith("popgym:"):
        name = f"{env.partition(':')[2]} (rtrl's JAX port of popgym {package_version('popgym')})"
    else:
        name = f"{env} (rtrl's own)"
    return name + (f", {', '.join(f'{k}={v}' for k, v in args.items())}" if args else "")


def anchor_environment(config, anchor: dict) -> str | None:
    """The environment the anchor ran for ``config``'s task (its version, its level), or ``None`` where it names
    none."""
    name = option(config, "env").partition(":")[2]
    if "environments" in anchor:
        return anchor["environments"].get(name.partition("-")[0])
    if "level" in anchor:
        name = name.removeprefix("popgym-").rsplit("-v", 1)[0]  # popgym's own Gymnasium ID: popgym-<Task>-v0
        for level in ("Easy", "Medium", "Hard"):
            if name.endswith(level):
                return name[: -len(level)] + anchor["level"]
    return None


def shown_inputs(parts) -> str:
    return " + ".join(["observation", *(SHOWN[p] for p in parts)])


def frames(config) -> str:
    steps, envs = option(config, "steps"), option(config, "envs")
    return f"{steps * envs:,} per seed ({steps:,} steps x {envs} environments)"


MEMORYLESS = "feedforward"  # the cell of a memoryless control row: compared with the anchor's agent without its torso
TORSO = ("cell", "hidden", "cell_args")


def actions(config) -> str:
    """How a Box's actions reach the environment: the option ``actions`` of a Gymnasium environment
    (``rtrl.rl.envs.gymnasium_env.ACTION_MAPS``), squashed by default."""
    return ACTION_MAPS[dict(option(config, "env_args")).get("actions", "squash")]


def agent(config) -> str:
    """The agent in a line: the torso (and the encoder blocks before it), the heads, the policy's spread, the entropy
    term and the step rule, from ``config``'s options (a config, or a dict of options such as an anchor's)."""
    name = option(config, "cell")
    concat = dict(option(config, "cell_args")).get("output_map") == "concat"
    torso = f"{name} {option(config, 'hidden')}" + (" (concatenated output)" if concat else "")
    if option(config, "encoder_blocks"):
        torso += f" behind {option(config, 'encoder_blocks')} blocks of {option(config, 'encoder_width')}"
    if option(config, "critic_network"):
        torso = f"an actor's and a critic's network, each {torso}"
    width = option(config, "head_hidden")
    heads = f"heads behind a tanh layer of {width}" if width else "linear heads"
    heads += f" ({option(config, 'head_init')} at the start)"
    spread = (f"the spread {option(config, 'std_map')} of a head" if option(config, "state_std")
              else "the spread one vector")
    entropy = f"entropy {option(config, 'entropy'):g}" + SIGNED.get(option(config, "entropy_sign"), "")
    rule = f"{option(config, 'optimizer')} {option(config, 'lr'):g}"
    if option(config, "critic_lr") is not None:
        rule += f" (critic {option(config, 'critic_lr'):g})"
    if option(config, "td_refresh"):
        rule += ", the TD error's two values at the current parameters"
    return ", ".join((torso, heads, spread, entropy, rule))


def agent_differs(config, spec: dict) -> bool:
    """Whether ``config``'s agent differs from the options ``spec`` (an anchor's ``agent``): each option equal, the
    ``cell_args`` that ``spec`` names held; a memoryless row (``MEMORYLESS``) is the anchor's agent's control, its
    torso not compared."""
    memoryless = option(config, "cell") == MEMORYLESS
    for name, value in spec.items():
        if memoryless and name in TORSO:
            continue
        if name == "cell_args":
            held = dict(option(config, name))
            if any(held.get(k) != v for k, v in value.items()):
                return True
        elif getattr(option(config, name), "name", option(config, name)) != value:
            return True
    return False


# item -> (what a config shows, the anchor's value as shown or None, and whether a config's value differs from it)
def _items(anchor: dict | None):
    def against(key, show):
        return None if anchor is None or key not in anchor else show(anchor[key])

    def env_anchor(config):
        return None if anchor is None else anchor_environment(config, anchor)

    return [
        ("inputs", lambda c: shown_inputs(inputs(c)), lambda c: against("inputs", shown_inputs),
         lambda c: anchor is not None and "inputs" in anchor and inputs(c) != tuple(anchor["inputs"])),
        ("frames", frames, lambda c: against("frames", lambda v: f"{v:,} per seed"),
         lambda c: anchor is not None and "frames" in anchor
         and option(c, "steps") * option(c, "envs") != anchor["frames"]),
        ("environments per seed", lambda c: str(option(c, "envs")), lambda c: against("envs", str),
         lambda c: anchor is not None and "envs" in anchor and option(c, "envs") != anchor["envs"]),
        ("seeds", lambda c: str(option(c, "seeds")), lambda c: against("seeds", str),
         lambda c: anchor is not None and "seeds" in anchor and option(c, "seeds") != anchor["seeds"]),
        ("discount", lambda c: f"{option(c, 'gamma'):g}", lambda c: against("gamma", lambda v: f"{v:g}"),
         lambda c: anchor is not None and "gamma" in anchor and option(c, "gamma") != anchor["gamma"]),
        ("environment", environment, env_anchor,
         lambda c: env_anchor(c) is not None and option(c, "env").partition(":")[2] != env_anchor(c)),
        ("observations", lambda c: "normalised by a running mean and variance" if option(c, "normalize_obs")
         else "raw", lambda c: None, lambda c: False),
        ("rewards", lambda c: "scaled by the running deviation of the discounted return"
         if option(c, "scale_rewards") else "raw", lambda c: None, lambda c: False),
        *([] if anchor is None or "actions" not in anchor else [
            ("actions", actions, lambda c: ACTION_MAPS[anchor["actions"]],
             lambda c: dict(option(c, "env_args")).get("actions", "squash") != anchor["actions"])]),
        *([] if anchor is None or "agent" not in anchor else [
            ("agent", agent, lambda c: agent(anchor["agent"]), lambda c: agent_differs(c, anchor["agent"]))]),
    ]


def protocol_card(configs, anchor: dict | None, score: str = RAW_SCORE) -> str:
    """The card of the runs ``configs`` (``RLConfig`` or its options; ``seeds``: the seeds each row ran) against
    ``anchor`` (one of ``ANCHORS``' values, or ``None``: no published protocol to compare with), ``score``: how the
    table's score is normalised. Markdown: a title line, then one line an item, then the differences."""
    configs = list(configs)
    if not configs:
        raise ValueError("configs must name at least one configuration that ran, got none")
    title = "anchor: none (no published protocol for these tasks)" if anchor is None else f"anchor: {anchor['name']}"
    lines = [f"**Protocol** (generated from the configurations that ran; {title})", ""]
    differences = []
    for label, show, anchored, differs in _items(anchor):
        values = list(dict.fromkeys(show(c) for c in configs))
        theirs = list(dict.fromkeys(a for c in configs if differs(c) and (a := anchored(c)) is not None))
        if theirs:
            differences.append(label)
        lines.append(f"- {label}: {'; '.join(values)}" + (f" (anchor: {'; '.join(theirs)})" if theirs else ""))
    lines.append(f"- score normalisation: {score}")
    if anchor is not None and anchor.get("unmatched") and any(not agent_differs(c, anchor["agent"]) for c in configs):
        lines.append(f"- what no option matches: {'; '.join(anchor['unmatched'])}")
    if anchor is not None:
        lines.append(f"- differences from the anchor: {len(differences)}"
                     + (f" ({', '.join(differences)})" if differences else ""))
    return "\n".join(lines) + "\n"
