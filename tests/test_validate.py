"""Every entry point of the Python API refuses bad input at its door: one table of (call, exception, words the
message must hold), over ``rtrl.sequence_grad``, ``rtrl.online(...)`` and its learner's ``init``, ``step`` and
``reset``, ``rtrl.stream_grad``, ``rtrl.inspect``, the methods' and cells' constructors, ``cell.init`` and
``cell.initial_carry``. Every refusal happens before anything is compiled, so the table costs no compilation; the
tests after it hold the one dtype rule (BPTT's type promotion, for every method) and the cost of the checks under
``jit`` (none after tracing).

Mutations tried by hand, each caught: ``check_cell`` removed from ``rtrl.online`` (the ``online('elman')`` row gets
a learner back); the batch-shape comparison removed from the step's state check (the ``step: state of another batch
size`` row fails with JAX's broadcasting error); ``LayerLocal.__post_init__`` removed (the ``inner='bogus'`` rows
construct); the parameters' cast removed from ``sequence_grad`` (``tbptt`` fails with the scan's carry-type error,
and ``bptt``'s and ``closed_form``'s values are not the promoted computation's); the parameters' cast removed from
the checked step (the online dtype test gets float32 gradients for float16 parameters); ``closest`` returning ``""``
(the misspelt-method rows fail); ``traced`` re-raising JAX's error (the float16 LRU rows fail).
Each of the later rows' checks removed in turn (the floating-dtype test in ``checks.default_dtype``, the adapters'
``size_mismatch``, ``input_size`` checked before the step is traced, ``from_function``'s name and init checks,
``reset``'s conversion guard, ``check_carry``'s dtype test, ``resolve``'s ``check_cell``, each of ``Trainer``'s
checks, ``rl.train``'s type test): its row fails.
"""

import jax
import jax.numpy as jnp
import pytest

import rtrl
import rtrl.rl
from rtrl.cells import from_function
from rtrl.compare import relative_error
from rtrl.methods import LayerLocal, SnAp, resolve
from rtrl.optim import obgd
from rtrl.training.tasks import Copy
from rtrl.training.trainer import Trainer

CELL = rtrl.cells.Elman(3, 4)
PARAMS = CELL.init(jax.random.PRNGKey(0))
XS = jax.random.normal(jax.random.PRNGKey(1), (3, 2, 3))
YS = jax.random.normal(jax.random.PRNGKey(2), (3, 2, 4))
GRU = rtrl.cells.GRU(3, 4)
GRU_PARAMS = GRU.init(jax.random.PRNGKey(0))
LRU = rtrl.cells.LRU(3, 4)
HALF_LRU = jax.tree.map(lambda a: a.astype(jnp.float16), LRU.init(jax.random.PRNGKey(0)))


def loss_fn(h, y):
    return jnp.sum((h - y) ** 2)


LEARNER = rtrl.online(CELL, "rtrl")
STATE = LEARNER.init(PARAMS, (2,))  # no compilation: init runs op by op


def grad(*args, **kwargs):
    return rtrl.sequence_grad(*args, **kwargs)


def step(params=PARAMS, state=STATE, x=XS[0], learner=LEARNER):
    return learner.step(params, state, x)


def stream(xs=XS, ys=YS, loss=loss_fn, learner=LEARNER, state=STATE):
    return rtrl.stream_grad(learner, PARAMS, state, xs, ys, loss)


def fn_init(key):
    return {"W": jnp.zeros((3, 4))}


def fn_step(params, carry, x):
    carry = jnp.tanh(x @ params["W"] + carry)
    return carry, carry


def fn_carry():
    return jnp.zeros(4)


def function_cell(init=fn_init, step=fn_step, carry=fn_carry, input_size=3, hidden_size=4, **kwargs):
    return from_function(init, step, carry, input_size=input_size, hidden_size=hidden_size, **kwargs)


TASK = Copy(max_length=2)
TASK_CELL = rtrl.cells.Elman(TASK.input_size, 4)


def trainer(task=TASK, cell=TASK_CELL, **kwargs):
    return Trainer(task, cell, batch=2, eval_size=2, **kwargs)


F16_STATE = LEARNER.init(jax.tree.map(lambda a: a.astype(jnp.float16), PARAMS), (2,))

REFUSED = [
    # rtrl.sequence_grad
    ("sequence_grad: a cell's name", lambda: grad("elman", PARAMS, XS, YS, loss_fn), TypeError,
     ["cell must be a cell object such as rtrl.cells.Elman(...), got the string 'elman'"]),
    ("sequence_grad: a cell class", lambda: grad(rtrl.cells.Elman, PARAMS, XS, YS, loss_fn), TypeError,
     ["cell must be a cell object", "the class Elman", "Elman(input_size, hidden_size)"]),
    ("sequence_grad: xs of rank 1", lambda: grad(CELL, PARAMS, XS[0, 0], YS, loss_fn), ValueError,
     ["xs must have shape (T, *batch, input_size)", "(3,)"]),
    ("sequence_grad: xs of another feature size", lambda: grad(CELL, PARAMS, jnp.ones((3, 2, 5)), YS, loss_fn),
     ValueError, ["xs must end in input_size=3", "(3, 2, 5)"]),
    ("sequence_grad: targets of another T", lambda: grad(CELL, PARAMS, XS, YS[:2], loss_fn), ValueError,
     ["targets must have leading dimension T = 3", "(2, 2, 4)"]),
    ("sequence_grad: no time step", lambda: grad(CELL, PARAMS, XS[:0], YS[:0], loss_fn), ValueError,
     ["at least one time step", "T = 0"]),
    ("sequence_grad: a misspelt method", lambda: grad(CELL, PARAMS, XS, YS, loss_fn, method="closed_from"),
     ValueError, ["unknown method 'closed_from'", "did you mean 'closed_form'?"]),
    ("sequence_grad: a method that is not one", lambda: grad(CELL, PARAMS, XS, YS, loss_fn, method=3), TypeError,
     ["method must be a name from", "or a Method object", "got int 3"]),
    ("sequence_grad: a method for another cell", lambda: grad(CELL, PARAMS, XS, YS, loss_fn, method=LayerLocal()),
     ValueError, ["'layer_local' applies to a rtrl.cells.Stack", "got Elman"]),
    ("sequence_grad: closed_form without traces", lambda: grad(GRU, GRU_PARAMS, XS, YS, loss_fn, "closed_form"),
     ValueError, ["'closed_form' needs hand-derived traces", "GRU"]),
    ("sequence_grad: another cell's params", lambda: grad(CELL, GRU_PARAMS, XS, YS, loss_fn), ValueError,
     ["params do not fit Elman"]),
    ("sequence_grad: a loss that is no function", lambda: grad(CELL, PARAMS, XS, YS, "mse"), TypeError,
     ["loss_fn must be a function (h, target) -> scalar loss, got the string 'mse'"]),
    ("sequence_grad: a complex loss", lambda: grad(CELL, PARAMS, XS, YS, lambda h, y: jnp.sum(h - y) * 1j),
     ValueError, ["loss_fn must return a real floating-point scalar, got complex"]),
    ("sequence_grad: an integer loss", lambda: grad(CELL, PARAMS, XS, YS, lambda h, y: jnp.sum(h > y)),
     ValueError, ["loss_fn must return a real floating-point scalar, got int"]),
    ("sequence_grad: a loss of shape (2,)", lambda: grad(CELL, PARAMS, XS, YS, lambda h, y: jnp.sum(h - y, 1)),
     ValueError, ["loss_fn must return a scalar", "shape (2,)"]),
    ("sequence_grad: a loss that returns a tuple", lambda: grad(CELL, PARAMS, XS, YS, lambda h, y: (h, y)),
     ValueError, ["loss_fn must return a scalar", "tuple"]),
    ("sequence_grad: LRU in float16 (no complex float16)", lambda: grad(
        LRU, HALF_LRU, XS.astype(jnp.float16), YS.astype(jnp.float16), loss_fn, method="closed_form"), TypeError,
     ["LRU cannot compute in float16", "complex", "use float32 or float64"]),
    ("sequence_grad: a loss of one argument", lambda: grad(CELL, PARAMS, XS, YS, lambda h: jnp.sum(h)), TypeError,
     ["loss_fn(h, target) failed on h float64(2, 4) and target float64(2, 4)", "positional argument"]),
    ("sequence_grad: complex params", lambda: grad(CELL, jax.tree.map(lambda a: a + 0j, PARAMS), XS, YS, loss_fn),
     ValueError, ["of Elman must be floating-point (real), got complex128"]),
    ("sequence_grad: a carry of another batch", lambda: grad(CELL, PARAMS, XS, YS, loss_fn, carry=jnp.zeros((3, 4))),
     ValueError, ["carry", "batch shape (2,)", "must have shape (2, 4)"]),
    ("sequence_grad: an integer carry", lambda: grad(CELL, PARAMS, XS, YS, loss_fn, carry=jnp.zeros((2, 4), int)),
     ValueError, ["carry of Elman must be floating-point, got int"]),
    ("sequence_grad: params of the wrong shape", lambda: grad(CELL, dict(PARAMS, R=jnp.zeros((4, 3))), XS, YS,
                                                              loss_fn), ValueError,
     ["params['R'] of Elman must have shape (4, 4)", "got (4, 3)"]),
    ("cell.step: x of another feature size", lambda: CELL.step(PARAMS, CELL.initial_carry((2,)), XS[0, :, :2]),
     ValueError, ["x must have shape (*batch, input_size=3) for Elman", "(2, 2)"]),
    # rtrl.online and its learner
    ("online: a cell's name", lambda: rtrl.online("elman"), TypeError,
     ["cell must be a cell object such as rtrl.cells.Elman(...), got the string 'elman'"]),
    ("online: a cell class", lambda: rtrl.online(rtrl.cells.GRU, "rtrl"), TypeError, ["the class GRU"]),
    ("online: a misspelt method", lambda: rtrl.online(CELL, "snap"), ValueError,
     ["unknown method 'snap'", "did you mean"]),
    ("online: a sequence method", lambda: rtrl.online(CELL, "bptt"), ValueError, ["has no online step"]),
    ("init: a batch shape of text", lambda: LEARNER.init(PARAMS, "4"), ValueError,
     ["batch_shape must be a tuple of non-negative ints (or one int)", "'4'"]),
    ("init: a negative batch size", lambda: LEARNER.init(PARAMS, (2, -1)), ValueError, ["batch_shape", "(2, -1)"]),
    ("init: a float batch size", lambda: LEARNER.init(PARAMS, (2.5,)), ValueError, ["batch_shape", "(2.5,)"]),
    ("init: a bool batch shape", lambda: LEARNER.init(PARAMS, True), ValueError, ["batch_shape", "True"]),
    ("init: a batch shape against the carry's", lambda: LEARNER.init(PARAMS, (3,), carry=STATE.carry), ValueError,
     ["batch_shape (3,) contradicts the carry's batch shape (2,)"]),
    ("init: another cell's params", lambda: LEARNER.init(GRU_PARAMS, (2,)), ValueError, ["params do not fit Elman"]),
    ("init: LRU in float16", lambda: rtrl.online(LRU, "closed_form").init(HALF_LRU, (2,)), TypeError,
     ["LRU cannot compute in float16"]),
    ("step: state of another batch size", lambda: step(state=LEARNER.init(PARAMS, (5,))), ValueError,
     ["x has batch shape (2,) but the state was made for batch shape (5,)", "learner.init(params, batch_shape=(2,))"]),
    ("step: state of another cell", lambda: step(learner=rtrl.online(GRU, "rtrl"), params=GRU_PARAMS), ValueError,
     ["state does not fit this learner (GRU under 'rtrl')", "state.traces", "expected float64 (2, 4, 96)"]),
    ("step: state of another method", lambda: step(learner=rtrl.online(CELL, "uoro")), ValueError,
     ["state does not fit this learner (Elman under 'uoro')", "another learner, method or cell"]),
    ("step: no state", lambda: step(state=None), TypeError,
     ["state must be the OnlineState that learner.init(params, batch_shape) returns, got NoneType"]),
    ("step: only the carry", lambda: step(state=STATE.carry), TypeError, ["state must be the OnlineState"]),
    ("step: x of another feature size", lambda: step(x=jnp.ones((2, 4))), ValueError,
     ["x must have shape (*batch, input_size=3) for Elman", "(2, 4)"]),
    ("step: x wider than the state", lambda: step(params=jax.tree.map(lambda a: a.astype(jnp.float16), PARAMS),
                                                  state=F16_STATE, x=XS[0].astype(jnp.float32)), ValueError,
     ["x is float32, wider than the state's float16", "cell.initial_carry((2,), jnp.float32)"]),
    ("step: a state narrower than the params", lambda: step(state=F16_STATE), ValueError,
     ["the state holds float16, but the parameters compute in float64", "learner.init(params, batch_shape)"]),
    ("step: a state of another dtype", lambda: step(state=F16_STATE._replace(carry=STATE.carry)), ValueError,
     ["state does not fit", "state.traces is float16 (2, 4, 32), expected float64"]),
    ("reset: no state", lambda: LEARNER.reset(None, jnp.zeros(2, bool)), TypeError, ["state must be the OnlineState"]),
    ("reset: done of another batch", lambda: LEARNER.reset(STATE, jnp.zeros(3, bool)), ValueError,
     ["done must be a bool array of the batch shape (2,)"]),
    ("reset: done as text", lambda: LEARNER.reset(STATE, "yes"), ValueError,
     ["done must be a bool array of the batch shape (2,), got the string 'yes'"]),
    # rtrl.stream_grad
    ("stream_grad: targets of another length", lambda: stream(ys=YS[:2]), ValueError,
     ["targets must have leading dimension T = 3"]),
    ("stream_grad: no time step", lambda: stream(xs=XS[:0], ys=YS[:0]), ValueError, ["at least one time step"]),
    ("stream_grad: xs of rank 1", lambda: stream(xs=XS[0, 0]), ValueError, ["xs must have shape (T, *batch"]),
    ("stream_grad: no learner", lambda: rtrl.stream_grad(CELL, PARAMS, STATE, XS, YS, loss_fn), TypeError,
     ["learner must be a rtrl.online(cell, method) learner, got Elman"]),
    ("stream_grad: a loss that is no function", lambda: stream(loss=None), TypeError, ["loss_fn must be a function"]),
    ("stream_grad: a complex loss", lambda: stream(loss=lambda h, y: jnp.sum(h - y) + 0j), ValueError,
     ["real floating-point scalar"]),
    ("stream_grad: a state of another batch", lambda: stream(state=LEARNER.init(PARAMS, (4,))), ValueError,
     ["the state was made for batch shape (4,)"]),
    # rtrl.inspect
    ("inspect: a cell class", lambda: rtrl.inspect(rtrl.cells.LRU), TypeError,
     ["cell must be a cell object", "the class LRU", "LRU(input_size, hidden_size)"]),
    ("inspect: a cell's name", lambda: rtrl.inspect("lru"), TypeError, ["got the string 'lru'"]),
    ("inspect: another cell's params", lambda: rtrl.inspect(CELL, GRU_PARAMS), ValueError, ["params do not fit"]),
    # the methods' constructors
    ("LayerLocal: an unknown inner method", lambda: LayerLocal(inner="bogus"), ValueError,
     ["inner must be the name of a trace method", "'closed_form'", "got 'bogus'"]),
    ("LayerLocal: a misspelt inner method", lambda: LayerLocal(inner="diagonl"), ValueError,
     ["did you mean 'diagonal'?"]),
    ("LayerLocal: a sequence method inside", lambda: LayerLocal(inner="bptt"), ValueError, ["got 'bptt'"]),
    ("LayerLocal: itself inside", lambda: LayerLocal(inner=LayerLocal()), TypeError, ["trace method object"]),
    ("LayerLocal: a number inside", lambda: LayerLocal(inner=2), TypeError, ["got int 2"]),
    ("SnAp: n of 0", lambda: SnAp(n=0), ValueError, ["n must be a positive integer, got 0"]),
    ("resolve: a cell's name", lambda: resolve("rtrl", "elman"), TypeError, ["cell must be a cell object"]),
    # the optimisers: ObGD's step size and bound under their own names (it once said ``lr`` for
    # ``learning_rate`` and took an infinite one, every update then NaN)
    ("obgd: a negative learning rate", lambda: obgd(learning_rate=-1.0), ValueError,
     ["learning_rate must be a positive finite number, got -1.0"]),
    ("obgd: an infinite learning rate", lambda: obgd(learning_rate=float("inf")), ValueError,
     ["learning_rate must be a positive finite number, got inf"]),
    ("obgd: kappa 0", lambda: obgd(kappa=0.0), ValueError, ["kappa must be a positive finite number, got 0.0"]),
    ("obgd: kappa NaN", lambda: obgd(kappa=float("nan")), ValueError,
     ["kappa must be a positive finite number, got nan"]),
    # the cells' constructors, init and initial_carry
    ("Elman: input size 0", lambda: rtrl.cells.Elman(0, 4), ValueError, ["input_size must be a positive integer"]),
    ("Elman: a hidden size of text", lambda: rtrl.cells.Elman(3, "4"), ValueError, ["hidden_size", "'4'"]),
    ("LRU: a float hidden size", lambda: rtrl.cells.LRU(3, 4.0), ValueError, ["hidden_size", "4.0"]),
    ("GRU: a size past 32-bit integers", lambda: rtrl.cells.GRU(3, 2**40), ValueError,
     ["hidden_size must be at most 2,147,483,647"]),
    ("Elman: an unknown activation", lambda: rtrl.cells.Elman(3, 4, activation="gelu"), ValueError,
     ["activation must be one of", "'tanh'", "got 'gelu'"]),
    ("Stack: no layers", lambda: rtrl.cells.Stack(()), ValueError, ["layers must be a non-empty sequence"]),
    ("Elman.init: an int for a key", lambda: CELL.init(0), TypeError,
     ["key must be a JAX random key such as jax.random.PRNGKey(0)", "got int 0"]),
    ("LRU.init (its own init): a float array", lambda: rtrl.cells.LRU(3, 4).init(jnp.zeros(2)), TypeError,
     ["key must be a JAX random key", "float"]),
    ("Stack.init (its own init): a string", lambda: rtrl.cells.Stack((CELL,)).init("key"), TypeError,
     ["key must be a JAX random key"]),
    ("initial_carry: a negative batch size", lambda: CELL.initial_carry(-2), ValueError, ["batch_shape", "-2"]),
    ("initial_carry by name: floats", lambda: GRU.initial_carry(batch_shape=(1.0,)), ValueError, ["batch_shape"]),
    ("Stack.initial_carry (its own): text", lambda: rtrl.cells.Stack((CELL,)).initial_carry("2"), ValueError,
     ["batch_shape must be a tuple of non-negative ints"]),
    ("Elman.init: no such dtype", lambda: CELL.init(jax.random.PRNGKey(0), dtype="float17"), TypeError,
     ["dtype must be a floating dtype", "'float17'"]),
    ("initial_carry: an integer dtype", lambda: CELL.initial_carry(dtype=jnp.int32), TypeError,
     ["dtype must be a floating dtype", "int32"]),
    # rtrl.cells.from_function (and every adapter: the sizes checked before the step is traced)
    ("from_function: a carry the step cannot take", lambda: function_cell(carry=lambda: jnp.zeros(5)), ValueError,
     ["carry_fn of FunctionCell is (5,)", "step_fn runs on a carry of width 4 (hidden_size=4)"]),
    ("from_function: an input size the step cannot take", lambda: function_cell(input_size=7), ValueError,
     ["step_fn of FunctionCell fails on inputs of input_size=7", "is input_size 3?"]),
    ("from_function: a step returning the carry alone", lambda: function_cell(step=lambda p, c, x: c), ValueError,
     ["step_fn of FunctionCell must return (carry, h), got (4,)"]),
    ("from_function: an init returning text", lambda: function_cell(init=lambda key: "params"), TypeError,
     ["init_fn of FunctionCell must return the parameters as a pytree of arrays, got str"]),
    ("from_function: a name that is not text", lambda: function_cell(name=5), TypeError,
     ["name must be a non-empty string", "got 5"]),
    ("from_function: input size 0, h's width from the step", lambda: function_cell(input_size=0, hidden_size=None),
     ValueError, ["input_size must be a positive integer, got 0"]),
    ("from_function: input size as text, h's width from the step",
     lambda: function_cell(input_size="3", hidden_size=None), ValueError, ["input_size", "got '3'"]),
    # rtrl.training.trainer.Trainer
    ("Trainer: a task's name", lambda: trainer(task="copy"), TypeError,
     ["task must be a task object such as rtrl.training.tasks.Copy(), got the string 'copy'"]),
    ("Trainer: a cell's name", lambda: trainer(cell="elman"), TypeError,
     ["cell must be a cell object", "got the string 'elman'"]),
    ("Trainer: a seed of text", lambda: trainer(seed="x"), ValueError, ["seed must be an integer from 0", "'x'"]),
    ("Trainer: an optimizer's name", lambda: trainer(optimizer="adam"), TypeError,
     ["optimizer must be an optax optimizer such as make_optimizer('adam'", "the string 'adam'"]),
    ("Trainer: stagger as text", lambda: trainer(stagger="yes"), ValueError, ["stagger must be true or false"]),
    ("Trainer.train: a negative step count", lambda: trainer().train(None, -1), ValueError,
     ["n_steps must be a positive integer", "-1"]),
    ("Trainer.evaluate: no params", lambda: trainer().evaluate(None), ValueError,
     ["params do not fit this trainer's Elman and readout", "missing ['cell']['B']"]),
    # rtrl.rl
    ("rl.train: a dict for a configuration", lambda: rtrl.rl.train({"env": "tmaze"}), TypeError,
     ["config must be an RLConfig", "got dict"]),
    ("TMaze: a corridor whose default max_steps overflows 32 bits", lambda: rtrl.rl.TMaze(length=2**29), ValueError,
     ["length must be at most 536,870,910 for the default max_steps", "got 536,870,912"]),
    ("TMaze: a corridor longer than 32 bits", lambda: rtrl.rl.TMaze(length=10**12, max_steps=10**12 + 1), ValueError,
     ["length must be at most 2,147,483,647 (2**31 - 1), got 1,000,000,000,000"]),
    ("TMaze: an episode too short to reach the junction", lambda: rtrl.rl.TMaze(length=5, max_steps=5), ValueError,
     ["max_steps must be at least length + 1 = 6", "got 5"]),
]


@pytest.mark.parametrize("call, error, words", [row[1:] for row in REFUSED], ids=[row[0] for row in REFUSED])
def test_bad_input_is_refused_naming_the_argument(call, error, words):
    with pytest.raises(error) as info:
        call()
    for word in words:
        assert word in str(info.value), (word, str(info.value))


def test_a_mask_of_the_batch_shape_is_taken():
    """The refused ``reset`` rows' counterpart: the right mask resets the rows it names and keeps the others."""
    state = LEARNER.step(PARAMS, STATE, XS[0])[1]
    reset = LEARNER.reset(state, jnp.array([True, False]))
    assert not jnp.any(reset.carry[0]) and jnp.all(reset.carry[1] == state.carry[1])


def test_one_int_is_a_batch_shape_as_in_numpy():
    assert jnp.shape(CELL.initial_carry(4)) == (4, 4)
    assert jax.tree.map(jnp.shape, rtrl.cells.Stack((CELL, rtrl.cells.GRU(4, 4))).initial_carry(3)) == \
        ((3, 4), (3, 4))
    state = LEARNER.init(PARAMS, 2)
    assert jax.tree.map(jnp.shape, state) == jax.tree.map(jnp.shape, STATE)


ELSTM = rtrl.cells.ELSTM(3, 4)  # element-wise: every method but layer_local applies
HALF = jax.tree.map(lambda a: a.astype(jnp.float16), ELSTM.init(jax.random.PRNGKey(3)))
X32, Y32 = XS[:2, :1].astype(jnp.float32), YS[:2, :1].astype(jnp.float32)
LIF = rtrl.cells.LIF(3, 4, recurrent=True)
HALF_LIF = jax.tree.map(lambda a: a.astype(jnp.float16), LIF.init(jax.random.PRNGKey(3)))


def widened(params):
    return jax.tree.map(lambda a: a.astype(jnp.float32), params)


def rounded(grads):
    return jax.tree.map(lambda a: a.astype(jnp.float16), grads)


@pytest.mark.parametrize("method", [m for m in rtrl.METHODS if m != "layer_local"])
def test_every_method_takes_mixed_dtypes_as_bptt_promotes_them(method):
    """float16 parameters, float32 inputs: every method traces (no compilation: ``eval_shape``), computes in
    float32 (the loss's dtype, as BPTT's type promotion gives) and returns float16 gradients. [Before: a scan
    carry-type error for ``rtrl``, ``closed_form``, ...; the cast removed from ``sequence_grad``: ``tbptt`` fails
    so.]"""
    cell, half = (LIF, HALF_LIF) if method == "eprop_window" else (ELSTM, HALF)  # it applies to LIF and ALIF only
    loss, grads = jax.eval_shape(lambda p: rtrl.sequence_grad(cell, p, X32, Y32, loss_fn, method=method), half)
    assert loss.dtype == jnp.float32
    assert all(g.dtype == jnp.float16 for g in jax.tree.leaves(grads))


@pytest.mark.parametrize("method", ["bptt", "closed_form"])  # a sequence method, a trace method
def test_mixed_dtype_gradients_are_the_promoted_ones_rounded(method):
    """The values behind the dtypes above: the float32 computation's loss, and its gradients rounded to float16.
    [The parameters cast to the inputs' dtype instead (float32 inputs rounded to float16): the loss differs.]"""
    loss, grads = rtrl.sequence_grad(ELSTM, HALF, X32, Y32, loss_fn, method=method)
    wide_loss, wide = rtrl.sequence_grad(ELSTM, widened(HALF), X32, Y32, loss_fn, method=method)
    assert loss == wide_loss
    assert relative_error(grads, rounded(wide)) == 0.0


@pytest.mark.parametrize("method", ["closed_form", "snap1"])  # the two backward passes: new and previous traces
def test_the_online_step_gives_gradients_in_the_parameters_dtype(method):
    """float16 parameters with a float32 state: float32 arithmetic, float16 gradients (they used to come back in
    float32, which optax then mixed into the float16 parameters). [The parameters' cast removed from the checked
    step: float32 gradients, the dtype assertion fails.]"""
    learner = rtrl.online(ELSTM, method)
    state = learner.init(HALF, carry=ELSTM.initial_carry((1,), jnp.float32))
    assert {a.dtype for a in jax.tree.leaves(state)} == {jnp.dtype(jnp.float32)}

    @jax.jit
    def grads(params):
        return jax.grad(lambda p: loss_fn(learner.step(p, state, X32[0])[0], Y32[0]))(params)

    half = grads(HALF)
    assert all(g.dtype == jnp.float16 for g in jax.tree.leaves(half))
    assert relative_error(half, rounded(grads(widened(HALF)))) == 0.0


def test_the_checks_run_once_while_tracing_and_add_nothing_to_the_step(monkeypatch):
    """The step's checks read shapes and dtypes only: under ``jit`` they run once, at tracing, and the step's
    program is the custom-gradient step alone when the dtypes agree (a conversion before it only where the rule
    casts). [The cast made unconditional through a float32 round trip: the first program assertion fails.]"""
    from rtrl import validate

    calls = []
    monkeypatch.setattr(validate, "check_params", lambda *args: calls.append(1))
    learner = rtrl.online(CELL, "rtrl")  # made after the patch: its step uses the counting check
    compiled = jax.jit(learner.step)
    for _ in range(3):
        compiled(PARAMS, STATE, XS[0])
    assert len(calls) == 1

    def program(*args):
        return [eqn.primitive.name for eqn in jax.make_jaxpr(learner.step)(*args).jaxpr.eqns]

    assert program(PARAMS, STATE, XS[0]) == ["custom_vjp_call"]
    assert program(PARAMS, STATE, XS[0] > 0) == ["convert_element_type", "custom_vjp_call"]


def test_xs_as_nested_lists_are_one_array():
    """``xs`` given as nested Python lists is read as one array, as JAX reads it (traced only, no compilation).
    [Before: the dtype cast mapped over the lists' scalars and the compiled call met a list: a tracer conversion
    error; ``jnp.asarray`` removed from ``validate.sequence``: so again.]"""
    as_lists = jax.eval_shape(lambda: grad(CELL, PARAMS, XS.tolist(), YS, loss_fn))
    assert as_lists == jax.eval_shape(lambda: grad(CELL, PARAMS, XS, YS, loss_fn))


@pytest.mark.parametrize("bad", [jnp.nan, jnp.inf])
def test_a_non_finite_input_is_named_where_the_api_checks_its_inputs(bad):
    """A NaN input to a spiking cell gave a loss of 0 and NaN gradients without a word (the spike's comparison is
    false for NaN); now ``xs`` is named with the first bad index, for ``sequence_grad`` and ``stream_grad`` alike,
    and a traced ``xs`` (the caller's own jit) is left to the caller. [``check_finite`` removed: no error]"""
    cell = rtrl.cells.LIF(2, 3)
    params = cell.init(jax.random.PRNGKey(0))
    xs, ys = jnp.ones((4, 2)).at[2, 1].set(bad), jnp.zeros((4, 3))

    def loss(h, y):
        return jnp.sum((h - y) ** 2)

    with pytest.raises(ValueError, match=r"xs holds NaN or infinite values \(the first at index \(2, 1\)"):
        rtrl.sequence_grad(cell, params, xs, ys, loss)
    learner = rtrl.online(cell, "rtrl")
    with pytest.raises(ValueError, match="xs holds NaN"):
        rtrl.stream_grad(learner, params, learner.init(params), xs, ys, loss)
    jax.jit(lambda xs: rtrl.sequence_grad(cell, params, xs, ys, loss)[0])(xs)  # traced: not checked here
