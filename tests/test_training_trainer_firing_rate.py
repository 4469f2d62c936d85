"""A trainer of a spiking cell reports the firing rate of its held-out episodes; other cells report none.

The oracle steps the cell in a Python loop over the held-out inputs from a zero carry and averages its spikes.
Mutations tried: the rate taken over the readout's outputs instead of the spikes (caught: a different number);
the rate of the first step only (caught); the capability test inverted (caught by both tests).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from rtrl.capabilities import Spiking
from rtrl.cells import ALIF, LIF, Elman
from rtrl.training.tasks import Recall
from rtrl.training.trainer import Trainer


def looped_rate(cell, params, xs) -> float:
    carry = cell.initial_carry((xs.shape[1],), xs.dtype)
    spikes = []
    for x in xs:
        carry, h = cell.step(params, carry, x)
        spikes.append(np.asarray(h))
    return float(np.mean(spikes))


def test_a_spiking_cell_reports_its_firing_rate():
    task = Recall(delay=2, episode_length=6)
    for cell in (LIF(task.input_size, 5, threshold=0.3), ALIF(task.input_size, 5, recurrent=True, threshold=0.3)):
        assert isinstance(cell, Spiking)
        trainer = Trainer(task, cell, "rtrl", batch=2, eval_size=8)
        params = trainer.init().params
        # louder inputs, so that the neurons fire at a rate between none and always (else the test proves little)
        params = {**params, "cell": {**params["cell"], "W": 4.0 * params["cell"]["W"]}}
        rate = trainer.evaluate(params)["firing_rate"]
        expected = looped_rate(cell, params["cell"], jnp.asarray(trainer.eval_set.xs))
        assert 0.02 < expected < 0.98
        assert abs(rate - expected) < 1e-6


def test_other_cells_report_no_firing_rate():
    task = Recall(delay=2, episode_length=6)
    cell = Elman(task.input_size, 5)
    assert not isinstance(cell, Spiking)
    trainer = Trainer(task, cell, "rtrl", batch=2, eval_size=4)
    assert "firing_rate" not in trainer.evaluate(trainer.init().params)
    assert jax.tree.leaves(trainer.init().params)  # the trainer is real
