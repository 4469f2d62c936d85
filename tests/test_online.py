"""The online step: jax.grad of per-step losses gives the method's gradient, readouts are exact, resets reset."""

import jax
import jax.numpy as jnp
import optax
import pytest
from jax import lax

import rtrl
from oracle import EXACT_TOL, random_carry, random_problem, squared_error
from rtrl.capabilities import HasOutput
from rtrl.compare import relative_error
from rtrl.online import steps_per_body

EXACT = ["rtrl", "closed_form"]


def readout_loss(h, V, y):
    return jnp.sum((h @ V - y) ** 2)


def bptt_with_readout(cell, params, xs, ys, carry):
    """The oracle: jax.grad through lax.scan of the cell and a linear readout."""

    def total(p):
        def body(c, xy):
            c, h = cell.step(p["cell"], c, xy[0])
            return c, readout_loss(h, p["V"], xy[1])

        return lax.scan(body, carry, (xs, ys))[1].sum()

    return jax.grad(total)(params)


def online_with_readout(learner, params, xs, ys, state):
    """Sum of per-step jax.grads through learner.step, in a jitted scan."""

    @jax.jit
    def run(params, state, xs, ys):
        def body(acc, xy):
            state, grads = acc

            def step_loss(p):
                h, next_state = learner.step(p["cell"], state, xy[0])
                return readout_loss(h, p["V"], xy[1]), next_state

            g, state = jax.grad(step_loss, has_aux=True)(params)
            return (state, jax.tree.map(jnp.add, grads, g)), None

        return lax.scan(body, (state, jax.tree.map(jnp.zeros_like, params)), (xs, ys))[0]

    return run(params, state, xs, ys)


@pytest.mark.parametrize("method", EXACT)
@pytest.mark.parametrize("T", [1, 2, 17])
@pytest.mark.parametrize("batch_shape", [(), (3,)])
def test_per_step_grads_with_a_readout_equal_bptt(method, T, batch_shape):
    cell = rtrl.cells.Elman(3, 5)
    cell_params, xs, _ = random_problem(cell, T, batch_shape, seed=T)
    ys = jax.random.normal(jax.random.PRNGKey(9), (T, *batch_shape, 2))
    params = {"cell": cell_params, "V": jax.random.normal(jax.random.PRNGKey(8), (5, 2))}
    carry = random_carry(cell, batch_shape, seed=4)
    learner = rtrl.online(cell, method)
    _, grads = online_with_readout(learner, params, xs, ys, learner.init(cell_params, carry=carry))
    assert relative_error(grads, bptt_with_readout(cell, params, xs, ys, carry)) <= EXACT_TOL


@pytest.mark.parametrize("method", EXACT)
def test_streaming_across_calls_equals_one_long_sequence(method):
    """Traces carried from one call to the next: two halves give the gradient of the whole."""
    cell = rtrl.cells.Elman(2, 4)
    params, xs, ys = random_problem(cell, 12, (2,), seed=11)
    learner = rtrl.online(cell, method)
    state = learner.init(params, batch_shape=(2,))
    loss_a, g_a, state = rtrl.stream_grad(learner, params, state, xs[:5], ys[:5], squared_error)
    loss_b, g_b, _ = rtrl.stream_grad(learner, params, state, xs[5:], ys[5:], squared_error)
    loss, g = rtrl.sequence_grad(cell, params, xs, ys, squared_error, method="bptt")
    assert abs(float(loss_a + loss_b - loss)) <= EXACT_TOL * abs(float(loss))
    assert relative_error(jax.tree.map(jnp.add, g_a, g_b), g) <= EXACT_TOL


@pytest.mark.parametrize("method", EXACT)
def test_reset_zeroes_carry_and_traces_of_the_done_streams_only(method):
    cell = rtrl.cells.Elman(2, 3)
    params, xs, ys = random_problem(cell, 6, (3,), seed=2)
    learner = rtrl.online(cell, method)
    state = learner.init(params, batch_shape=(3,))
    _, _, state = rtrl.stream_grad(learner, params, state, xs, ys, squared_error)
    done = jnp.array([True, False, True])
    after = learner.reset(state, done)
    for before_leaf, after_leaf in zip(jax.tree.leaves(state), jax.tree.leaves(after), strict=True):
        assert jnp.all(after_leaf[done] == 0)
        assert jnp.array_equal(after_leaf[~done], before_leaf[~done])
        assert jnp.any(before_leaf[done] != 0)  # there was something to reset


@pytest.mark.parametrize("method", EXACT)
def test_after_a_reset_the_gradient_is_that_of_a_fresh_sequence(method):
    cell = rtrl.cells.Elman(2, 4)
    params, xs, ys = random_problem(cell, 10, (2,), seed=5)
    learner = rtrl.online(cell, method)
    state = learner.init(params, batch_shape=(2,))
    _, _, state = rtrl.stream_grad(learner, params, state, xs[:6], ys[:6], squared_error)
    state = learner.reset(state, jnp.array([True, True]))
    _, g, _ = rtrl.stream_grad(learner, params, state, xs[6:], ys[6:], squared_error)
    _, g_ref = rtrl.sequence_grad(cell, params, xs[6:], ys[6:], squared_error, method="bptt")
    assert relative_error(g, g_ref) <= EXACT_TOL


def test_online_updates_after_every_step_match_a_hand_written_reference():
    """Fully online learning: optax after every step, traces carried across updates (as RTRL prescribes).

    The reference calls the cell's closed-form trace functions by hand, without the online step."""
    cell = rtrl.cells.Elman(2, 3)
    params, xs, ys = random_problem(cell, 8, (), seed=6)
    opt = optax.sgd(0.1)
    learner = rtrl.online(cell, "rtrl")
    state, opt_state, p = learner.init(params), opt.init(params), params
    ref_state, ref_p = rtrl.online(cell, "closed_form").init(params), params
    for x, y in zip(xs, ys, strict=True):
        g = jax.grad(lambda q, s=state, x=x, y=y: squared_error(learner.step(q, s, x)[0], y))(p)
        _, state = learner.step(p, state, x)
        updates, opt_state = opt.update(g, opt_state)
        p = optax.apply_updates(p, updates)
        # the same update from the closed-form traces
        h, next_ref = cell.step(ref_p, ref_state.carry, x)
        credit = jax.grad(lambda c, x=x, y=y, q=ref_p: squared_error(cell.step(q, c, x)[1], y))(ref_state.carry)
        immediate = jax.grad(lambda q, c=ref_state.carry, x=x, y=y: squared_error(cell.step(q, c, x)[1], y))(ref_p)
        traced = cell.trace_contract(ref_p, ref_state.traces, credit)
        ref_traces = cell.trace_update(ref_p, ref_state.carry, ref_state.traces, x)
        ref_p = jax.tree.map(lambda q, a, b: q - 0.1 * (a + b), ref_p, immediate, traced)
        ref_state = rtrl.OnlineState(next_ref, ref_traces)
    assert relative_error(p, ref_p) <= EXACT_TOL
    assert relative_error(p, params) > 1e-3  # it did learn something


STEP_CELLS = [rtrl.cells.Elman(3, 4), rtrl.cells.GRU(3, 4), rtrl.cells.ELSTM(3, 4), rtrl.cells.IIR2(3, 4),
              rtrl.cells.AdaptiveIIR2(3, 4, parameterisation="stable"),
              rtrl.cells.Stack((rtrl.cells.ELSTM(3, 4), rtrl.cells.Elman(4, 4)))]


@pytest.mark.parametrize("cell", [c for c in STEP_CELLS if isinstance(c, HasOutput)], ids=lambda c: c.name)
def test_output_is_h_of_the_new_carry(cell):
    params, xs, _ = random_problem(cell, 1, (2,), seed=5)
    carry, h = cell.step(params, random_carry(cell, (2,), seed=6), xs[0])
    assert relative_error(cell.output(params, carry, xs[0]), h) == 0.0


@pytest.mark.parametrize("method", ["rtrl", "snap1"])
@pytest.mark.parametrize("cell", STEP_CELLS, ids=lambda c: c.name)
def test_input_gradient_is_the_steps_own(cell, method):
    """Whichever traces a method contracts (an exact one the new traces where the cell has ``output``, an
    approximate one the previous traces), ``x_t`` enters at step t only: dL_t/dx_t through learner.step is the
    derivative through cell.step, exactly."""
    learner = rtrl.online(cell, method)
    params, xs, ys = random_problem(cell, 4, (2,), seed=7)
    state = learner.init(params, (2,))
    for x in xs[:3]:
        state = learner.step(params, state, x)[1]
    online_g = jax.grad(lambda x: squared_error(learner.step(params, state, x)[0], ys[3]))(xs[3])
    direct_g = jax.grad(lambda x: squared_error(cell.step(params, state.carry, x)[1], ys[3]))(xs[3])
    assert relative_error(online_g, direct_g) <= EXACT_TOL


@pytest.mark.parametrize("method", ["closed_form", "diagonal"])
def test_a_jitted_step_that_donates_the_state_gives_the_same_updates(method):
    """The README's per-step loop donates the state (traces updated in place); nothing the step keeps for its
    backward pass may alias a donated buffer."""
    cell = rtrl.cells.ELSTM(3, 4)
    params, xs, ys = random_problem(cell, 5, (2,), seed=11)
    learner = rtrl.online(cell, method)

    def step(p, state, x, y):
        g, state = jax.grad(lambda q: (lambda h, s: (squared_error(h, y), s))(*learner.step(q, state, x)),
                            has_aux=True)(p)
        return jax.tree.map(lambda a, b: a - 0.1 * b, p, g), state

    results = []
    for jitted in (jax.jit(step), jax.jit(step, donate_argnums=1)):
        p, state = params, learner.init(params, (2,))
        for x, y in zip(xs, ys, strict=True):
            p, state = jitted(p, state, x, y)
        results.append((p, state))
    assert relative_error(results[1], results[0]) == 0.0


@pytest.mark.parametrize("method", ["rtrl", "closed_form", "diagonal"])
def test_a_none_credit_contracts_as_a_zero_credit(method):
    """Exact methods get ``None`` for the carry leaves that ``output`` does not read, and skip their traces."""
    cell = rtrl.cells.AdaptiveIIR2(2, 3, parameterisation="stable")
    params, xs, _ = random_problem(cell, 3, (), seed=12)
    learner = rtrl.online(cell, method)
    state = learner.init(params)
    for x in xs:
        state = learner.step(params, state, x)[1]
    credit = random_carry(cell, (), seed=13)
    zeroed = {name: g if name == "y1" else jnp.zeros_like(g) for name, g in credit.items()}
    pruned = {name: g if name == "y1" else None for name, g in credit.items()}
    contract = learner.method.bind(cell).contract
    assert relative_error(contract(params, state.traces, pruned), contract(params, state.traces, zeroed)) == 0.0


LRU, LIF = rtrl.cells.LRU(3, 4), rtrl.cells.LIF(3, 4)
PER_BODY = [(rtrl.cells.IIR2(3, 4), "closed_form", 2), (rtrl.cells.IIR2(3, 4), "diagonal", 2),
            (rtrl.cells.AdaptiveIIR2(3, 4), "closed_form", 2), (rtrl.cells.ELSTM(3, 4), "closed_form", 1),
            (rtrl.cells.Elman(3, 4), "closed_form", 1), (rtrl.cells.MinGRU(3, 4), "closed_form", 1),
            (LRU, "closed_form", 2), (LRU, "diagonal", 2), (rtrl.cells.RTU(3, 4), "closed_form", 2),
            (rtrl.cells.RTU(3, 4), "diagonal", 2), (rtrl.cells.RTU(3, 4, variant="nonlinear"), "diagonal", 1),
            (LIF, "closed_form", 2), (LIF, "diagonal", 1),
            (rtrl.cells.Network(layers=(rtrl.cells.ELSTM(4, 4), rtrl.cells.MinGRU(4, 4)), input_size=3), "auto", 1),
            (rtrl.cells.Network(layers=(rtrl.cells.LRU(4, 4), rtrl.cells.IIR2(4, 4)), input_size=3), "auto", 2)]


@pytest.mark.parametrize("cell, method, per_body", PER_BODY)
def test_scans_compile_two_steps_per_body_where_carry_leaves_shift_or_cross_under_closed_form(cell, method, per_body):
    """Two steps per body where a carry leaf is passed on to another place (IIR filters' z2' = z1, under any
    method), under closed_form where a new leaf reads another's old value (an LRU's rotation, a LIF neuron's
    reset), and under diagonal where those leaves are a complex recurrence's parts (the LRU's, the linear RTU's; not
    the non-linear RTU's, whose activation splits them, nor a reset); a stack whose second layer reads the first's
    new carry crosses nothing. [guards: a read through a new value counted as a read of the old one (the
    ELSTM-minGRU stack); crossing leaves ignored (LRU, LIF under closed_form); the method's rule ignored (LIF and
    the non-linear RTU under diagonal)]"""
    params = cell.init(jax.random.PRNGKey(0))
    carry = cell.initial_carry((2,))
    learner = rtrl.online(cell, method)
    assert steps_per_body(learner, params, carry, jnp.ones((2, cell.input_size))) == per_body
