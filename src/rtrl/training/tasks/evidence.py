"""Evidence accumulation (Bellec et al. 2020, Fig. 3, after Morcos & Harvey 2016): count left and right cues, decide
after a delay.

Input (3 channels: left, right, recall), one episode: ``cues`` cues, each on the left or the right channel (a fair
coin each) for ``cue_steps`` steps followed by ``gap`` silent steps; then ``delay`` silent steps; then the recall
channel is on for ``decision_steps`` steps, during which the target is the side that got more cues (0 left,
1 right; ``cues`` is odd, so there is no tie). Only the decision steps are scored. Two logits, softmax
cross-entropy. Metric: ``accuracy`` of the decision; chance 0.5 (the best answer ignoring the inputs). The cues
are spread over ``cues * (cue_steps + gap)`` steps and the answer comes ``delay`` steps later, so the network has to
keep a running count for longer than a membrane time constant.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from rtrl.checks import default_dtype
from rtrl.training.tasks.base import Classification, Episodes


def evidence_episode(sides: jax.Array, cue_steps: int, gap: int, delay: int, decision_steps: int, dtype) -> Episodes:
    """The episode for the given cue ``sides`` (0 left, 1 right), laid out as the module docstring says."""
    period = cue_steps + gap
    cue_length = sides.shape[0] * period
    t = jnp.arange(cue_length + delay + decision_steps)
    index = jnp.minimum(t // period, sides.shape[0] - 1)
    cueing = (t < cue_length) & (t % period < cue_steps)
    side = sides[index]
    deciding = t >= cue_length + delay
    xs = jnp.stack([cueing & (side == 0), cueing & (side == 1), deciding], axis=-1).astype(dtype)
    majority = (2 * jnp.sum(sides) > sides.shape[0]).astype(jnp.int32)
    return Episodes(xs, jnp.full(t.shape, majority), deciding.astype(dtype))


class Evidence(Classification):
    cues: int = 7
    cue_steps: int = 4
    gap: int = 4
    delay: int = 30
    decision_steps: int = 5

    name = "evidence"
    summary = "Count left and right cues; after a delay, say which side had more."
    input_size = 3
    output_size = 2

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.cues % 2 == 0:
            raise ValueError(f"cues must be odd (no tie between the sides), got {self.cues}")

    @property
    def length(self) -> int:
        return self.cues * (self.cue_steps + self.gap) + self.delay + self.decision_steps

    @property
    def chance(self) -> float:
        return 0.5

    def episode(self, key: jax.Array) -> Episodes:
        sides = (jax.random.uniform(key, (self.cues,)) < 0.5).astype(jnp.int32)
        return evidence_episode(sides, self.cue_steps, self.gap, self.delay, self.decision_steps, default_dtype())
