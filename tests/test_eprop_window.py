"""e-prop over a window (``rtrl.methods.eprop.EPropWindow``, the cells' ``eprop_window``): where a window's traces
start at zero, online e-prop's gradient summed over the window equals a forward scan, each step's credit through the
output, and backward scans of per-neuron vectors with one matrix product per parameter. The reference is the online
rule as the trainer runs it (``TraceWindow`` over ``online(learned, EProp())``: the factorised traces, a per-step
``jax.grad``), which shares no code with the window's filters; in float64 the two agree to 1e-9 relative on LIF and
ALIF networks (recurrent, refractory, the paper's triangle surrogate), with the filtered readout and the rate
regulariser, an episode starting inside the window at a different step in each stream, and a batch of 3.

Mutations tried by hand (each made a test below fail, then restored): the readout filter dropped from the credit
(``test_a_window_without_the_readout_filter_is_caught`` makes it on purpose); ALIF's ``lambda`` not cut at an
episode's start; the readout's filters not cut there; ``lambda`` recurring with ``rho`` only (no ``- psi beta``);
``P`` filtered without the leak; the adaptation's ``drop`` left out.
"""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import rtrl
from rtrl.capabilities import WindowEProp
from rtrl.cells import ALIF, LIF
from rtrl.methods import EProp
from rtrl.methods.eprop import EPropWindow
from rtrl.online import online
from rtrl.training.model import Filtered, Readout, ReadoutModel
from rtrl.training.tasks.base import Episodes
from rtrl.training.tasks.evidence_poisson import EvidencePoisson
from rtrl.training.trainer import Trainer
from rtrl.training.windows import CarriedWindow, SequenceWindow, TraceWindow

jax.config.update("jax_enable_x64", True)

TRIANGLE = {"surrogate": "triangle", "surrogate_scale": 1 / 0.6, "surrogate_height": 0.5, "threshold": 0.6}
CASES = {
    "lif_recurrent_refractory": LIF(4, 6, leak=0.9, recurrent=True, refractory=3, **TRIANGLE),
    "lif_plain": LIF(4, 6, leak=0.85),
    "alif_paper": ALIF(4, 6, leak=0.95, recurrent=True, lif_neurons=3, adaptation=0.5, adaptation_decay=0.99,
                       refractory=2, **TRIANGLE),
    "alif_per_neuron": ALIF(4, 6, leak=0.9, recurrent=True, adaptation=(0.2, 0.0, 0.5, 0.0, 0.3, 0.1),
                            adaptation_decay=(0.9, 0.95, 0.5, 0.99, 0.8, 0.7),
                            threshold=(1.0, 0.7, 1.3, 0.9, 1.1, 0.8), reset="none"),
}
T, B, O = 120, 3, 2


def score(outputs, targets, weights):
    """A squared error on the task's outputs where weighted, plus the regulariser's term (the last output)."""
    weighted = jnp.sum((outputs[..., :O] - targets) ** 2, axis=-1) * weights
    return weighted + outputs[..., -1], weighted


def problem(cell, seed=0):
    """Inputs with enough spikes, targets asked on some steps, an episode's start at step 0 of every stream and at
    another step inside the window in each."""
    keys = jax.random.split(jax.random.PRNGKey(seed), 4)
    xs = jnp.where(jax.random.uniform(keys[0], (T, B, cell.input_size)) < 0.3, 1.0, 0.0)
    xs = xs + 0.3 * jax.random.normal(keys[1], xs.shape)
    targets = jax.random.normal(keys[2], (T, B, O))
    weights = (jax.random.uniform(keys[3], (T, B)) < 0.3).astype(jnp.float64)
    done = jnp.zeros((T, B), bool).at[0].set(True).at[jnp.array([40, 75, 101]), jnp.arange(B)].set(True)
    return Episodes(xs, targets, weights), done


def windows(cell, decay=0.9, rate_weight=0.5, chunk=50):
    """The trainer's two windows of ``cell`` with the paper's readout: online e-prop and e-prop over the window (in
    chunks of ``chunk`` steps: by default two and a shorter last one)."""
    readout = Readout(decay, rate_weight, 0.05, 50)
    learned = readout.learned(cell)
    model = ReadoutModel.of(learned, O, readout)
    return (TraceWindow(online(learned, EProp()), readout, score, B),
            SequenceWindow(EPropWindow(chunk), model, score, B), model)


def params_of(model, seed=0):
    params = model.init(jax.random.PRNGKey(seed), jnp.float64)
    return {**params, "cell": {**params["cell"], "W": params["cell"]["W"] * 3.0}}  # enough spikes


def relative(a, b):
    return max(float(jnp.abs(x - y).max() / (jnp.abs(y).max() + 1e-300))
               for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True))


def both(cell, decay=0.9, rate_weight=0.5, started=False, chunk=50):
    """The two windows' gradients and losses on one window of ``problem``; ``started``: from the state a first
    window left (a carry and traces that the episode's start at step 0 zeroes)."""
    online_window, window, model = windows(cell, decay, rate_weight, chunk)
    params = params_of(model)
    episodes, done = problem(cell)
    memory, carry = online_window.init(params), window.init(params)
    if started:
        memory = online_window(params, memory, *problem(cell, seed=5))[0]
        carry = window(params, carry, *problem(cell, seed=5))[0]
    carry_online, g_online, losses_online, _ = jax.jit(lambda *a: online_window(*a))(params, memory, episodes, done)
    carry_window, g_window, losses_window, _ = jax.jit(lambda *a: window(*a))(params, carry, episodes, done)
    np.testing.assert_allclose(losses_window, losses_online, rtol=1e-12)
    jax.tree.map(np.testing.assert_array_equal, carry_window, carry_online.carry)
    return g_window, g_online, carry_online


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_window_is_online_eprop(name):
    """The paper's readout (filtered spikes, the rate regulariser) over LIF and ALIF networks: the window's gradient
    is online e-prop's, with an episode starting inside the window at another step in each stream."""
    cell = CASES[name]
    g_window, g_online, state = both(cell)
    spikes = state.carry["s"] if "s" in state.carry else state.carry["cell"]["s"]
    assert jnp.all(jnp.abs(g_online["cell"]["W"]).max(axis=0) > 0)
    assert relative(g_window, g_online) <= 1e-9, relative(g_window, g_online)
    assert spikes.shape == (B, cell.hidden_size)


def test_the_window_is_online_eprop_after_a_first_window():
    """From the carry and traces a first window left: the episode's start at the window's first step zeroes them."""
    g_window, g_online, _ = both(CASES["alif_paper"], started=True)
    assert relative(g_window, g_online) <= 1e-9, relative(g_window, g_online)


@pytest.mark.parametrize(("decay", "rate_weight"), [(0.0, 0.0), (0.8, 0.0), (0.0, 1.0)])
def test_the_window_without_a_filter_or_without_the_regulariser(decay, rate_weight):
    """The spikes read as they are (no ``Filtered``), a filter without the regulariser, the regulariser alone."""
    g_window, g_online, _ = both(CASES["alif_paper"], decay, rate_weight)
    assert relative(g_window, g_online) <= 1e-9, relative(g_window, g_online)


@pytest.mark.parametrize("chunk", [1, 7, 40, 120, 500])
def test_the_window_in_chunks_of_any_size(chunk):
    """Chunks of one step, chunks with a last one of a step, chunks that divide the window, the window whole, one
    chunk longer than the window: the same gradient, the backward state handed from chunk to chunk."""
    g_window, g_online, _ = both(CASES["alif_paper"], chunk=chunk)
    assert relative(g_window, g_online) <= 1e-9, relative(g_window, g_online)


def test_the_bare_cell_over_a_sequence_is_online_eprop():
    """``rtrl.sequence_grad`` of a bare cell under ``EPropWindow`` from a nonzero carry: online e-prop's, whose
    traces start at zero there too."""
    cell = CASES["alif_paper"]
    params = cell.init(jax.random.PRNGKey(0), jnp.float64)
    params = {**params, "W": params["W"] * 3.0}
    episodes, _ = problem(cell)
    carry = jax.tree.map(lambda a: a + 0.3, cell.initial_carry((B,), jnp.float64))
    carry = {**carry, "r": jnp.zeros_like(carry["r"]), "s": jnp.ones_like(carry["s"])}
    weights = jax.random.normal(jax.random.PRNGKey(9), (cell.hidden_size, O), jnp.float64)

    def loss(h, target):
        return jnp.sum(jnp.sin(h @ weights + target))

    loss_window, g_window = rtrl.sequence_grad(cell, params, episodes.xs, episodes.targets, loss, EPropWindow(), carry)
    loss_online, g_online = rtrl.sequence_grad(cell, params, episodes.xs, episodes.targets, loss, EProp(), carry)
    np.testing.assert_allclose(loss_window, loss_online, rtol=1e-12)
    assert relative(g_window, g_online) <= 1e-9, relative(g_window, g_online)


def test_a_window_without_the_readout_filter_is_caught():
    """A plausible bug, the readout's filter left off the credit (the credit on ``o`` taken as one on the spikes):
    the comparison with the online rule fails by far."""
    cell = CASES["alif_paper"]
    g_online = both(cell)[1]

    def unfiltered(self, params, carries, new_carries, xs, g_carries, starts, later=None):
        g_cell = {**g_carries["cell"], "s": g_carries["cell"]["s"] + (1 - self.decay) * g_carries["o"]
                  + g_carries["n"]}
        return self.cell.eprop_window(params, carries["cell"], new_carries["cell"], xs, g_cell, starts, later)

    original = Filtered.filtered_eprop_window
    try:
        Filtered.filtered_eprop_window = unfiltered
        g_window = both(cell)[0]
    finally:
        Filtered.filtered_eprop_window = original
    assert relative(g_window, g_online) > 1e-2, relative(g_window, g_online)


def test_which_cells_have_a_window():
    """The spiking cells whose e-prop factorises, and the readouts around them; ``eprop_window`` refuses the rest by
    name."""
    assert isinstance(CASES["alif_paper"], WindowEProp)
    assert isinstance(Filtered.of(CASES["alif_paper"], 0.9), WindowEProp)
    per_synapse = LIF(4, 6, leak=(0.9, 0.8, 0.95, 0.9, 0.7, 0.85), recurrent=True)
    assert not isinstance(per_synapse, WindowEProp)
    with pytest.raises(ValueError, match="method 'eprop_window' needs a cell with e-prop over a window"):
        rtrl.methods.resolve(EPropWindow(), per_synapse)
    with pytest.raises(ValueError, match="method 'eprop_window' needs"):
        EPropWindow().check(rtrl.cells.Elman(4, 6))
    with pytest.raises(ValueError, match="chunk"):
        EPropWindow(chunk=0)
    assert dataclasses.replace(CASES["lif_plain"]).eprop_window  # bound again on a copy


SMALL_EVIDENCE = EvidencePoisson(cues=1, cue_steps=10, spacing=15, episode_length=40, recall_steps=10, channels=2,
                                 rate=0.3)
SMALL_ALIF = ALIF(SMALL_EVIDENCE.input_size, 8, leak=0.95, recurrent=True, lif_neurons=4, adaptation=0.5,
                  adaptation_decay=0.99, refractory=2, **TRIANGLE)


def trainer_of(method, **options):
    return Trainer(SMALL_EVIDENCE, SMALL_ALIF, method, batch=3, readout_decay=0.9, rate_weight=0.5, rate_target=0.05,
                   **{"update_every": SMALL_EVIDENCE.length, **options})


@pytest.mark.parametrize("method", ["eprop", EPropWindow(chunk=16)])
def test_a_trainer_with_the_window_trains_as_online_eprop(method):
    """The trainer end to end (the paper's task at a small scale, its readout and regulariser, an update per trial,
    Adam): two updates with ``EPropWindow`` (which plain ``eprop`` uses there) leave the parameters that two updates
    of online e-prop's per-step traces leave."""
    length = SMALL_EVIDENCE.length
    reference, trainer = trainer_of(EProp(window=False)), trainer_of(method)
    assert isinstance(reference.window, TraceWindow) and isinstance(trainer.computed_by, EPropWindow)
    states = [t.train(t.init(), 2 * length)[0] for t in (reference, trainer)]
    first = jax.tree.leaves(trainer_of("eprop").init().params)
    moved = [float(jnp.abs(a - b).max()) for a, b in zip(jax.tree.leaves(states[0].params), first, strict=True)]
    assert min(moved) > 0  # every parameter learnt something
    assert relative(states[1].params, states[0].params) <= 1e-9, relative(states[1].params, states[0].params)


def test_plain_eprop_takes_the_window_but_for_a_window_of_one_step():
    """``eprop`` takes the window where every window starts an episode (``SequenceWindow``) and where a window can
    start inside one (an update more often than an episode, or not at a multiple of its length; staggered streams:
    ``CarriedWindow``, tests/test_eprop_carried.py); it keeps its per-step traces for an update every step, where
    asked (``window=False``), where the traces are rounded (``trace_dtype``) and on a cell without e-prop over a
    window."""
    length = SMALL_EVIDENCE.length
    assert isinstance(trainer_of("eprop", update_every=2 * length).window, SequenceWindow)
    for options in ({"update_every": length // 2}, {"update_every": 3 * length // 2}, {"stagger": True}):
        trainer = trainer_of("eprop", **options)
        assert isinstance(trainer.window, CarriedWindow) and isinstance(trainer.computed_by, EPropWindow), options
    assert isinstance(trainer_of("eprop", update_every=1).window, TraceWindow)
    assert isinstance(trainer_of(EProp(window=False)).window, TraceWindow)
    assert isinstance(trainer_of(EProp(trace_dtype="bfloat16")).window, TraceWindow)
    elman = Trainer(SMALL_EVIDENCE, rtrl.cells.Elman(SMALL_EVIDENCE.input_size, 4), "eprop", batch=2,
                    update_every=SMALL_EVIDENCE.length)
    assert isinstance(elman.window, TraceWindow) and elman.computed_by == EProp()
    with pytest.raises(TypeError, match="window must be True or False"):
        EProp(window="yes")


def test_the_method_is_named_eprop_window_and_refuses_a_cell_without_a_window():
    """``--method eprop_window`` is the window; the paper presets' rows ``alif-eprop-window`` are e-prop's rows with
    it (an update per trial); a cell without the hooks is refused by name, pointing at online ``eprop``."""
    from rtrl.training.assemble import assemble
    from rtrl.training.config import RunConfig
    from rtrl.training.presets import PRESETS

    assert rtrl.methods.resolve("eprop_window") == EPropWindow()
    for experiment in ("evidence-eprop-paper", "store-recall-eprop-paper"):
        window, online_row = (PRESETS[f"{experiment}/alif-eprop{s}"].options for s in ("-window", ""))
        assert window["method"] == "eprop_window" and window["update_every"] is None
        assert {k: v for k, v in window.items() if k not in ("method", "update_every")} == {
            k: v for k, v in online_row.items() if k not in ("method", "update_every")}
    with pytest.raises(ValueError, match="method 'eprop_window' needs a cell with e-prop over a window.*use 'eprop'"):
        assemble(RunConfig(cell="elstm", method="eprop_window"))
