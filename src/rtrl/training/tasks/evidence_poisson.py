"""Evidence accumulation as the e-prop paper lays it out (Bellec et al. 2020, Fig. 3; the official code's
``tools.generate_click_task_data`` and ``tutorial_evidence_accumulation_with_alif.py``), one step = 1 ms.

Input: ``4 * channels`` Poisson spike trains (each step a spike with the given probability), in four groups of
``channels``: left, right, recall, background. One episode of ``episode_length`` steps:

* the likely side is left or right (a fair coin); each of the ``cues`` cues is on the likely side with probability
  ``1 - side_probability`` (0.7), else on the other side;
* cue ``k`` lights its side's group at ``rate`` for ``cue_steps`` steps from step ``(spacing - cue_steps) +
  k * spacing`` (the first cue after a silence of ``spacing - cue_steps``, as the official code);
* the recall group fires at ``rate`` over the last ``recall_steps`` steps, the background group at ``rate / 4``
  throughout; every other channel is silent.

Target: the side that got more cues (0 left, 1 right; ``cues`` is odd), scored at every step of the recall window
(softmax cross-entropy). Metric: ``accuracy`` over the recall window's steps (the paper scores the mean of the
logits over the window, one decision per episode); chance 0.5: by the left/right symmetry of the draw, each label
has probability 1/2. Defaults: the paper's 40 channels, 7 cues of 100 ms spaced 150 ms, 40 Hz, trials of 2,250 ms
with a 150 ms recall window (the answer comes 1,200 ms after the last cue's start).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from rtrl.cells.spiking import set_number
from rtrl.checks import default_dtype
from rtrl.training.tasks.base import Classification, Episodes

GROUPS = 4  # left, right, recall, background


def evidence_sides(u: jax.Array, side_probability: float) -> jax.Array:
    """The cue sides (0 left, 1 right) from ``1 + cues`` uniforms: ``u[0]`` picks the likely side, each later one
    puts its cue there with probability ``1 - side_probability``."""
    likely = (u[0] < 0.5).astype(jnp.int32)
    return jnp.where(u[1:] < 1.0 - side_probability, likely, 1 - likely)


def evidence_rates(sides: jax.Array, task: EvidencePoisson) -> jax.Array:
    """``(episode_length, 4 * channels)``: each channel's spike probability per step, laid out as the module
    docstring says, for the cue ``sides``."""
    t = jnp.arange(task.episode_length)[:, None]
    group = jnp.arange(GROUPS * task.channels)[None, :] // task.channels
    offset = t - (task.spacing - task.cue_steps)
    index = jnp.clip(offset // task.spacing, 0, task.cues - 1)
    cueing = (offset >= 0) & (offset < task.cues * task.spacing) & (offset % task.spacing < task.cue_steps)
    recalling = t >= task.episode_length - task.recall_steps
    on = (cueing & (group == sides[index])) | (recalling & (group == 2))
    return jnp.where(on, task.rate, jnp.where(group == 3, task.rate / 4, 0.0))


class EvidencePoisson(Classification):
    cues: int = 7
    cue_steps: int = 100
    spacing: int = 150
    episode_length: int = 2250
    recall_steps: int = 150
    channels: int = 10
    rate: float = 0.04
    side_probability: float = 0.3

    name = "evidence_poisson"
    summary = ("The e-prop paper's evidence accumulation: Poisson cues on the left or right channels; after a "
               "delay, say which side had more.")
    output_size = 2

    def __post_init__(self) -> None:
        super().__post_init__()
        set_number(self, "rate", 0.0, 1.0, open_high=False)
        set_number(self, "side_probability", 0.0, 0.5, open_low=False, open_high=False)
        if self.cues % 2 == 0:
            raise ValueError(f"cues must be odd (no tie between the sides), got {self.cues}")
        if self.cue_steps > self.spacing:
            raise ValueError(f"cue_steps must be at most spacing ({self.spacing}), got {self.cue_steps}")
        last_cue_end = self.spacing - self.cue_steps + (self.cues - 1) * self.spacing + self.cue_steps
        if last_cue_end > self.episode_length - self.recall_steps:
            raise ValueError(f"episode_length must leave room for the cues (until step {last_cue_end}) and the "
                             f"recall window ({self.recall_steps} steps), got {self.episode_length}")

    @property
    def input_size(self) -> int:
        return GROUPS * self.channels

    @property
    def length(self) -> int:
        return self.episode_length

    @property
    def chance(self) -> float:
        return 0.5

    def episode(self, key: jax.Array) -> Episodes:
        u = jax.random.uniform(key, (1 + self.cues + self.length * self.input_size,))
        sides = evidence_sides(u[: 1 + self.cues], self.side_probability)
        rates = evidence_rates(sides, self)
        dtype = default_dtype()
        xs = (u[1 + self.cues:].reshape(rates.shape) < rates).astype(dtype)
        majority = (2 * jnp.sum(sides) > self.cues).astype(jnp.int32)
        recalling = jnp.arange(self.length) >= self.length - self.recall_steps
        return Episodes(xs, jnp.full((self.length,), majority), recalling.astype(dtype))
