"""POPGym's tasks (Morad et al. 2023, the ``popgym`` package) in pure JAX: ``popgym:<Task><Easy|Medium|Hard>``.

Each task is a module with an ``Env`` subclass whose options are popgym's (the number of packs, ``k`` ...), set per
difficulty as popgym's ``<Task>Easy`` / ``Medium`` / ``Hard`` classes set them (``LEVELS``). The rules, the
observation (popgym's under ``gymnasium.spaces.flatten``), the rewards, the episode lengths and what ends an episode
(terminated, or truncated by popgym's time limit) are popgym's, checked step by step against popgym itself in
``tests/test_rl_envs_popgym_*.py``. Actions are integers in ``range(num_actions)``; where popgym's action space is
a grid (``MultiDiscrete([rows, cols])``: Battleship, MineSweeper), action ``a`` is the cell ``(a // cols, a % cols)``.
"""

from __future__ import annotations

from rtrl.rl.envs.base import Env
from rtrl.rl.envs.popgym.autoencode import Autoencode
from rtrl.rl.envs.popgym.battleship import Battleship
from rtrl.rl.envs.popgym.cartpole import PositionOnlyCartPole
from rtrl.rl.envs.popgym.concentration import Concentration
from rtrl.rl.envs.popgym.count_recall import CountRecall
from rtrl.rl.envs.popgym.higher_lower import HigherLower
from rtrl.rl.envs.popgym.minesweeper import MineSweeper
from rtrl.rl.envs.popgym.multiarmed_bandit import MultiarmedBandit
from rtrl.rl.envs.popgym.repeat_first import RepeatFirst
from rtrl.rl.envs.popgym.repeat_previous import RepeatPrevious

PREFIX = "popgym:"
LEVELS = ("Easy", "Medium", "Hard")

# task -> (its class, its options at Easy, Medium and Hard), as popgym's classes of those names set them
TASKS: dict[str, tuple[type[Env], tuple[dict, dict, dict]]] = {
    "RepeatPrevious": (RepeatPrevious, ({"decks": 1, "k": 4}, {"decks": 2, "k": 32}, {"decks": 3, "k": 64})),
    "RepeatFirst": (RepeatFirst, ({"decks": 1}, {"decks": 8}, {"decks": 16})),
    "CountRecall": (CountRecall, ({"decks": 1, "kind": "colors"}, {"decks": 2, "kind": "suits"},
                                  {"decks": 4, "kind": "ranks"})),
    "Autoencode": (Autoencode, ({"decks": 1}, {"decks": 2}, {"decks": 3})),
    "HigherLower": (HigherLower, ({"decks": 1}, {"decks": 2}, {"decks": 3})),
    "Concentration": (Concentration, ({"decks": 1, "kind": "colors"}, {"decks": 2, "kind": "colors"},
                                      {"decks": 1, "kind": "ranks"})),
    "MultiarmedBandit": (MultiarmedBandit, ({"arms": 10, "length": 200}, {"arms": 20, "length": 400},
                                            {"arms": 30, "length": 600})),
    "Battleship": (Battleship, ({"size": 8}, {"size": 10}, {"size": 12})),
    "MineSweeper": (MineSweeper, ({"size": 4, "mines": 2}, {"size": 6, "mines": 6}, {"size": 8, "mines": 10})),
    "PositionOnlyCartPole": (PositionOnlyCartPole, ({"length": 200}, {"length": 400}, {"length": 600})),
    "NoisyPositionOnlyCartPole": (PositionOnlyCartPole, ({"noise": 0.1}, {"noise": 0.2}, {"noise": 0.3})),
}
# task -> (lowest, optimal) episodic return: the ends of the scale on which Farr et al. 2026 (arXiv 2605.24709)
# normalise POPGym scores, ``(return - lowest) / (optimal - lowest)``: their scripts/plot_popgym.py
# (noahfarr/recurrent-streaming-rl, commit 1498db1), MINIMUM (default -1) and MAXIMUM, under our task names (theirs
# StatelessCartPole, NoisyStatelessCartPole, Minesweeper, MultiArmedBandit). The optimal returns of HigherLower,
# Concentration and MultiarmedBandit are below 1 (what the best policy expects, the cards or arms being random); the
# lowest of Battleship and MineSweeper below -1 (popgym's penalties for cells hit again); popgym scales the others'
# rewards into [-1, 1], the position-only CartPoles' into [0, 1]. Their figures are of the Easy level.
NORMALISATION: dict[str, tuple[float, float]] = {
    "RepeatPrevious": (-1.0, 1.0),
    "RepeatFirst": (-1.0, 1.0),
    "CountRecall": (-1.0, 1.0),
    "Autoencode": (-1.0, 1.0),
    "HigherLower": (-1.0, 0.507),
    "Concentration": (-1.0, 0.816),
    "MultiarmedBandit": (-1.0, 0.824),
    "Battleship": (-64 / 52, 1.0),
    "MineSweeper": (-13 / 24 - 0.5714285714285714, 1.0),
    "PositionOnlyCartPole": (0.0, 1.0),
    "NoisyPositionOnlyCartPole": (0.0, 1.0),
}


def normalise(task: str, value: float) -> float:
    """``value``, an episodic return of ``task`` (a key of ``TASKS``), on Farr et al.'s scale (``NORMALISATION``):
    0 the lowest return, 1 the optimal one; ``ValueError`` naming the task for one that is not a key."""
    if task not in NORMALISATION:
        raise ValueError(f"task must be one of {', '.join(NORMALISATION)} (a POPGym task, no level), got {task!r}")
    low, high = NORMALISATION[task]
    return (value - low) / (high - low)


NAMES = {task + level: (cls, options)
         for task, (cls, levels) in TASKS.items() for level, options in zip(LEVELS, levels, strict=True)}
EXPECTED = f"popgym:<Task><{'|'.join(LEVELS)}> with Task one of {', '.join(TASKS)}"


def is_popgym(name) -> bool:
    """Whether ``name`` asks for a jitted POPGym task (``popgym:...``), known or not."""
    return isinstance(name, str) and name.startswith(PREFIX)


def known(name) -> bool:
    return is_popgym(name) and name[len(PREFIX):] in NAMES


def popgym_env(name: str, **options) -> Env:
    """The task ``popgym:<Task><Level>`` with popgym's options for that level; ``ValueError`` (one line) for a name
    that is not one, or for options (the level sets them; build the task's class to choose others)."""
    if not known(name):
        raise ValueError(f"unknown environment {name!r}; expected {EXPECTED}")
    cls, settings = NAMES[name[len(PREFIX):]]
    if options:
        raise ValueError(f"environment {name!r} takes no options (its level sets {settings}; for others build "
                         f"rtrl.rl.envs.popgym.{cls.__name__} yourself), got {sorted(options)}")
    return cls(**settings)


__all__ = ["EXPECTED", "LEVELS", "NAMES", "NORMALISATION", "PREFIX", "TASKS", "Autoencode", "Battleship",
           "Concentration", "CountRecall", "HigherLower", "MineSweeper", "MultiarmedBandit", "PositionOnlyCartPole",
           "RepeatFirst", "RepeatPrevious", "is_popgym", "known", "normalise", "popgym_env"]
