"""Adapters, rule by rule, against the framework's own calls: ``from_flax``'s ``init(key)`` is ``module.init`` with
that key, an nnx cell keeps the carry's dtype whatever its module computes in, and ``from_import_path`` builds an
nnx cell with the sizes in the order asked for."""

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from rtrl.cells import from_flax, from_nnx
from rtrl.cells.adapters import from_import_path

D, N = 3, 5  # unequal, so a swap of the two sizes shows


def test_linen_init_is_the_modules_init_with_the_same_key():
    """``init(k)`` equals ``module.init(k, zero carry, zero input)["params"]`` called here (in the default float),
    and two keys give two different parameter sets (the mutant initialising from ``PRNGKey(0)`` gives the same)."""
    module = nn.GRUCell(features=N)
    cell = from_flax(module, input_size=D)
    for seed in (1, 2):
        key = jax.random.PRNGKey(seed)
        theirs = module.init(key, jnp.zeros(N), jnp.zeros(D))["params"]
        ours = cell.init(key)
        assert jax.tree.structure(ours) == jax.tree.structure(theirs)
        for a, b in zip(jax.tree.leaves(ours), jax.tree.leaves(theirs), strict=True):
            assert a.dtype == jnp.float64
            np.testing.assert_array_equal(a, b.astype(jnp.float64))
    first, second = (jax.tree.leaves(cell.init(jax.random.PRNGKey(s))) for s in (1, 2))
    assert all(not np.array_equal(a, b) for a, b in zip(first, second, strict=True) if a.ndim == 2)  # kernels


def test_an_nnx_cell_computing_in_float32_keeps_a_float64_carry():
    """nnx.SimpleCell computes in float32 (its default dtype) even from float64 parameters and carry; the adapter
    hands the new carry back in the carry's own dtype (a scan needs it fixed), with the module's values."""
    module = nnx.SimpleCell(D, N, rngs=nnx.Rngs(0))
    cell = from_nnx(module)
    params = cell.init(jax.random.PRNGKey(0), jnp.float64)
    carry = jnp.linspace(-0.5, 0.5, N, dtype=jnp.float64)
    x = jnp.arange(D, dtype=jnp.float64) / D
    assert module(carry, x)[0].dtype == jnp.float32  # why the rule exists
    new, h = cell.step(params, carry, x)
    assert new.dtype == jnp.float64
    np.testing.assert_allclose(new, module(carry, x)[0], rtol=1e-6, atol=1e-7)
    batched, _ = cell.step(params, jnp.stack([carry, -carry]), jnp.stack([x, x]))
    assert batched.dtype == jnp.float64


def test_import_path_builds_an_nnx_cell_of_input_size_then_hidden_size():
    """``from_import_path("flax.nnx:GRUCell", input_size=3, hidden_size=5)`` is ``nnx.GRUCell(3, 5)``: the same
    parameter shapes (and values: both seeded with ``nnx.Rngs(0)``), stepping (3,) to h of (5,) as the module does."""
    cell = from_import_path("flax.nnx:GRUCell", input_size=D, hidden_size=N)
    module = nnx.GRUCell(D, N, rngs=nnx.Rngs(0))
    assert (cell.input_size, cell.hidden_size) == (D, N)
    theirs = nnx.split(module, nnx.Param, ...)[1]
    ours = cell.init(jax.random.PRNGKey(0), jnp.float32)
    assert jax.tree.map(jnp.shape, ours) == jax.tree.map(jnp.shape, theirs)
    jax.tree.map(np.testing.assert_array_equal, ours, theirs)
    carry = jnp.linspace(-0.5, 0.5, N, dtype=jnp.float32)
    x = jnp.arange(D, dtype=jnp.float32) / D
    new, h = cell.step(ours, carry, x)
    assert h.shape == (N,) and new.shape == (N,)
    jax.tree.map(np.testing.assert_array_equal, (new, h), module(carry, x))
