"""Argument checks shared by the library's constructors, and the default floating dtype."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp


def check_positive_int(name: str, value: Any) -> None:
    """``ValueError`` naming ``name`` unless ``value`` is an int >= 1 (a bool is not)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")


def default_dtype(dtype=None) -> jnp.dtype:
    """``dtype``, or JAX's default float when it is ``None`` (float64 when x64 is enabled, else float32)."""
    return jnp.dtype(dtype) if dtype is not None else jax.dtypes.canonicalize_dtype(jnp.float64)
