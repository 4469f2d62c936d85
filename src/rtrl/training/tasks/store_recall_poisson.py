"""Store-recall as the LSNN tutorial and the e-prop paper lay it out (Bellec et al. 2018, 2020; official code
``IGITUGraz/LSNN-official``, ``bin/tutorial_storerecall_with_LSNN.py`` and ``tutorial_storerecall_utils.py``), one
step = 1 ms.

An episode is a sentence of ``symbols`` symbols of ``symbol_steps`` steps each, every symbol a digit (0 or 1), a
store command or a recall command:

* the digits are fair coins; a walk over the symbols, starting after a recall, puts a store where it waits for a store
  and a recall where it waits for a recall, each with probability ``p = 1 / (1 + delay)`` per symbol (``delay``:
  the tutorial's expected delay in symbols, 6), so stores and recalls alternate;
* a sentence is kept only if it is valid as the tutorial's ``validity_test`` says (drawn again otherwise): at least
  one store, a recall after the last store, and a digit right after every store;
* the value shown with a store is the digit after it (the value channels of the store's symbol copy the next
  symbol's), and that next symbol's value channels are inverted with probability 1/2 (so the value after a store
  tells nothing of the one to keep).

Input: ``4 * channels`` Poisson spike trains in four groups (value 0, value 1, store, recall), each firing at ``rate``
per step while its symbol is shown (value groups: the symbol's one-hot value; store and recall: their commands).
Target: at every step of a recall symbol, the value shown with the last store before it (softmax cross-entropy over
two logits; the tutorial scores the recall symbol's mean output, one decision per recall). Metric: ``accuracy``
over the recall symbols' steps; chance 0.5 (the value is a fair coin). Defaults: the tutorial's 100 inputs, 12
symbols of 200 ms (trials of 2,400 ms), 50 Hz, delay 6.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax

from rtrl.cells.spiking import set_number
from rtrl.checks import default_dtype
from rtrl.training.tasks.base import Classification, Episodes

STORE, RECALL = 2, 3  # symbol codes after the digits 0 and 1


def walk_symbols(u: jax.Array, p: float) -> tuple[jax.Array, jax.Array]:
    """A sentence from ``2 S`` uniforms (the digits' coins, then the walk's): the symbols ``(S,)`` and whether the
    sentence is valid (module docstring)."""
    S = u.shape[0] // 2
    digits = (u[:S] < 0.5).astype(jnp.int32)

    def step(stored, ui):
        store, recall = ~stored & (ui < p), stored & (ui < p)
        return (stored | store) & ~recall, jnp.where(store, STORE, jnp.where(recall, RECALL, -1))

    stored, signals = lax.scan(step, jnp.zeros((), bool), u[S:])
    symbols = jnp.where(signals >= 0, signals, digits)
    store_then_recall = (symbols[:-1] == STORE) & (symbols[1:] == RECALL)
    return symbols, jnp.any(symbols == STORE) & ~stored & ~jnp.any(store_then_recall)


def symbol_gates(symbols: jax.Array, flips: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``(S, 4)``: which input group is on during each symbol (value 0, value 1, store, recall), with the store's
    value copied from the next symbol and that symbol's value inverted where ``flips`` (at the store); and ``(S,)``:
    each symbol's target, the value kept by the last store before it (0 before any)."""
    symbols = symbols.astype(jnp.int32)
    value = jax.nn.one_hot(symbols, 2, dtype=jnp.int32)  # zero for the commands
    after = jnp.roll(value, -1, axis=0)
    store = symbols == STORE
    inverted = jnp.roll(store & flips, 1) & (symbols < STORE)
    value = jnp.where(store[:, None], after, jnp.where(inverted[:, None], 1 - value, value))
    kept = lax.scan(lambda k, sv: (jnp.where(sv[0], sv[1], k),) * 2, jnp.zeros((), jnp.int32),
                    (store, jnp.roll(symbols, -1)))[1]
    gates = jnp.concatenate([value, store[:, None], (symbols == RECALL)[:, None]], axis=1)
    return gates, kept


class StoreRecallPoisson(Classification):
    symbols: int = 12
    symbol_steps: int = 200
    channels: int = 25
    rate: float = 0.05
    delay: float = 6.0

    name = "store_recall_poisson"
    summary = ("The LSNN tutorial's store-recall: Poisson inputs show values, store and recall commands, 200 ms a "
               "symbol; at each recall, give back the value shown with the last store.")
    output_size = 2

    def __post_init__(self) -> None:
        super().__post_init__()
        set_number(self, "rate", 0.0, 1.0, open_high=False)
        set_number(self, "delay", 0.0)
        if self.symbols < 3:
            raise ValueError(f"symbols must be at least 3 (a store, its value, a recall), got {self.symbols}")
        # Sentences are drawn until one is valid (a store recalled within the sentence): with the store and recall
        # commands this rare, a valid one takes ~delay^2 / symbols^2 draws (delay 10^12: the draw never ends).
        if self.delay > 10 * self.symbols:
            raise ValueError(f"delay must be at most 10 x symbols = {10 * self.symbols} (the expected wait between "
                             f"commands, in symbols: a longer one makes a sentence with a store and its recall too "
                             f"rare to draw), got {self.delay}")

    @property
    def input_size(self) -> int:
        return 4 * self.channels

    @property
    def length(self) -> int:
        return self.symbols * self.symbol_steps

    @property
    def chance(self) -> float:
        return 0.5

    def sentence(self, key: jax.Array) -> tuple[jax.Array, jax.Array]:
        """A valid sentence's symbols and the store flips, drawn again until valid (the tutorial's rejection)."""
        p = 1.0 / (1.0 + self.delay)

        def draw(attempt):
            u = jax.random.uniform(jax.random.fold_in(key, attempt), (3 * self.symbols,))
            symbols, valid = walk_symbols(u[: 2 * self.symbols], p)
            return symbols, u[2 * self.symbols:] < 0.5, valid

        def again(state):
            return ~state[3]

        def next_try(state):
            return (state[0] + 1, *draw(state[0] + 1))

        _, symbols, flips, _ = lax.while_loop(again, next_try, (jnp.zeros((), jnp.int32), *draw(0)))
        return symbols, flips

    def episode(self, key: jax.Array) -> Episodes:
        k_sentence, k_spikes = jax.random.split(key)
        symbols, flips = self.sentence(k_sentence)
        gates, kept = symbol_gates(symbols, flips)
        dtype = default_dtype()
        rates = self.rate * jnp.repeat(jnp.repeat(gates, self.symbol_steps, axis=0), self.channels, axis=1)
        xs = (jax.random.uniform(k_spikes, rates.shape) < rates).astype(dtype)
        recalling = jnp.repeat(symbols == RECALL, self.symbol_steps).astype(dtype)
        return Episodes(xs, jnp.repeat(kept, self.symbol_steps), recalling)
