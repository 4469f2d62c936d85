"""The method "auto": the cheapest exact traces, found from the step alone, on library cells and plain functions."""

import jax
import pytest

import rtrl
from oracle import EXACT_TOL, perturbed, random_carry, random_problem, squared_error, worst_error
from rtrl.benchmarks.adapters import plain_cell
from rtrl.cells import ELSTM, GRU, IIR2, LRU, RTU, AdaptiveIIR2, Elman, Stack
from rtrl.compare import relative_error

D, N = 3, 4
LIBRARY = {
    "Elman": (lambda: Elman(D, N), "closed_form"),
    "GRU": (lambda: GRU(D, N), "rtrl"),
    "IIR2": (lambda: IIR2(D, N), "closed_form"),
    "AdaptiveIIR2": (lambda: AdaptiveIIR2(D, N, parameterisation="stable"), "closed_form"),
    "ELSTM": (lambda: ELSTM(D, N), "closed_form"),
    "Stack": (lambda: Stack((ELSTM(D, N), ELSTM(N, N))), "rtrl"),  # two element-wise layers make a dense stack
    "LRU": (lambda: LRU(D, N), "closed_form"),
    "RTU": (lambda: RTU(D, N, variant="nonlinear"), "closed_form"),
}


@pytest.mark.parametrize("name", sorted(LIBRARY))
def test_auto_on_every_library_cell_is_its_cheapest_exact_method(name):
    """"auto" becomes that method itself, whose exactness the cell's own tests hold to BPTT."""
    make, expected = LIBRARY[name]
    cell = make()
    assert rtrl.inspect(cell).method == expected
    assert rtrl.methods.resolve("auto", cell) == rtrl.methods.resolve(expected)
    assert rtrl.online(cell, "auto").method == rtrl.methods.resolve(expected)


def test_auto_through_sequence_grad_equals_bptt():
    cell = Stack((ELSTM(2, 3), ELSTM(3, 3)))
    params, xs, ys = random_problem(cell, 20, (2,), seed=0)
    carries = (cell.initial_carry((2,)), random_carry(cell, (2,), 1))
    error, where = worst_error(cell, ("auto",), perturbed(params, 2), xs, ys, carries, (1, 2, 3, 20))
    assert error <= EXACT_TOL, where


# -- element-wise cells written as plain functions of one example, with the library's parameter names ----------
ORDER = {"ELSTM": 1, "IIR2": 2, "AdaptiveIIR2": 2}


def plain(name):
    cell, library = plain_cell(name, D, N)
    return cell, library, ORDER[name]


@pytest.mark.parametrize("name", ["ELSTM", "IIR2"])
def test_auto_on_a_plain_function_is_diagonal_with_traces_of_parameter_size_times_state_order(name):
    cell, library, order = plain(name)
    info = rtrl.inspect(cell)
    assert info.method == "diagonal"
    recurrent = sum(a.size for p, a in library.init(jax.random.PRNGKey(0)).items()
                    if not info.roles[p].startswith("readout"))
    assert info.trace_floats <= recurrent * order * (2 if name == "IIR2" else 1)  # W, b reach z1, z2 as well
    assert info.trace_floats == rtrl.inspect(library).memory["diagonal"]
    assert "readout" in info.roles["W_o"] if name == "ELSTM" else "per-neuron" in info.roles["b"]


@pytest.mark.parametrize("name", ["ELSTM", "IIR2"])
def test_auto_on_a_plain_function_equals_diagonal_on_the_library_cell_and_bptt(name):
    cell, library, _ = plain(name)
    params, xs, ys = random_problem(library, 30, (2,), seed=3)
    params = perturbed(params, 4)
    carries = (cell.initial_carry((2,)), random_carry(cell, (2,), 5))
    error, where = worst_error(cell, ("auto",), params, xs, ys, carries, (1, 2, 3, 30))
    assert error <= EXACT_TOL, where
    _, ours = rtrl.sequence_grad(cell, params, xs, ys, squared_error, method="auto")
    _, theirs = rtrl.sequence_grad(library, params, xs, ys, squared_error, method="diagonal")
    assert relative_error(ours, theirs) <= EXACT_TOL


def test_auto_without_a_cell_stays_auto_and_is_listed():
    assert "auto" in rtrl.METHODS
    assert rtrl.methods.resolve("auto").name == "auto"
    assert isinstance(rtrl.methods.resolve("auto", GRU(2, 3)), rtrl.methods.DenseRTRL)


def test_inspect_tells_a_person_the_roles_and_the_memory():
    text = str(rtrl.inspect(ELSTM(D, N)))
    for word in ("auto -> closed_form", "element-wise over 4 neurons", "W_o", "readout", "projection",
                 "per-neuron", "diagonal", "rtrl"):
        assert word in text, (word, text)
    gru = rtrl.inspect(GRU(D, N))
    assert gru.trace_floats == N * sum(a.size for a in GRU(D, N).init(jax.random.PRNGKey(0)).values())
    assert "couples neurons" in gru.carry and "diagonal" not in gru.memory


# -- whole sequences: the candidates timed on the call's shapes --------------------------------------------------
@pytest.fixture
def no_choices(monkeypatch):
    """An empty store of measured choices, so each test measures afresh."""
    monkeypatch.setattr(rtrl.sequence, "_choices", {})


def test_the_candidates_for_a_whole_sequence_add_chunked_where_the_recurrence_is_declared_element_wise():
    names = {name: tuple(m.name for m in rtrl.methods.Auto().sequence_candidates(make()))
             for name, (make, _) in LIBRARY.items()}
    assert names == {"Elman": ("closed_form",), "GRU": ("rtrl",), "IIR2": ("closed_form", "chunked"),
                     "AdaptiveIIR2": ("closed_form", "chunked"), "ELSTM": ("closed_form", "chunked"),
                     "Stack": ("rtrl",), "LRU": ("closed_form", "chunked"), "RTU": ("closed_form", "chunked")}
    assert rtrl.methods.Auto(trace_dtype="bfloat16").sequence_candidates(ELSTM(D, N))[1:] == ()  # chunked takes none
    assert len(rtrl.methods.Auto().sequence_candidates(plain("ELSTM")[0])) == 1  # a plain function declares nothing
    assert "faster of closed_form and chunked" in str(rtrl.inspect(LRU(D, N)))
    assert "faster of" not in str(rtrl.inspect(Elman(D, N)))


@pytest.mark.usefixtures("no_choices")
def test_the_candidate_timed_fastest_is_kept_and_measured_once_per_shape():
    """A stub clock: whichever candidate it says is faster is chosen; a second call with the same shapes asks it
    nothing and keeps the first choice; other shapes are measured again."""
    cell = LRU(D, N)
    params, xs, ys = random_problem(cell, 6, (2,), seed=0)
    carry = cell.initial_carry((2,))
    candidates = rtrl.methods.Auto().sequence_candidates(cell)
    asked = []

    def clock(costs):
        def seconds(fn):
            asked.append(fn.args[5].name)  # the method, as sequence._compiled takes it
            return costs[fn.args[5].name]
        return seconds

    def pick(xs, ys, costs):
        return rtrl.sequence.fastest(cell, candidates, params, xs, ys, squared_error, carry, clock(costs)).name

    assert pick(xs, ys, {"closed_form": 2.0, "chunked": 1.0}) == "chunked"
    assert asked == ["closed_form", "chunked"]
    assert pick(xs, ys, {"closed_form": 1.0, "chunked": 2.0}) == "chunked" and len(asked) == 2  # kept, not re-timed
    assert pick(xs[:5], ys[:5], {"closed_form": 1.0, "chunked": 2.0}) == "closed_form" and len(asked) == 4


@pytest.mark.usefixtures("no_choices")
def test_auto_on_a_whole_sequence_times_once_equals_bptt_and_says_what_it_chose():
    cell = ELSTM(D, N)
    params, xs, ys = random_problem(cell, 9, (2,), seed=3)
    params = perturbed(params, 4)
    assert rtrl.sequence.chosen(cell, params, xs, ys, squared_error) is None  # not yet measured
    _, ours = rtrl.sequence_grad(cell, params, xs, ys, squared_error, method="auto")
    _, bptt = rtrl.sequence_grad(cell, params, xs, ys, squared_error, method="bptt")
    assert relative_error(ours, bptt) <= EXACT_TOL
    assert rtrl.sequence.chosen(cell, params, xs, ys, squared_error).name in ("closed_form", "chunked")
    assert len(rtrl.sequence._choices) == 1
    rtrl.sequence_grad(cell, params, xs, ys, squared_error, method=rtrl.methods.Auto())  # the object: same key
    assert len(rtrl.sequence._choices) == 1


@pytest.mark.usefixtures("no_choices")
def test_auto_inside_a_users_jit_takes_the_online_choice_without_timing():
    cell = ELSTM(D, N)
    params, xs, ys = random_problem(cell, 7, (2,), seed=5)
    grads = jax.jit(lambda p: rtrl.sequence_grad(cell, p, xs, ys, squared_error, method="auto")[1])(params)
    _, bptt = rtrl.sequence_grad(cell, params, xs, ys, squared_error, method="bptt")
    assert relative_error(grads, bptt) <= EXACT_TOL
    assert rtrl.sequence._choices == {}
