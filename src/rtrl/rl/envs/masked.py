"""Observation masks of the POMDP literature: ``-P`` keeps the positions and hides the velocities, ``-V`` keeps the
velocities and hides the positions (Han et al. 2020, Ni et al. 2022; Farr et al. 2026 run their streaming agents on
the MuJoCo ones).

``MASKS[family][mask]`` is the tuple of observation indices kept, for an environment's default observation as
Gymnasium's v4/v5 documentation lays it out: MuJoCo's ``qpos`` part first (the x position, and Ant's y, excluded by
default), its ``qvel`` part after, Ant's contact forces last (hidden by both masks: they are neither, and follow from
the velocities' changes)::

    Hopper       11 = qpos[1:] 5 + qvel 6              P: 0..4     V: 5..10
    Walker2d     17 = qpos[1:] 8 + qvel 9              P: 0..7     V: 8..16
    HalfCheetah  17 = qpos[1:] 8 + qvel 9              P: 0..7     V: 8..16
    Ant          27 (v4) or 105 (v5) = qpos[2:] 13 + qvel 14 (+ v5's 78 contact forces)
                                                       P: 0..12    V: 13..26
    Pendulum      3 = cos theta, sin theta, theta dot  P: 0, 1     V: 2
    CartPole      4 = x, x dot, theta, theta dot       P: 0, 2     V: 1, 3

``keep_of(env_id, mask)`` finds the family from a Gymnasium ID (``Hopper-v5``, ``module:Hopper-v4``); any other Box
observation is masked by listing the indices to keep (``Masked(env, keep)`` for a jitted environment, the option
``keep`` of a ``gymnasium:ID`` one).
"""

from __future__ import annotations


def _span(start: int, stop: int) -> tuple[int, ...]:
    return tuple(range(start, stop))


MASKS: dict[str, dict[str, tuple[int, ...]]] = {
    "Hopper": {"P": _span(0, 5), "V": _span(5, 11)},
    "Walker2d": {"P": _span(0, 8), "V": _span(8, 17)},
    "HalfCheetah": {"P": _span(0, 8), "V": _span(8, 17)},
    "Ant": {"P": _span(0, 13), "V": _span(13, 27)},
    "Pendulum": {"P": (0, 1), "V": (2,)},
    "CartPole": {"P": (0, 2), "V": (1, 3)},
}
# The option that moves where the positions end (the x position, and Ant's y, in the observation or not): the masks
# hold for its default. Ant's contact-force options only append entries after the velocities.
LAYOUT_OPTION = "exclude_current_positions_from_observation"


def family(env_id: str) -> str:
    """``Hopper`` of ``Hopper-v5``, ``gymnasium_robotics:Hopper-v4`` or ``Hopper``."""
    return env_id.rpartition(":")[2].split("-v")[0]


def keep_of(env_id: str, mask: str, options: dict | None = None, where: str | None = None) -> tuple[int, ...]:
    """The observation indices that ``mask`` (``"P"``: velocities hidden, ``"V"``: positions hidden) keeps of the
    environment ``env_id``'s default observation; ``ValueError`` naming the option for a mask that is not ``P`` or
    ``V``, an environment of no known family, or the option that moves the positions (``LAYOUT_OPTION`` not
    true); ``where`` names the environment in the message (default: ``env_id``)."""
    where = where or f"environment {env_id!r}"
    if mask not in ("P", "V"):
        raise ValueError(f"{where}: option mask must be P (velocities hidden) or V (positions "
                         f"hidden), got {mask!r}")
    name = family(env_id)
    if name not in MASKS:
        raise ValueError(f"{where}: option mask is defined for {sorted(MASKS)}; for another Box "
                         "observation give the indices to keep (option keep, e.g. keep=0,1)")
    if (options or {}).get(LAYOUT_OPTION, True) is not True:
        raise ValueError(f"{where}: option mask assumes the default observation, and "
                         f"{LAYOUT_OPTION}=false changes it; give the indices to keep instead (option keep)")
    return MASKS[name][mask]


def check_keep(keep, size: int, where: str) -> tuple[int, ...]:
    """``keep`` as a tuple of distinct observation indices in ``[0, size)``, else ``ValueError`` naming the option."""
    if (isinstance(keep, (str, bytes)) or not hasattr(keep, "__iter__")
            or not (keep := tuple(keep)) or len(set(keep)) != len(keep)
            or any(isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < size for i in keep)):
        raise ValueError(f"{where}: option keep must be a non-empty list of distinct observation indices in "
                         f"[0, {size}), got {keep!r}")
    return keep
