"""e-prop over a window that starts inside an episode (``rtrl.training.windows.CarriedWindow``,
``EPropWindow.carried_grad``, the cells' ``eprop_window_traces`` and ``eprop_window_carried``): the window takes in
the traces the steps before it left, adds what they owe its gradient (the boundary term) and hands on the traces
after it. The reference is the per-step rule as the trainer runs it (``TraceWindow`` over ``online(learned,
EProp())``: the factorised traces and a per-step ``jax.grad``), which shares no code with the window's backward
scans; in float64 the gradient, the traces and the carry agree to 1e-9 relative, window after window, on LIF and
ALIF networks (recurrent, refractory, per-neuron parameters), with the paper's readout (filtered spikes, the rate
regulariser), an episode starting inside each window at another step in each stream but the last.

Mutations tried by hand (each made a test below fail, then restored): the boundary term left out (also made on
purpose below); ``eps_a0``'s factor ``rho`` without ``- psi0 beta``; the filtered traces carried in without their
``decay``; the rows' filter ``P`` not multiplied by the leak at the start; the window's unit credit at its first
step instead of its last.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rtrl.methods import EProp
from rtrl.methods.eprop import EPropWindow
from rtrl.online import online
from rtrl.training.model import Readout, ReadoutModel
from rtrl.training.windows import CarriedWindow, TraceWindow
from test_eprop_window import CASES, SMALL_EVIDENCE, B, problem, relative, score, trainer_of

jax.config.update("jax_enable_x64", True)

O = 2


def windows(cell, decay=0.9, rate_weight=0.5, chunk=50):
    """The per-step rule's window and the carried window of ``cell`` with the paper's readout."""
    readout = Readout(decay, rate_weight, 0.05, 50)
    learned = readout.learned(cell)
    model = ReadoutModel.of(learned, O, readout)
    params = model.init(jax.random.PRNGKey(0), jnp.float64)
    params = {**params, "cell": {**params["cell"], "W": params["cell"]["W"] * 3.0}}  # enough spikes
    return (TraceWindow(online(learned, EProp()), readout, score, B),
            CarriedWindow(EPropWindow(chunk), online(learned, EProp()), model, score, B), params)


def mid_episode(cell, seed):
    """``problem``'s window with no episode starting at its first step: it starts inside one (in every stream), and
    in the last stream no episode starts inside it either (the traces carried in reach its end there)."""
    episodes, done = problem(cell, seed)
    return episodes, done.at[0].set(False).at[:, B - 1].set(False)


def run(cell, windows_of, seeds=(5, 0, 3)):
    """Both windows over consecutive windows, the first from zero traces; each window's gradients, memory and
    losses (the per-step rule's first)."""
    online_window, carried, params = windows_of
    memories = [online_window.init(params), carried.init(params)]
    steps = [jax.jit(lambda *a, w=w: w(*a)) for w in (online_window, carried)]
    results = []
    for seed in seeds:
        data = mid_episode(cell, seed)
        out = [step(params, memory, *data) for step, memory in zip(steps, memories, strict=True)]
        memories = [o[0] for o in out]
        results.append(out)
    return results


@pytest.mark.parametrize("name", sorted(CASES))
def test_windows_inside_episodes_are_the_per_step_rule(name):
    """Three windows in a row, each starting inside an episode, another episode starting inside it at a different
    step in the first streams (none in the last): gradient, traces, carry and losses are the per-step rule's."""
    cell = CASES[name]
    for k, (online_out, carried_out) in enumerate(run(cell, windows(cell))):
        assert relative(carried_out[1], online_out[1]) <= 1e-9, (k, relative(carried_out[1], online_out[1]))
        assert relative(carried_out[0].traces, online_out[0].traces) <= 1e-9, k
        jax.tree.map(np.testing.assert_array_equal, carried_out[0].carry, online_out[0].carry)
        np.testing.assert_allclose(carried_out[2], online_out[2], rtol=1e-12)
    traces = jax.tree.leaves(online_out[0].traces)
    assert all(float(jnp.abs(t).max()) > 0 for t in traces if t.size)  # every trace carried on is in play


@pytest.mark.parametrize(("decay", "rate_weight", "chunk"), [(0.0, 0.0, 50), (0.8, 0.0, 7), (0.0, 1.0, 1),
                                                             (0.9, 0.5, 500)])
def test_without_a_filter_or_the_regulariser_and_in_chunks_of_any_size(decay, rate_weight, chunk):
    """The spikes read as they are (no ``Filtered``), a filter alone, the regulariser alone; chunks of one step, of
    seven (a last one shorter), the window whole."""
    cell = CASES["alif_paper"]
    for online_out, carried_out in run(cell, windows(cell, decay, rate_weight, chunk), seeds=(5, 0)):
        assert relative(carried_out[1], online_out[1]) <= 1e-9, relative(carried_out[1], online_out[1])
        assert relative(carried_out[0].traces, online_out[0].traces) <= 1e-9


def test_the_boundary_term_is_what_the_carried_traces_owe():
    """Left out (the traces carried in taken as zero for the gradient), the second window's gradient is off by
    far: the term is not negligible here, so the tests above would catch its loss."""
    cell = CASES["alif_paper"]
    online_window, carried, params = windows(cell)
    first = online_window(params, online_window.init(params), *mid_episode(cell, 5))[0]
    data = mid_episode(cell, 0)
    reference = online_window(params, first, *data)[1]
    without = carried(params, first._replace(traces=jax.tree.map(jnp.zeros_like, first.traces)), *data)[1]
    assert relative(without, reference) > 1e-2, relative(without, reference)


@pytest.mark.parametrize("options", [{"update_every": SMALL_EVIDENCE.length // 2},
                                     {"update_every": 3 * SMALL_EVIDENCE.length // 2},
                                     {"stagger": True}], ids=["half", "one-and-a-half", "stagger"])
def test_a_trainer_with_windows_inside_episodes_trains_as_the_per_step_rule(options):
    """The trainer end to end (the paper's task at a small scale, its readout and regulariser, Adam): ``eprop`` takes
    the window (``CarriedWindow``) where its updates are not at multiples of the episode, or the streams are
    staggered, and after three updates leaves the parameters the per-step rule leaves."""
    reference, trainer = trainer_of(EProp(window=False), **options), trainer_of("eprop", **options)
    assert isinstance(reference.window, TraceWindow) and isinstance(trainer.window, CarriedWindow)
    assert isinstance(trainer.computed_by, EPropWindow)
    steps = 3 * trainer.update_every
    states = [t.train(t.init(), steps)[0] for t in (reference, trainer)]
    assert relative(states[1].params, states[0].params) <= 1e-9, relative(states[1].params, states[0].params)
    assert relative(states[1].memory.traces, states[0].memory.traces) <= 1e-9
