"""The gradient measures (``rtrl.compare``) in every float dtype, a zero reference included."""

import math

import jax.numpy as jnp
import pytest

from rtrl.compare import cosine, relative_error


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.float64, jnp.bfloat16])
def test_relative_error_and_cosine_are_finite_for_zero_gradients_in_every_dtype(dtype):
    g, zero = jnp.full((3,), 2.0, dtype), jnp.zeros((3,), dtype)
    assert relative_error({"a": g}, {"a": zero}) == pytest.approx(2 * math.sqrt(3), rel=1e-2)  # absolute
    assert relative_error({"a": zero}, {"a": zero}) == 0.0
    assert cosine({"a": zero}, {"a": g}) == 0.0 and cosine({"a": g}, {"a": zero}) == 0.0


def test_relative_error_is_the_worst_parameter_and_cosine_the_whole_gradient():
    ref = {"a": jnp.array([3.0, 4.0]), "b": jnp.array([1.0])}
    g = {"a": jnp.array([3.0, 4.0]) * 1.5, "b": jnp.array([-1.0])}
    assert relative_error(g, ref) == pytest.approx(2.0)  # b: |-1 - 1| / 1; a: 0.5
    assert cosine(g, ref) == pytest.approx(36.5 / math.sqrt(57.25 * 26))  # [4.5, 6, -1] . [3, 4, 1]
