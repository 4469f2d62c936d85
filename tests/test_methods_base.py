"""Binding a method to a cell once, the invariants every level of a class runs, the cells' typed capabilities and
the one gradient-accumulating driver (issue 23, part 2)."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import rtrl
from oracle import EXACT_TOL, random_carry, random_problem, relative_error, squared_error
from rtrl import structure
from rtrl.capabilities import HandDerivedTraces, HasOutput, Layered
from rtrl.frozen import Frozen
from rtrl.methods import UORO, Auto, Diagonal, LayerLocal, SnAp, TraceRule, sensitivity
from rtrl.methods.base import bound
from rtrl.online import accumulate
from rtrl.rl.agent import learner_of
from rtrl.rl.rolling import RollingTBPTT


def counting(monkeypatch, owner, name) -> list:
    """Replace ``owner.name`` by a wrapper that records each call; the list of calls. The bindings found earlier in
    this process are forgotten first (``rtrl.online`` reuses them), so that a count does not depend on the tests
    that ran before."""
    bound.cache_clear()
    calls, original = [], getattr(owner, name)

    def counted(*args, **kwargs):
        calls.append(args)
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, counted)
    return calls


def use(rule, cell, batch=2):
    """One step of a bound rule's every function, as rtrl.online uses them, traced and run once."""
    params, xs, _ = random_problem(cell, 1, (), seed=0)
    carry = random_carry(cell, (), seed=1)

    @jax.jit
    def run(params, carry, x):
        traces = rule.update(params, carry, rule.init(params, carry), x)
        return rule.to_params(params, rule.contract(params, traces, carry))

    return run(params, carry, xs[0])


# -- bind discovers once ------------------------------------------------------------------------------------------
def test_diagonal_finds_the_element_wise_structure_once_per_binding(monkeypatch):
    """Once in ``bind``, never in init, update, contract or to_params (before binding, ``structure.elementwise`` ran
    in each of them). Mutation tried by hand: ``to_params`` calling ``require`` again as before: the count is 2."""
    cell = rtrl.cells.IIR2(2, 3)
    calls = counting(monkeypatch, structure, "elementwise")
    rule = Diagonal().bind(cell)
    assert len(calls) == 1
    use(rule, cell)
    assert len(calls) == 1


def test_the_online_learner_binds_once(monkeypatch):
    """``rtrl.online`` resolves, checks and binds with one discovery, and its steps and gradients run no more."""
    cell = rtrl.cells.IIR2(2, 3)
    calls = counting(monkeypatch, structure, "elementwise")
    learner = rtrl.online(cell, "diagonal")
    params, xs, ys = random_problem(cell, 2, (2,), seed=0)
    state = learner.init(params, (2,))
    jax.grad(lambda p: squared_error(learner.step(p, state, xs[0])[0], ys[0]))(params)
    assert len(calls) == 1


def test_a_run_binds_once_for_its_memory_estimate_and_its_learner(monkeypatch):
    """``trace_shapes`` (a run's memory estimate) and ``rtrl.online`` on an equal method and cell share one
    discovery (``rtrl.methods.base.bound``); another cell is found afresh. Mutation tried
    by hand: ``rtrl.online`` calling ``method.bind(cell)`` directly: the count is 2."""
    calls = counting(monkeypatch, structure, "elementwise")
    Diagonal().trace_shapes(rtrl.cells.IIR2(2, 3))
    rtrl.online(rtrl.cells.IIR2(2, 3), Diagonal())
    assert len(calls) == 1
    rtrl.online(rtrl.cells.IIR2(2, 4), "diagonal")
    assert len(calls) == 2


def test_snap_probes_its_pattern_once_per_binding(monkeypatch):
    cell = rtrl.cells.GRU(2, 3)
    calls = counting(monkeypatch, sensitivity, "snap_pattern")
    rule = SnAp(n=1).bind(cell)
    assert len(calls) == 1
    use(rule, cell)
    assert len(calls) == 1


def test_layer_local_binds_each_layer_once(monkeypatch):
    """Each layer's inner rule is found at ``bind`` (one discovery per element-wise layer), not at every call."""
    cell = rtrl.cells.Stack((rtrl.cells.IIR2(2, 3), rtrl.cells.IIR2(3, 3)))
    calls = counting(monkeypatch, structure, "elementwise")
    rule = LayerLocal(inner="diagonal").bind(cell)
    assert len(calls) == 2 and [c[0] for c in calls] == list(cell.layers)
    use(rule, cell)
    assert len(calls) == 2


def test_a_bound_rule_is_the_method_s_functions_of_one_example():
    """Its gradient, laid out, is the method's: the bound Diagonal against the cell's own closed form."""
    cell = rtrl.cells.ELSTM(2, 3)
    rule, closed = Diagonal().bind(cell), rtrl.methods.ClosedForm().bind(cell)
    assert isinstance(rule, TraceRule) and rule.method == Diagonal() and rule.exact and rule.trace_dtype is None
    assert relative_error(use(rule, cell), use(closed, cell)) <= EXACT_TOL
    assert Auto(trace_dtype="bfloat16").bind(cell).method == rtrl.methods.ClosedForm(trace_dtype="bfloat16")


def test_binding_refuses_a_cell_the_method_does_not_apply_to():
    with pytest.raises(ValueError, match="not element-wise|couples neurons"):
        Diagonal().bind(rtrl.cells.GRU(2, 3))
    with pytest.raises(ValueError, match="needs hand-derived traces"):
        rtrl.methods.ClosedForm().bind(rtrl.cells.GRU(2, 3))
    with pytest.raises(ValueError, match="layered cell"):
        LayerLocal().bind(rtrl.cells.GRU(2, 3))


def test_trace_shapes_are_what_init_makes_and_snap_on_a_large_cell_is_not_probed(monkeypatch):
    cell = rtrl.cells.GRU(2, 3)
    params, carry = cell.init(jax.random.PRNGKey(0)), cell.initial_carry(())
    for method in (SnAp(n=1), rtrl.methods.DenseRTRL(), UORO()):
        want = jax.eval_shape(method.bind(cell).init, params, carry)
        assert jax.tree.map(lambda a: (a.shape, a.dtype), method.trace_shapes(cell)) == \
            jax.tree.map(lambda a: (a.shape, a.dtype), want)
    assert Auto().trace_shapes(rtrl.cells.ELSTM(2, 3)) == rtrl.methods.ClosedForm().trace_shapes(rtrl.cells.ELSTM(2, 3))
    calls = counting(monkeypatch, sensitivity, "snap_pattern")
    big = rtrl.cells.GRU(8, 128)  # 128 carry entries x about 53,000 parameters: above PROBE_LIMIT
    assert SnAp(n=1).trace_shapes(big) is None and calls == []


# -- invariants every level runs -------------------------------------------------------------------------------
class CarelessUORO(UORO):
    """Overrides both hooks without calling its bases: the bases' checks run all the same."""

    def __post_init__(self) -> None:
        pass

    def __check_init__(self) -> None:
        pass


class CarelessSnAp(SnAp):
    def __check_init__(self) -> None:
        pass


@pytest.mark.parametrize(("make", "message"), [
    (lambda: CarelessUORO(trace_dtype="int8"), "trace_dtype must be one of"),
    (lambda: CarelessUORO(seed="x"), "seed must be an integer"),
    (lambda: CarelessSnAp(trace_dtype="int8"), "trace_dtype must be one of"),
    (lambda: CarelessSnAp(n=0), "n must be"),
    (lambda: dataclasses.replace(SnAp(), n=0), "n must be"),
    (lambda: RollingTBPTT(0), "truncation must be"),
])
def test_a_subclass_cannot_skip_its_bases_checks(make, message):
    """Mutation tried by hand: ``check_init`` running only ``type(obj).__dict__``'s hook: every row but the
    replace and the rolling one is accepted."""
    with pytest.raises(ValueError, match=message):
        make()


def test_every_level_checks_once_the_most_basic_first():
    """Also through a subclass's own ``__init__`` that calls its base's (the base does not check a second time),
    and after ``__post_init__`` normalised the options. Mutations tried by hand, each killed: the MRO walked
    derived first; the ``type(self) is cls`` guard dropped (Base checks twice)."""
    log = []

    class Base(Frozen):
        x: int = 0

        def __post_init__(self) -> None:
            object.__setattr__(self, "x", abs(self.x))

        def __check_init__(self) -> None:
            log.append(("Base", self.x))

    class Middle(Base):  # no hook of its own
        pass

    class Top(Middle):
        def __init__(self, x):
            super().__init__(x)

        def __check_init__(self) -> None:
            log.append(("Top", self.x))

    Top(-3)
    assert log == [("Base", 3), ("Top", 3)]
    log.clear()
    Middle(2)
    assert log == [("Base", 2)]


# -- typed capabilities ---------------------------------------------------------------------------------------
def identity_rnn(input_size=2, hidden_size=3):
    def init_fn(key):
        return {"W": jax.random.normal(key, (input_size, hidden_size)), "r": jnp.full((hidden_size,), 0.5)}

    def step_fn(params, h, x):
        h = jnp.tanh(x @ params["W"] + params["r"] * h)
        return h, 2.0 * h

    def carry_fn():
        return jnp.zeros(hidden_size)

    return init_fn, step_fn, carry_fn


def test_a_function_cell_has_output_exactly_when_output_fn_is_given():
    """A real answer from the class, not an attribute that raises (that the online step then contracts the new
    traces, exactly, is tests/test_cells_adapters.py's test_an_output_fn_gives_the_new_traces_form_and_stays_exact)."""
    init_fn, step_fn, carry_fn = identity_rnn()
    plain = rtrl.cells.from_function(init_fn, step_fn, carry_fn, input_size=2, hidden_size=3)
    with_output = rtrl.cells.from_function(init_fn, step_fn, carry_fn, input_size=2, hidden_size=3,
                                           output_fn=lambda params, h, x: 2.0 * h)
    assert not isinstance(plain, HasOutput) and not hasattr(plain, "output")
    assert isinstance(with_output, HasOutput) and isinstance(with_output, rtrl.cells.FunctionCell)
    x = jnp.ones((4, 2))
    params = plain.init(jax.random.PRNGKey(0))
    np.testing.assert_array_equal(with_output.output(params, plain.step(params, plain.initial_carry((4,)), x)[0], x),
                                  plain.step(params, plain.initial_carry((4,)), x)[1])


@pytest.mark.parametrize(("cell", "output", "traces", "layered"), [
    (rtrl.cells.Elman(2, 3), True, True, False),
    (rtrl.cells.GRU(2, 3), True, False, False),
    (rtrl.cells.ELSTM(2, 3), True, True, False),
    (rtrl.cells.Stack((rtrl.cells.Elman(2, 3), rtrl.cells.Elman(3, 3))), False, False, True),
    (rtrl.cells.Network(layers=(rtrl.cells.LRU(4, 4),), input_size=2), False, False, True),
], ids=["Elman", "GRU", "ELSTM", "Stack", "Network"])
def test_the_library_cells_answer_the_capability_protocols(cell, output, traces, layered):
    assert (isinstance(cell, HasOutput), isinstance(cell, HandDerivedTraces), isinstance(cell, Layered)) == \
        (output, traces, layered)


def test_structure_says_why_a_step_is_not_element_wise_in_a_typed_result():
    def found(cell):
        params, carry = jax.eval_shape(cell.init, jax.random.PRNGKey(0)), cell.initial_carry(())
        return structure.elementwise(cell, structure.spec(params), structure.spec(carry))

    dense = found(rtrl.cells.GRU(2, 3))
    assert isinstance(dense, structure.NotElementwise) and "couples neurons" in dense.reason
    assert isinstance(found(rtrl.cells.IIR2(2, 3)), structure.Elementwise)
    assert "not element-wise: its recurrence couples neurons" in str(rtrl.inspect(rtrl.cells.GRU(2, 3)))


# -- one gradient-accumulating driver ----------------------------------------------------------------------------
def test_accumulate_sums_each_step_s_gradient_and_threads_the_state():
    """Hand-checked: loss_t = w * d_t * s_t with s_{t+1} = s_t + 1 from s_0 = 1, so dL/dw = sum_t d_t * s_t =
    2*1 + 3*2 + 5*3 = 23; outs are the states each step saw. (Mutation tried: keeping only the last step's
    gradient: 15, killed.)"""

    def step_loss(w, s, d):
        return w * d * s, (s + 1.0, s)

    state, grads, outs = accumulate(step_loss, jnp.float64(7.0), jnp.float64(1.0), jnp.array([2.0, 3.0, 5.0]))
    assert float(grads) == 23.0 and float(state) == 4.0
    np.testing.assert_array_equal(outs, [1.0, 2.0, 3.0])


# -- rolling TBPTT as a bound object ------------------------------------------------------------------------------
def test_rolling_tbptt_binds_to_its_learner_and_is_compared_by_value():
    """``learner_of`` binds a ``RollingTBPTT`` object with its own window, as it binds ``"tbptt"`` with the agent's
    ``truncation``; the window's length is the option's (K = 1 and K = 3 differ on a recurrent cell). Mutation
    tried: ``learner_of`` binding ``RollingTBPTT(truncation)`` for an object, killed."""
    cell = rtrl.cells.Elman(2, 3)
    assert RollingTBPTT(3) == RollingTBPTT(truncation=3) and hash(RollingTBPTT(3)) == hash(RollingTBPTT(3))
    by_object, by_name = learner_of(cell, RollingTBPTT(3), truncation=8), learner_of(cell, "tbptt", truncation=3)
    assert by_object.method == by_name.method == RollingTBPTT(3) and by_object.cell == cell
    params, xs, ys = random_problem(cell, 4, (), seed=5)

    def grads(learner):
        @jax.jit
        def run(params):
            window = learner.init(params)
            for x in xs[:-1]:
                window = learner.step(params, window, x)[1]
            return jax.grad(lambda p: squared_error(learner.step(p, window, xs[-1])[0], ys[-1]))(params)

        return run(params)

    assert relative_error(grads(by_object), grads(by_name)) == 0.0
    assert relative_error(grads(RollingTBPTT(1).bind(cell)), grads(by_object)) > 1e-6


# -- the example of docs/methods.md -------------------------------------------------------------------------------
def test_the_documented_new_method_runs_and_is_rolling_tbptt_with_a_window_of_two():
    """Its per-step gradient goes through this step and the one before (the traces hold the last step's immediate
    Jacobian): rolling TBPTT over 2 steps, a separate implementation (a K-step unroll under autodiff), summed."""
    import pathlib
    import re

    doc = pathlib.Path(__file__).resolve().parents[1] / "docs" / "methods.md"
    (block,) = [b for b in re.findall(r"```python\n(.*?)```", doc.read_text(), re.S) if "class LastStep" in b]
    namespace: dict = {}
    exec(compile(block, "docs/methods.md", "exec"), namespace)
    cell = rtrl.cells.Elman(2, 3)
    params, xs, ys = random_problem(cell, 6, (2,), seed=7)
    _, got = rtrl.sequence_grad(cell, params, xs, ys, squared_error, method=namespace["LastStep"]())
    rolling = RollingTBPTT(2).bind(cell)

    @jax.jit
    def summed(params):
        def step_loss(p, window, xy):
            h, window = rolling.step(p, window, xy[0])
            return squared_error(h, xy[1]), (window, None)

        return accumulate(step_loss, params, rolling.init(params, (2,)), (xs, ys))[1]

    assert relative_error(got, summed(params)) <= EXACT_TOL
    assert relative_error(got, rtrl.sequence_grad(cell, params, xs, ys, squared_error, method="bptt")[1]) > 1e-3


@pytest.mark.parametrize("method", [rtrl.methods.DenseRTRL(), Diagonal(), SnAp(n=1), Auto(), UORO()],
                         ids=lambda m: m.name)
def test_bind_checks_its_arguments_by_name(method):
    """One check for every method's ``bind`` (``checked_bind``): a cell given as a name, a class or ``None`` is a
    ``TypeError`` naming ``cell``; another cell's parameters or carry a ``ValueError`` naming ``params`` / ``carry``.
    [``__init_subclass__`` not wrapping ``bind``: ``bind('elman')`` returned a rule, ``bind(None)`` was an
    AttributeError]"""
    cell = rtrl.cells.IIR2(2, 3)
    for bad in ("iir2", rtrl.cells.IIR2, None):
        with pytest.raises(TypeError, match="cell must be a cell object"):
            method.bind(bad)
    key = jax.random.PRNGKey(0)
    with pytest.raises(ValueError, match=r"params\['\w+'\] of IIR2 must have shape \(.*3.*\), got \(.*4.*\)"):
        method.bind(cell, params=rtrl.cells.IIR2(2, 4).init(key))
    with pytest.raises(ValueError, match="carry"):
        method.bind(cell, carry=jnp.zeros(5))
    assert isinstance(method.bind(cell, params=cell.init(key), carry=cell.initial_carry(())), TraceRule)


def test_a_sequence_method_says_it_has_no_rule_to_bind():
    for method in (rtrl.methods.BPTT(), rtrl.methods.TBPTT(truncation=2)):
        with pytest.raises(TypeError, match=f"{method.name} is a sequence method.*sequence_grad"):
            method.bind(rtrl.cells.Elman(2, 3))
