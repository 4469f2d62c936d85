"""The firing-rate regulariser's two forms (``rtrl train --rate-form``, ``rtrl.training.model.Readout``): ``trial``
squares each stream's rate over its episode and averages over the streams, ``mean_b c sum_j (r_b,j - f)^2``;
``batch`` (the e-prop paper's code) squares the streams' mean rate, ``c sum_j (mean_b r_b,j - f)^2``, and so does not
pay for the spread of the rates across the streams.

Oracles, written here and sharing no code with the trainer: the regulariser's per-step terms by hand on two streams;
``jax.grad`` through ``lax.scan`` of each episode's whole objective (the cell's own step, the filter, the count, the
cross-entropy and the penalty of the episode's final counts, not telescoped); for e-prop, the same objective over a
LIF written out here whose reset passes no gradient through the spike (what e-prop is exact for).

Mutations tried by hand (each fails a test here): the batch form's counts not averaged (``rate_counts`` returning
each stream's: the hand case and every batch-form gradient); ``check_streams`` not called by ``assemble`` (the
stagger test); ``rate_form`` left out of ``ADDED_KEYS`` (the old config.json).
"""

import json
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from oracle import EXACT_TOL, fast_sigmoid_heaviside
from rtrl.cells import ALIF, LIF
from rtrl.cli import parser
from rtrl.compare import relative_error
from rtrl.methods import EProp
from rtrl.run.options import assembled, config_from_args
from rtrl.run.usage import UsageError
from rtrl.training.assemble import assemble
from rtrl.training.config import RunConfig
from rtrl.training.model import Readout
from rtrl.training.tasks import EvidencePoisson, stream_chunk
from rtrl.training.trainer import Trainer

TASK = EvidencePoisson(cues=1, cue_steps=3, spacing=4, episode_length=10, recall_steps=3, channels=1, rate=0.5)
T, B = TASK.length, 3
KAPPA, C, F = 0.7, 0.5, 0.1
READOUT = {"readout_decay": KAPPA, "rate_weight": C, "rate_target": F}


# -- by hand -----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("form", "penalty"), [("batch", 0.0), ("trial", 0.01)])
def test_two_streams_at_rates_a_tenth_and_three_tenths_against_a_target_of_two_tenths(form, penalty):
    """One neuron, T = 10, c = 1, f = 0.2: stream 0 fires once (rate 0.1), stream 1 three times (0.3). Their mean
    rate is the target, so the batch form's penalty is 0; the trial form's is ((0.1 - 0.2)^2 + (0.3 - 0.2)^2) / 2 =
    0.01. The per-step terms (the readout's last output, averaged over the streams as the trainer's objective does)
    sum to the penalty less c N f^2 = 0.04."""
    spikes = np.zeros((10, 2, 1))
    spikes[4, 0] = spikes[[1, 5, 8], 1] = 1.0
    h = np.concatenate([np.zeros_like(spikes), spikes, np.cumsum(spikes, axis=0)], axis=-1)  # [o, s, n] per step
    readout = Readout(decay=0.0, rate_weight=1.0, rate_target=0.2, trial=10, rate_form=form)
    params = {"W": jnp.ones((1, 1)), "b": jnp.zeros(1)}
    terms = np.array([np.asarray(readout(params, jnp.asarray(step)))[:, -1] for step in h])  # (10 steps, 2 streams)
    np.testing.assert_allclose(terms.mean(axis=1).sum() + 0.2**2, penalty, atol=1e-15)
    if form == "batch":  # the batch's term, the same in every stream
        np.testing.assert_array_equal(terms[:, 0], terms[:, 1])


# -- the gradient against BPTT of the whole objective ------------------------------------------------------------
def cross_entropy(y, target):
    return -jnp.take_along_axis(jax.nn.log_softmax(y), target[:, None], axis=1)[:, 0]


def penalty(n, form):
    """The regulariser of an episode's final counts ``n`` (B, N): the streams' mean rate squared, or each stream's."""
    rates = n / T
    if form == "batch":
        return C * jnp.sum((rates.mean(axis=0) - F) ** 2)
    return C * jnp.mean(jnp.sum((rates - F) ** 2, axis=1))


def oracle_grads(step, initial, params, episodes, form):
    """``jax.grad`` of ``sum over episodes [sum_t mean_b w CE(o_t W + b, target) + penalty(n_T)]``, each episode
    from the zero carry ``initial`` (B streams): ``step(cell_params, carry, x) -> (carry, spikes)``, the spikes
    filtered (``o``) and counted (``n``)."""

    def episode(p, xs, targets, weights):
        def body(carry, data):
            inner, o, n = carry
            x, target, w = data
            inner, s = step(p["cell"], inner, x)
            o, n = KAPPA * o + (1 - KAPPA) * s, n + s
            y = o @ p["readout"]["W"] + p["readout"]["b"]
            return (inner, o, n), jnp.mean(w * cross_entropy(y, target))

        zero = jnp.zeros((B, p["readout"]["W"].shape[0]), jnp.float64)
        (_, _, n), losses = jax.lax.scan(body, (initial, zero, zero), (xs, targets, weights))
        return losses.sum() + penalty(n, form)

    def total(p):
        return sum(episode(p, *(a[e * T:(e + 1) * T] for a in (episodes.xs, episodes.targets, episodes.weights)))
                   for e in range(len(episodes.xs) // T))

    return jax.grad(total)(params)


def trainer_grads(cell, method, k, form="batch", episodes=2):
    """The trainer's gradient of ``episodes`` whole episodes from its first state, taken ``k`` steps a window (the
    windows' gradients summed, the parameters held), with louder parameters (the neurons fire at a rate between none
    and always, asserted); and the parameters and the data."""
    trainer = Trainer(TASK, cell, method, batch=B, update_every=k, rate_form=form, **READOUT)
    state = trainer.init()
    params = jax.tree.map(lambda a: 3 * a if a.ndim == 2 else a + 0.1, state.params)
    data, done = stream_chunk(TASK, state.key, state.step, episodes * T, trainer.offsets)
    window, memory, grads = jax.jit(lambda *a: trainer.window(*a)), state.memory, None
    for start in range(0, episodes * T, k):
        memory, g, _, _ = window(params, memory, *jax.tree.map(lambda a, s=start: a[s:s + k], (data, done)))
        grads = g if grads is None else jax.tree.map(jnp.add, grads, g)
    rate = float(trainer.spikes(params["cell"], data.xs, B, jnp.float64).mean())
    assert 0.05 < rate < 0.6, rate
    return grads, params, data


ALIF_PAPER = ALIF(4, 5, recurrent=True, lif_neurons=2, refractory=2, threshold=0.3, surrogate="triangle",
                  surrogate_scale=1 / 0.3, surrogate_height=1.0)
PLAIN_LIF = LIF(4, 5, threshold=0.3)
# every exact method that the regulariser's cell (Filtered) takes: closed_form does not apply to it (no
# hand-derived traces: tests/test_training_model_readout.py), diagonal only without recurrent weights
EXACT = [(ALIF_PAPER, "bptt", 2 * T), (ALIF_PAPER, "rtrl", 2 * T), (ALIF_PAPER, "rtrl", 1), (ALIF_PAPER, "auto", 1),
         (PLAIN_LIF, "bptt", T), (PLAIN_LIF, "rtrl", 3), (PLAIN_LIF, "diagonal", 1), (PLAIN_LIF, "auto", 2 * T)]


@pytest.mark.parametrize(("cell", "method", "k"), EXACT, ids=[f"{c.name}-{m}-k{k}" for c, m, k in EXACT])
def test_exact_methods_give_the_batch_forms_gradient(cell, method, k):
    """Over two episodes (a reset between them), whole windows or fully online (k = 1: one step a window, the traces
    carried on) or windows that cut an episode (k = 3): the trainer's gradient is ``jax.grad`` of the batch form's
    objective to 1e-9 in float64."""
    grads, params, data = trainer_grads(cell, method, k)
    reference = oracle_grads(cell.step, cell.initial_carry((B,), jnp.float64), params, data, "batch")
    assert relative_error(grads, reference) <= EXACT_TOL


def test_the_trial_form_is_the_oracles_trial_form_and_the_forms_differ():
    """The default (``trial``) through the same oracle, whose two forms differ in the penalty alone; here their
    gradients differ (so the batch form's tests above tell the two apart)."""
    grads, params, data = trainer_grads(ALIF_PAPER, "rtrl", 2 * T, form="trial")
    initial = ALIF_PAPER.initial_carry((B,), jnp.float64)
    reference = oracle_grads(ALIF_PAPER.step, initial, params, data, "trial")
    assert relative_error(grads, reference) <= EXACT_TOL
    assert relative_error(oracle_grads(ALIF_PAPER.step, initial, params, data, "batch"), reference) > 1e-3


def detached_lif_step(cell):
    """``PLAIN_LIF``'s step written out (reset by subtraction one step late, the fast-sigmoid surrogate) with the
    reset passing no gradient through the spike: the neurons e-prop is exact for."""
    heaviside = fast_sigmoid_heaviside(cell.surrogate_scale, cell.surrogate_height)

    def step(p, carry, x):
        v, s = carry
        v = cell.leak * v + x @ p["W"] + p["b"] - cell.threshold * jax.lax.stop_gradient(s)
        s = heaviside(v - cell.threshold)
        return (v, s), s

    return step


@pytest.mark.parametrize(("window", "k"), [(True, T), (False, T), (True, 3)],
                         ids=["over-the-window", "per-step-traces", "windows-inside-episodes"])
def test_eprop_gives_the_batch_forms_gradient_of_the_detached_neurons(window, k):
    """Without recurrent weights, e-prop (over the window, online with per-step traces, or over windows of 3 steps
    that start inside episodes, the traces carried from window to window) with the batch form is the exact gradient
    of the same neurons with the reset detached."""
    grads, params, data = trainer_grads(PLAIN_LIF, EProp(window=window), k)
    zero = jnp.zeros((B, PLAIN_LIF.hidden_size), jnp.float64)
    reference = oracle_grads(detached_lif_step(PLAIN_LIF), (zero, zero), params, data, "batch")
    assert relative_error(grads, reference) <= EXACT_TOL


# -- the option --------------------------------------------------------------------------------------------------
def test_the_flag_reaches_the_config_and_trial_is_the_default():
    assert config_from_args(parser().parse_args(["train", "--out", "x"])).rate_form == "trial"
    config = config_from_args(parser().parse_args(["train", "--rate-form", "batch", "--rate-weight", "1", "--out",
                                                   "x"]))
    assert config == RunConfig(rate_form="batch", rate_weight=1.0)
    assert assemble(config.replace(rate_weight=1.0, readout_decay=0.5)).trainer().readout.rate_form == "batch"


def test_a_bad_form_is_refused_naming_the_flag():
    with pytest.raises(UsageError, match=re.escape("argument --rate-form: must be one of ['batch', 'trial'], got "
                                                   "'mean'")):
        parser().parse_args(["train", "--rate-form", "mean", "--out", "x"])
    with pytest.raises(ValueError, match="rate_form must be one of"):
        RunConfig(rate_form="mean")


def test_the_batch_form_with_staggered_streams_is_refused_naming_the_flag():
    """Staggered streams start their episodes at different steps, so the batch's mean count mixes episodes: refused
    before anything is built, naming --rate-form; the trial form is not."""
    config = RunConfig(stagger=True, rate_form="batch", rate_weight=1.0)
    with pytest.raises(UsageError, match="argument --rate-form: .*stagger"):
        assembled(assemble, config)
    with pytest.raises(ValueError, match="rate_form 'batch'"):
        Trainer(TASK, PLAIN_LIF, "rtrl", stagger=True, rate_form="batch", rate_weight=1.0)
    assemble(config.replace(rate_form="trial"))


def test_the_regulariser_s_shape_without_the_regulariser_is_refused_naming_the_flag():
    """``--rate-target`` and ``--rate-form`` do nothing where ``--rate-weight`` is 0 (the regulariser off): refused,
    the first one given named; at their defaults they pass, and ``config.json`` leaves them out. [Mutation,
    killed: ``never_read_options`` naming ``rate_target`` alone -> ``--rate-form batch`` passes.]"""
    for argv, flag in ((["--rate-target", "0.02"], "--rate-target"), (["--rate-form", "batch"], "--rate-form"),
                       (["--rate-form", "batch", "--rate-target", "0.02"], "--rate-target")):
        with pytest.raises(UsageError, match=f"argument {flag}: .*firing-rate regulariser, which rate_weight 0 "
                                             "turns off"):
            config_from_args(parser().parse_args(["train", *argv, "--out", "x"]))
    with pytest.raises(ValueError, match="rate_form shapes the firing-rate regulariser"):
        RunConfig(rate_form="batch")
    assert "rate_form" not in RunConfig().stored() and "rate_target" not in RunConfig().stored()
    assert RunConfig(rate_weight=0.5, rate_form="batch").stored()["rate_form"] == "batch"


def test_a_config_json_with_the_regulariser_s_shape_but_not_the_regulariser_loads_at_its_defaults():
    """A run folder written before the refusal (``--rate-target`` given, the regulariser off) reads back, the run
    it configures the same; a file we did not write (``complete`` false) is refused."""
    data = {**json.loads(json.dumps(RunConfig().to_dict())), "rate_target": 0.05, "rate_form": "batch"}
    assert RunConfig.from_dict(data, where="runs/old/config.json", complete=True) == RunConfig()
    with pytest.raises(ValueError, match="runs/new.json: rate_target and rate_form shape"):
        RunConfig.from_dict(data, where="runs/new.json")


def test_a_config_json_without_rate_form_loads_as_trial():
    """A run folder written before the option: its config.json has every other option."""
    data = json.loads(json.dumps(RunConfig(rate_weight=1.0).to_dict()))
    del data["rate_form"]
    config = RunConfig.from_dict(data, where="runs/old/config.json", complete=True)
    assert config.rate_form == "trial" and config.rate_weight == 1.0
