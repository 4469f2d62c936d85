"""The e-prop paper's readout (``rtrl.training.model``): the output low-pass filtered, ``o' = kappa o + (1 - kappa) h``,
read by ``y = o @ W + b``, and the firing-rate regulariser ``c sum_j (n_T,j / T - f)^2`` paid one telescoping term per
step; the filter and the count join the carry (``Filtered``), so exact methods still equal BPTT.

Oracles: the forward values by hand and in NumPy loops; BPTT (``jax.grad`` through the model's scan, the trainer's
``bptt`` window) for the exact methods; for e-prop, ``jax.grad`` of a LIF written out here whose reset passes no
gradient through the spike, read through the same filter and regulariser written out here.

Mutations tried by hand (each fails a test here): the filter without its ``1 - kappa`` gain (the hand case); the
regulariser's term without the previous count (``(n_t / T - f)^2`` alone: the hand case and the episode's sum);
e-prop's filtered trace not filtered (the ``o`` traces = the unfiltered ``e``: 0.62 relative error against the
oracle); the count's traces dropped from e-prop's contraction (0.13; the exact methods are unaffected).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from oracle import EXACT_TOL, fast_sigmoid_heaviside
from rtrl.cells import ALIF, LIF
from rtrl.compare import relative_error
from rtrl.training.config import RunConfig
from rtrl.training.model import Filtered, Readout, ReadoutModel
from rtrl.training.tasks import EvidencePoisson, stream_chunk
from rtrl.training.trainer import Trainer

TASK = EvidencePoisson(cues=1, cue_steps=3, spacing=4, episode_length=10, recall_steps=3, channels=1, rate=0.5)
T = TASK.length


def test_the_filtered_readout_and_the_regulariser_by_hand():
    """One LIF neuron, x = 1, W = 0.6, leak 0.9, threshold 1: spikes 0, 1, 0 (the reset subtracts one step late).
    kappa = 0.5: o = 0, 0.5, 0.25; n = 0, 1, 1; readout 2 o + 0.1 = 0.1, 1.1, 0.6. Regulariser c = 1, f = 0.2,
    T = 3: the terms are 0, (1/3 - 0.2)^2 - 0.2^2 = -0.0222..., 0; their sum is L_reg - f^2."""
    cell = Filtered.of(LIF(1, 1), 0.5)
    readout = Readout(decay=0.5, rate_weight=1.0, rate_target=0.2, trial=3)
    model = ReadoutModel.of(cell, 1, readout)
    params = {"cell": {"W": jnp.array([[0.6]]), "b": jnp.zeros(1)}, "readout": {"W": jnp.array([[2.0]]),
                                                                           "b": jnp.array([0.1])}}
    carry, outs = model.initial_carry(), []
    for _ in range(3):
        carry, y = model.step(params, carry, jnp.array([1.0, 0.0]))
        outs.append(np.asarray(y))
    np.testing.assert_allclose(np.array(outs), [[0.1, 0.0], [1.1, (1 / 3 - 0.2) ** 2 - 0.04], [0.6, 0.0]],
                               atol=1e-12)
    np.testing.assert_allclose(np.asarray(carry["o"]), [0.25])
    np.testing.assert_allclose(np.asarray(carry["n"]), [1.0])


def test_the_regulariser_terms_sum_to_the_episode_penalty():
    """Random spikes of 4 neurons over 50 steps (NumPy): the per-step terms sum to c sum_j (n_T,j/T - f)^2 - c N f^2,
    and the filter is the e-prop code's ``exp_convolve`` (a loop here)."""
    rng = np.random.default_rng(0)
    spikes = (rng.random((50, 4)) < 0.2).astype(float)
    kappa, c, f = 0.8, 0.7, 0.05
    readout = Readout(decay=kappa, rate_weight=c, rate_target=f, trial=50)
    o, filtered = np.zeros(4), []
    for s in spikes:
        o = kappa * o + (1 - kappa) * s
        filtered.append(o.copy())
    n = np.cumsum(spikes, axis=0)
    h = jnp.asarray(np.concatenate([np.array(filtered), spikes, n], axis=1))
    params = {"W": jnp.eye(4), "b": jnp.zeros(4)}
    out = np.asarray(readout(params, h))
    np.testing.assert_allclose(out[:, :4], np.array(filtered), atol=1e-12)
    penalty = c * np.sum((spikes.sum(0) / 50 - f) ** 2)
    np.testing.assert_allclose(out[:, 4].sum(), penalty - c * 4 * f**2, rtol=1e-12)


def window_grads(cell, method, steps, **readout):
    """The gradient of one window of ``steps`` steps (two episodes: a reset inside) from the first state, with
    louder parameters (so the neurons fire at a rate between none and always, asserted); and the firing rate."""
    trainer = Trainer(TASK, cell, method, batch=2, update_every=steps, **readout)
    state = trainer.init()
    params = jax.tree.map(lambda a: 3 * a if a.ndim == 2 else a + 0.1, state.params)
    episodes, done = stream_chunk(TASK, state.key, state.step, steps, trainer.offsets)
    grads = trainer.window(params, state.memory, episodes, done)[1]
    rate = float(trainer.spikes(params["cell"], episodes.xs, 2, jnp.float64).mean())
    return trainer, grads, rate


CASES = {
    "alif_paper": ALIF(4, 5, recurrent=True, lif_neurons=2, refractory=2, threshold=0.3, surrogate="triangle",
                       surrogate_scale=1 / 0.3, surrogate_height=1.0),
    "lif": LIF(4, 5, threshold=0.3),
    "lif_value": LIF(4, 3, threshold=0.3, reset="value", recurrent=True),
}
READOUT = {"readout_decay": 0.7, "rate_weight": 0.5, "rate_target": 0.1}


@pytest.mark.parametrize("name", sorted(CASES))
def test_exact_methods_equal_bptt_with_the_papers_readout(name):
    """``rtrl`` and ``auto`` (``diagonal`` without recurrent weights) on the cell with the filter and the count in
    its carry, against BPTT of the same model, over two episodes with a reset between them; and the regulariser
    changes the gradient (so it is in it)."""
    cell = CASES[name]
    _, reference, rate = window_grads(cell, "bptt", 2 * T, **READOUT)
    assert 0.05 < rate < 0.6, rate
    for method in ("rtrl", "auto"):
        trainer, grads, _ = window_grads(cell, method, 2 * T, **READOUT)
        assert relative_error(grads, reference) <= EXACT_TOL, (method, trainer.method.name)
    unregularised = window_grads(cell, "bptt", 2 * T, readout_decay=0.7)[1]
    assert relative_error(unregularised, reference) > 1e-3


def detached_lif_grads(cell, params, episodes, readout: dict, batch: int):
    """BPTT of a LIF written out here (reset by subtraction, passing no gradient through the spike; the fast-sigmoid
    surrogate), its spikes filtered and counted as the paper's readout, over one episode from zero: the gradient of
    sum_t mean_b [w CE(o W + b, target) + c sum_j ((n_t/T - f)^2 - (n_{t-1}/T - f)^2)]."""
    thr, leak = cell.threshold, cell.leak
    kappa, c, f = readout["readout_decay"], readout["rate_weight"], readout["rate_target"]
    heaviside = fast_sigmoid_heaviside(cell.surrogate_scale, cell.surrogate_height)

    def total(p):
        def body(carry, data):
            v, s, o, n = carry
            x, target, w = data
            d = leak * v + x @ p["cell"]["W"] + p["cell"]["b"] - thr * jax.lax.stop_gradient(s)
            s = heaviside(d - thr)
            o, n_before, n = kappa * o + (1 - kappa) * s, n, n + s
            y = o @ p["readout"]["W"] + p["readout"]["b"]
            ce = -jnp.take_along_axis(jax.nn.log_softmax(y), target[:, None], axis=1)[:, 0]
            reg = c * jnp.sum((n / T - f) ** 2 - (n_before / T - f) ** 2, axis=1)
            return (d, s, o, n), jnp.sum(w * ce + reg) / batch

        zero = jnp.zeros((batch, cell.hidden_size), jnp.float64)
        return jax.lax.scan(body, (zero,) * 4, (episodes.xs, episodes.targets, episodes.weights))[1].sum()

    return jax.grad(total)(params)


def test_eprop_with_the_papers_readout_is_the_detached_gradient():
    """Without recurrent weights e-prop with the filtered readout and the regulariser is the exact gradient of the same
    neurons with the reset detached: the filtered eligibility trace for the readout, the summed one for the count."""
    cell = LIF(4, 5, threshold=0.3)
    trainer = Trainer(TASK, cell, "eprop", batch=2, update_every=T, **READOUT)
    state = trainer.init()
    params = jax.tree.map(lambda a: 3 * a if a.ndim == 2 else a + 0.1, state.params)
    episodes, done = stream_chunk(TASK, state.key, state.step, T, trainer.offsets)
    eprop = trainer.window(params, state.memory, episodes, done)[1]
    oracle = detached_lif_grads(cell, params, episodes, READOUT, 2)
    assert relative_error(eprop, oracle) <= 1e-10
    exact = window_grads(cell, "bptt", T, **READOUT)[1]
    assert relative_error(eprop, exact) > 1e-3  # e-prop is not the exact gradient here


@pytest.mark.parametrize(("option", "value"), [("readout_decay", 1.0), ("readout_decay", -0.1),
                                               ("rate_weight", -1.0), ("rate_target", 1.5), ("rate_weight", "x")])
def test_bad_readout_options_are_refused_by_name(option, value):
    with pytest.raises(ValueError, match=option):
        RunConfig(**{option: value})


def test_closed_form_does_not_apply_to_the_filtered_cell():
    """The filter has no hand-derived traces: ``closed_form`` is refused (``auto`` picks ``diagonal`` instead)."""
    with pytest.raises(ValueError, match="closed"):
        Trainer(TASK, LIF(4, 3), "closed_form", readout_decay=0.5)
    assert Trainer(TASK, LIF(4, 3), "auto", readout_decay=0.5).method.name == "diagonal"
