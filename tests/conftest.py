import jax

# float64 is the oracle's precision; float32 tests ask for it explicitly.
jax.config.update("jax_enable_x64", True)
