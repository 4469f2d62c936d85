"""``rtrl.benchmarks.kernels``: the kernels per step read from a compiled program's HLO.

A hand-written module checks the counting rules with exact numbers; two real compiles check that it reads what
XLA writes (a matrix product per step is one library call per step, unrolled or not). Mutations tried by hand:
counting a loop body once instead of ``trip count`` times (the nested loop's 4 fusions become 1: caught), not
dividing by the steps (per-step figures doubled: caught), counting ``get-tuple-element``/``tuple`` as work,
taking the smaller branch of a conditional, counting a ``kCustom`` fusion as a fusion (all caught)."""

import jax
import jax.numpy as jnp
import pytest
from jax import lax

from oracle import XLA_DEFAULT_EMITTERS
from rtrl.benchmarks import kernels

# Entry: a loop of 5 iterations (its body holds 2 steps of a 10-step scan). Per iteration the body runs
# one fusion, one YNNPACK-style kCustom fusion, one dot, one copy, a call (1 fusion inside), a conditional whose
# branches hold 1 and 3 kernels (3 counted), and a nested loop of 4 iterations (1 fusion in its body, 1 in its
# condition); the outer condition holds 1 fusion. Outside the loop a fusion and a copy run once (setup).
# Per iteration: fusions 1 + 1 (call) + 2 (larger branch: 2 fusions) + 4 * 2 (nested) + 1 (condition) = 13,
# library 1 (kCustom) + 1 (dot) + 1 (larger branch: custom-call) = 3, other 1 copy, of which the nested loop's
# 4 * 2 = 8. Per step: halve them.
HLO = """HloModule jit_f, entry_computation_layout={(f32[2,8]{1,0})->f32[2,8]{1,0}}

%fused_computation (param_0: f32[2,8]) -> f32[2,8] {
  %param_0 = f32[2,8]{1,0} parameter(0)
  ROOT %tanh.1 = f32[2,8]{1,0} tanh(%param_0)
}

%body2 (t: (s32[], f32[2,8])) -> (s32[], f32[2,8]) {
  %t = (s32[], f32[2,8]{1,0}) parameter(0)
  %i = s32[] get-tuple-element(%t), index=0
  %a = f32[2,8]{1,0} get-tuple-element(%t), index=1
  %f = f32[2,8]{1,0} fusion(%a), kind=kLoop, calls=%fused_computation
  ROOT %r = (s32[], f32[2,8]{1,0}) tuple(%i, %f)
}

%cond2 (t: (s32[], f32[2,8])) -> pred[] {
  %t = (s32[], f32[2,8]{1,0}) parameter(0)
  %i = s32[] get-tuple-element(%t), index=0
  %c = s32[] constant(4)
  ROOT %lt = pred[] fusion(%i, %c), kind=kLoop, calls=%fused_computation
}

%called (p: f32[2,8]) -> f32[2,8] {
  %p = f32[2,8]{1,0} parameter(0)
  ROOT %f = f32[2,8]{1,0} fusion(%p), kind=kLoop, calls=%fused_computation
}

%small_branch (p: f32[2,8]) -> f32[2,8] {
  %p = f32[2,8]{1,0} parameter(0)
  ROOT %f = f32[2,8]{1,0} fusion(%p), kind=kLoop, calls=%fused_computation
}

%large_branch (p: f32[2,8]) -> f32[2,8] {
  %p = f32[2,8]{1,0} parameter(0)
  %f = f32[2,8]{1,0} fusion(%p), kind=kInput, calls=%fused_computation
  %g = f32[2,8]{1,0} fusion(%f), kind=kOutput, calls=%fused_computation
  ROOT %h = f32[2,8]{1,0} custom-call(%g), custom_call_target="lapack"
}

%body1 (t: (s32[], f32[2,8])) -> (s32[], f32[2,8]) {
  %t = (s32[], f32[2,8]{1,0}) parameter(0)
  %i = s32[] get-tuple-element(%t), index=0
  %a = f32[2,8]{1,0} get-tuple-element(%t), index=1
  %f = f32[2,8]{1,0} fusion(%a), kind=kLoop, calls=%fused_computation
  %y = f32[2,8]{1,0} fusion(%f, %a), kind=kCustom, calls=%fused_computation, backend_config={"kind":"__ynn"}
  %d = f32[2,8]{1,0} dot(%y, %a), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %cp = f32[2,8]{1,0} copy(%d)
  %b = f32[2,8]{1,0} bitcast(%cp)
  %k = f32[2,8]{1,0} call(%b), to_apply=%called
  %p = pred[] constant(true)
  %c = f32[2,8]{1,0} conditional(%p, %k, %k), branch_computations={%small_branch, %large_branch}
  %n = (s32[], f32[2,8]{1,0}) tuple(%i, %c)
  %w = (s32[],f32[2,8]) while(%n), condition=%cond2, body=%body2, backend_config={"known_trip_count":{"n":"4"}}
  ROOT %r = (s32[], f32[2,8]{1,0}) tuple(%i, %c)
}

%cond1 (t: (s32[], f32[2,8])) -> pred[] {
  %t = (s32[], f32[2,8]{1,0}) parameter(0)
  %i = s32[] get-tuple-element(%t), index=0
  %c = s32[] constant(5)
  ROOT %lt = pred[] fusion(%i, %c), kind=kLoop, calls=%fused_computation
}

ENTRY %main (x: f32[2,8]) -> f32[2,8] {
  %x = f32[2,8]{1,0} parameter(0)
  %s = f32[2,8]{1,0} fusion(%x), kind=kLoop, calls=%fused_computation
  %cx = f32[2,8]{1,0} copy(%s)
  %z = s32[] constant(0)
  %t = (s32[], f32[2,8]{1,0}) tuple(%z, %cx)
  %w = (s32[],f32[2,8]) while(%t), condition=%cond1, body=%body1, backend_config={"known_trip_count":{"n":"5"}}
  ROOT %o = f32[2,8]{1,0} get-tuple-element(%w), index=1
}
"""


def test_counting_rules_on_a_hand_written_module():
    counts = kernels.per_step(HLO, steps=10)
    assert counts == {"fusions": 6.5, "library": 1.5, "other": 0.5, "total": 8.5, "nested": 4.0,
                      "other_opcodes": {"copy": 0.5},
                      "trip_counts": [5]}


def test_a_loop_without_a_trip_count_is_refused():
    with pytest.raises(ValueError, match="no known trip count"):
        kernels.per_step(HLO.replace('"known_trip_count":{"n":"5"}', ""), steps=10)


def test_a_program_without_a_loop_is_refused():
    flat = "ENTRY %main (x: f32[2]) -> f32[2] {\n  ROOT %x = f32[2]{0} parameter(0)\n}\n"
    with pytest.raises(ValueError, match="no loop"):
        kernels.per_step(flat, steps=3)


def scan(with_dot: bool, unroll: int):
    def f(c, xs, W):
        def body(c, x):
            c = jnp.tanh(0.5 * c + x)
            return (c @ W if with_dot else c), None

        return lax.scan(body, c, xs, unroll=unroll)[0]

    return jax.jit(f, compiler_options=XLA_DEFAULT_EMITTERS)  # the kernels XLA makes by default


@pytest.mark.parametrize("unroll", [1, 2])
def test_a_matrix_product_a_step_is_one_library_call_a_step(unroll):
    """A scan of 12 steps whose step is element-wise, then the same step with a matrix product: the product is
    one library call per step whether the loop body holds one step or two."""
    c, xs, W = jnp.zeros((4, 8)), jnp.ones((12, 4, 8)), jnp.eye(8)
    plain = kernels.per_step(kernels.compiled_text(scan(False, unroll), c, xs, W), steps=12)
    with_dot = kernels.per_step(kernels.compiled_text(scan(True, unroll), c, xs, W), steps=12)
    assert plain["trip_counts"] == with_dot["trip_counts"] == [12 // unroll]
    assert plain["library"] == 0 and with_dot["library"] == 1
    assert plain["fusions"] >= 1  # the element-wise step is one kernel at least
