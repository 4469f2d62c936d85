"""What an RL run allocates is counted before it starts: every seed of a ``--seeds`` call (each holds its own
parameters, optimiser state, environments and traces), and every seed it runs must be a seed."""

import pytest

from rtrl.config import MAX_SEED, OptionError
from rtrl.rl.assemble import assemble
from rtrl.rl.config import RLConfig


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
