"""An optimiser that diverges on purpose, for the tests of what a diverging run does."""

import jax
import jax.numpy as jnp
import optax


def poisoned_adam(at_update: int, lr: float = 0.01) -> optax.GradientTransformation:
    """Adam whose ``at_update``-th update is NaN: the loss becomes NaN at a known step."""
    adam = optax.adam(lr)

    def init(params):
        return (adam.init(params), jnp.zeros((), jnp.int32))

    def update(grads, state, params=None):
        updates, inner = adam.update(grads, state[0], params)
        poison = jnp.where(state[1] + 1 == at_update, jnp.nan, 0.0)
        return jax.tree.map(lambda u: u + poison, updates), (inner, state[1] + 1)

    return optax.GradientTransformation(init, update)
