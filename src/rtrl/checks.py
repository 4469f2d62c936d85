"""Argument checks shared by the library's constructors, and the default floating dtype."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

MAX_COUNT = 2**31 - 1  # sizes and counts are 32-bit integers in JAX (without x64)


def positive_int_expected(value: Any) -> str | None:
    """The one positive-integer rule: ``None`` for an int from 1 to ``MAX_COUNT`` (a bool is not one), else what
    was expected (every check of a size or count, in the library, a configuration or an argument, says this)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        return "a positive integer"
    if value > MAX_COUNT:
        return f"at most {MAX_COUNT:,} (2**31 - 1)"
    return None


def check_positive_int(name: str, value: Any) -> None:
    """``ValueError`` naming ``name`` unless ``value`` is an int from 1 to ``MAX_COUNT`` (a bool is not)."""
    expected = positive_int_expected(value)
    if expected:
        got = f"{value:,}" if expected.startswith("at most") else repr(value)
        raise ValueError(f"{name} must be {expected}, got {got}")


def check_shares(count: int, devices: int, name: str = "batch", share: str = "streams") -> None:
    """The one rule of splitting: ``ValueError`` unless ``devices`` divides ``count`` (``name``: the batch or the
    environments), as each device takes an equal share of the ``share``."""
    if count % devices:
        raise ValueError(f"{name} must be a multiple of devices={devices} (each device takes an equal share of the "
                         f"{share}), got {count}")


def default_dtype(dtype=None) -> jnp.dtype:
    """``dtype``, or JAX's default float when it is ``None`` (float64 when x64 is enabled, else float32); a
    ``TypeError`` naming ``dtype`` unless it is a floating (or complex) dtype: parameters and carries are
    differentiated, and ``jax.grad`` takes no integers."""
    if dtype is None:
        return jax.dtypes.canonicalize_dtype(jnp.float64)
    try:
        dtype = jnp.dtype(dtype)
    except TypeError:
        raise TypeError(f"dtype must be a floating dtype such as 'float32' or jnp.float64, got {dtype!r}") from None
    if not jnp.issubdtype(dtype, jnp.inexact):
        raise TypeError(f"dtype must be a floating dtype such as 'float32' or jnp.float64, got {dtype.name}")
    return dtype


def first_non_finite(named) -> tuple[str, float] | None:
    """The name and value of the first NaN or infinity among ``(name, array)`` pairs (arrays that are not
    floating-point have none); ``None`` if every value is finite."""
    for name, leaf in named:
        a = np.asarray(leaf)
        if np.issubdtype(a.dtype, np.inexact) and not np.isfinite(a).all():
            return name, float(a[~np.isfinite(a)].flat[0])
    return None
