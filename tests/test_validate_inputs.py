"""The Python API refuses bad input at its boundary with a ValueError naming the argument, the same for every
method, and accepts integer or boolean inputs as BPTT does (cast to the parameters' dtype)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import rtrl
from rtrl.compare import relative_error
from rtrl.optim import make_optimizer
from rtrl.training.tasks import Copy
from rtrl.training.trainer import Trainer, fit

CELL = rtrl.cells.ELSTM(3, 4)  # element-wise: every online method applies (closed_form, diagonal, ...)
PARAMS = CELL.init(jax.random.PRNGKey(0))
XS = (jax.random.uniform(jax.random.PRNGKey(1), (3, 2, 3)) < 0.5).astype(jnp.int32)  # 0/1 integer inputs
YS = jax.random.normal(jax.random.PRNGKey(2), (3, 2, 4))


def loss_fn(h, y):
    return jnp.sum((h - y) ** 2)


APPLICABLE = [m for m in rtrl.METHODS if m != "layer_local"]  # layer_local applies to stacks only
LIF = rtrl.cells.LIF(3, 4, recurrent=True)  # eprop_window applies to LIF and ALIF only
CELLS = {"eprop_window": (LIF, LIF.init(jax.random.PRNGKey(0)))}


@pytest.mark.parametrize("method", APPLICABLE)
def test_integer_and_boolean_inputs_are_the_float_inputs_for_every_method(method):
    cell, params = CELLS.get(method, (CELL, PARAMS))
    floats = XS.astype(jnp.float64)
    expected = rtrl.sequence_grad(cell, params, floats, YS, loss_fn, method=method)
    for xs in (XS, XS.astype(bool)):
        got = rtrl.sequence_grad(cell, params, xs, YS, loss_fn, method=method)
        assert relative_error(got, expected) == 0.0, (method, xs.dtype)


@pytest.mark.parametrize("method", ["closed_form", "snap1"])  # the two backward passes: new and previous traces
def test_the_online_step_takes_integer_inputs(method):
    learner = rtrl.online(CELL, method)
    state = learner.init(PARAMS, batch_shape=(2,))

    @jax.jit
    def grad(x):
        return jax.grad(lambda p: jnp.sum(learner.step(p, state, x)[0]))(PARAMS)

    assert relative_error(grad(XS[0]), grad(XS[0].astype(jnp.float64))) == 0.0


GRU = rtrl.cells.GRU(3, 4).init(jax.random.PRNGKey(0))


@pytest.mark.parametrize("params, message", [
    (jnp.zeros(3), "params do not fit ELSTM (missing ['F']"),
    ([PARAMS], "params do not fit ELSTM"),
    ({k: v for k, v in PARAMS.items() if k != "F"}, "missing ['F']"),
    ({**PARAMS, "extra": jnp.zeros(2)}, "unexpected ['extra']"),
    (GRU, "params do not fit ELSTM (missing"),
    ({**PARAMS, "F": jnp.zeros((4, 4))}, "params['F'] of ELSTM must have shape (3, 4), got (4, 4)"),
    ({**PARAMS, "F": jnp.zeros((3, 4), jnp.int32)}, "params['F'] of ELSTM must be floating-point"),
])
def test_parameter_trees_that_do_not_fit_the_cell_are_named(params, message):
    with pytest.raises(ValueError) as info:
        rtrl.sequence_grad(CELL, params, XS, YS, loss_fn)
    assert message in str(info.value)
    learner = rtrl.online(CELL, "closed_form")
    with pytest.raises(ValueError) as info:
        learner.init(params, batch_shape=(2,))
    assert message in str(info.value)


def test_a_carry_of_another_shape_and_a_loss_that_is_not_a_scalar_are_named():
    with pytest.raises(ValueError, match=r"carry\['c'\] of ELSTM with batch shape \(2,\) must have shape \(2, 4\)"):
        rtrl.sequence_grad(CELL, PARAMS, XS, YS, loss_fn, carry={"c": jnp.zeros((3, 4))})
    with pytest.raises(ValueError, match="carry do not fit ELSTM with batch shape"):
        rtrl.sequence_grad(CELL, PARAMS, XS, YS, loss_fn, carry=jnp.zeros((2, 4)))
    with pytest.raises(ValueError, match=r"loss_fn must return a scalar .* got shape \(2, 4\)"):
        rtrl.sequence_grad(CELL, PARAMS, XS, YS, lambda h, y: (h - y) ** 2)
    with pytest.raises(ValueError, match="carry do not fit"):
        rtrl.online(CELL, "rtrl").init(PARAMS, carry=jnp.zeros((2, 5)))


def test_fit_and_the_optimiser_refuse_bad_arguments():
    task = Copy(max_length=2)
    trainer = Trainer(task, rtrl.cells.Elman(task.input_size, 2), "closed_form", batch=1, eval_size=2)
    state = trainer.init()
    for steps, every, name in ((-4, 4, "steps"), (0, 4, "steps"), (4, 0, "eval_every"), (4, -1, "eval_every"),
                               (4.0, 4, "steps")):
        with pytest.raises(ValueError, match=f"{name} must be a positive integer"):
            fit(trainer, state, steps, every)
    for lr in (0.0, -1e-3, float("inf"), float("nan")):
        with pytest.raises(ValueError, match="lr must be a positive finite number"):
            make_optimizer("adam", lr)
    with pytest.raises(ValueError, match="clip must be a positive finite number"):
        make_optimizer("adam", 1e-3, float("inf"))
    assert np.isfinite(float(state.loss_sum))


def test_rtrl_list_wraps_whole_descriptions_and_lists_every_cell_a_preset_names(capsys, monkeypatch):
    """What a newcomer reads first. Every cell's and method's description is its docstring's whole first paragraph,
    wrapped to the terminal, never cut mid-sentence; every cell a preset names (``lru_network``, by import path)
    is in the cell list as ``--cell`` takes it (by its import path). [``first_paragraph`` back to the docstring's first
    line: ``layer_local`` and ``rtu`` are cut and the test fails; the import-path cells left out: fails.]"""
    import inspect

    from rtrl.cli import main
    from rtrl.training.presets import PRESETS

    monkeypatch.setenv("COLUMNS", "80")
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines() if " " in line.strip()) <= 80
    flat = " ".join(out.split())
    for cls in [*rtrl.cells.CELLS.values(), *(getattr(m, "func", m) for m in rtrl.methods.REGISTRY.values())]:
        own = vars(cls).get("summary")  # a class with one line per instance (SnAp: snap1's, snap2's) lists those
        if own is None:
            assert " ".join(inspect.getdoc(cls).split("\n\n")[0].split()).replace("``", "") in flat, cls  # plain text
    for name in ("snap1", "snap2"):
        assert " ".join(rtrl.methods.REGISTRY[name]().summary.split()) in flat, name
    cells = out.split("cells:")[1].split("presets (")[0]
    listed = {line.split()[0] for line in cells.splitlines() if line.startswith("  ") and not line.startswith("   ")}
    for name, preset in PRESETS.items():
        path = preset.options["cell"]
        assert path in listed, name  # as --cell takes it: an import path whole


def test_the_progress_bar_clock_starts_after_the_first_chunk_which_includes_compilation(monkeypatch, tmp_path):
    """The first chunk of a run compiles; the bar counts its steps but measures the rate and the time left from
    its end, so the first estimate is not the compilation's. A stand-in run: a 0.3 s first chunk, then two
    instant ones. [The first chunk counted like the others (``bar().update(n)``): the clock starts before the
    compilation and the assertions on ``initial`` and ``start_t`` fail.]"""
    import time

    import tqdm

    from rtrl.cli.train import train_run

    bars, compiled = [], []

    class Recorded(tqdm.tqdm):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            bars.append(self)

    class Run:
        path, config = tmp_path, type("Config", (), {"steps": 1500})

        def describe(self):
            return "a stand-in run"

        def resume_note(self):
            return None

        def last_checkpoint_step(self):
            return 0

        def status(self, record):
            return ""

        def summary(self):
            return "done"

        def train(self, on_eval, on_chunk):
            on_eval(None, {"step": 0})
            time.sleep(0.3)  # compiling
            compiled.append(time.time())
            on_chunk(None, 500)
            on_chunk(None, 500)
            on_chunk(None, 500)

    monkeypatch.setattr(tqdm, "tqdm", Recorded)
    monkeypatch.setattr("sys.stderr.isatty", lambda: True)  # the bar is drawn on a terminal only
    assert train_run(Run()) == 0
    (bar,) = bars
    assert bar.n == 1500 and bar.initial == 500
    assert bar.start_t >= compiled[0]
