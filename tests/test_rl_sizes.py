"""What an RL run allocates is counted before it starts: every seed of a ``--seeds`` call (each holds its own
parameters, optimiser state, environments and traces), and every seed it runs must be a seed.

``memory_needed`` against what a run holds: for every update rule and algorithm, the bytes of the state the run
starts from (``RLState``, or the ``Seeds`` of several, as the loop makes it) and, for one rule, the argument that
XLA's compiled step takes (its ``memory_analysis``). Mutations of ``RLAssembly.memory_needed`` tried, each killed:
the count before (the parameters three times and one trace per parameter, whatever the rule: 0.70 of the split
rule's state, 0.74 of QRC's, 0.85 of Adam's under ``update_every``, 1.24 of plain SGD's); the rule's state left out
(0.29 to 0.53)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rtrl.config import MAX_SEED, OptionError
from rtrl.rl.assemble import assemble
from rtrl.rl.config import RLConfig
from rtrl.rl.loop import Program, runner

# tiny runs whose parameters and traces outweigh the torso's state, so that a trace set missed shows
TINY = {"env": "tmaze", "hidden": 4, "head_hidden": 16, "envs": 3, "steps": 4}
RULES = {
    "adam": {"optimizer": "adam"},
    "sgd": {"optimizer": "sgd"},
    "obgd": {"optimizer": "obgd"},
    "adaptive_obgd": {"optimizer": "adaptive_obgd"},
    "intentional": {"optimizer": "intentional"},
    "split": {"optimizer": "intentional", "critic_lr": 0.5},
    "split-seeds": {"optimizer": "intentional", "critic_lr": 0.5, "seeds": 2},
    "split-networks": {"optimizer": "intentional", "critic_lr": 0.5, "critic_network": True},
    "adam-every": {"optimizer": "adam", "update_every": 2},
    "q": {"algorithm": "q"},
    "qrc": {"algorithm": "qrc"},
    "qrc-seeds": {"algorithm": "qrc", "seeds": 2},
    "sarsa": {"algorithm": "sarsa"},
    "peng": {"algorithm": "peng", "optimizer": "obgd"},
    "fidelity-float64": {"fidelity_every": 3, "dtype": "float64"},
}


def held_bytes(tree) -> int:
    return sum(int(np.prod(a.shape)) * a.dtype.itemsize for a in jax.tree.leaves(tree))


def start_state(config: RLConfig):
    """The shapes of the state a run of ``config`` starts from, as the loop makes it (nothing computed)."""
    program = Program(config)
    if config.seeds > 1:
        return jax.eval_shape(lambda: program.stacked(np.arange(config.seeds, dtype=np.uint32)))
    return jax.eval_shape(lambda: program.fresh(0, config.envs, program.reset(config.envs)))


def test_the_memory_needed_grows_with_the_seeds_run_side_by_side():
    one = assemble(RLConfig(env="tmaze", hidden=4, envs=2)).memory_needed()
    assert assemble(RLConfig(env="tmaze", hidden=4, envs=2, seeds=3)).memory_needed() == 3 * one
    with_head = assemble(RLConfig(env="tmaze", hidden=4, envs=2, head_hidden=64)).memory_needed()
    # the tanh layer's (4, 64) weights and 64 biases at least, float32: 3 copies and the traces of 2 environments
    assert with_head - one >= 4 * (3 + 2) * (4 * 64 + 64)


def test_the_last_seed_of_a_call_is_in_range():
    assert RLConfig(seed=MAX_SEED - 2, seeds=3).seed == MAX_SEED - 2  # seeds MAX-2, MAX-1, MAX
    with pytest.raises(OptionError, match="seed \\+ seeds - 1 must be at most"):
        RLConfig(seed=MAX_SEED - 1, seeds=3)


@pytest.mark.parametrize("rule", sorted(RULES))
def test_the_memory_needed_is_within_a_tenth_of_the_state_every_rule_holds(rule):
    """Every rule's state counted: Adam's moments, the intentional step's statistics, the split rule's two sets of
    traces (and no third), QRC's secondary weights and their traces, ``every``'s sum, each seed's. The remainder
    (the pending step, the tallies, the wrappers' statistics, keys) is a few percent of these tiny runs; the
    estimate does not exceed the state (it is a lower bound of what a run needs)."""
    config = RLConfig(**{**TINY, **RULES[rule]})
    needed, held = assemble(config).memory_needed(), held_bytes(start_state(config))
    assert 0.9 * held <= needed <= held, (needed, held)


def test_the_memory_needed_is_within_a_tenth_of_the_compiled_steps_argument():
    """The split rule's run compiled: the argument XLA's step takes is the state (and the step count), and the
    estimate is within 10% of it."""
    config = RLConfig(**TINY, **RULES["split"])
    run = runner(config)
    state = run.init(0)
    argument = run.compiled.lower(state, 1).compile().memory_analysis().argument_size_in_bytes
    assert argument == held_bytes((state, jnp.asarray(1)))  # the state and the traced step count
    assert 0.9 * argument <= assemble(config).memory_needed() <= argument
