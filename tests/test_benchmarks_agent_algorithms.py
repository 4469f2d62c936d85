"""``python -m rtrl.benchmarks.agent --algorithms``: the agent step of every algorithm timed in one interleaved
call, each against its own forward-only step and its own memoryless agent (what is timed and the rows' arithmetic,
not the figures: each call is timed once)."""

import jax
import jax.numpy as jnp
import pytest

from rtrl.benchmarks import agent, timing
from rtrl.rl.config import RLConfig

ALL = tuple(agent.ALGORITHMS)


def test_every_algorithm_has_a_row_per_torso_and_count_against_its_own_memoryless_row(monkeypatch, capsys):
    """Tiny sizes, every algorithm (the Gaussian one on pendulum-p among them): a row per algorithm, torso and
    count, each run configured as that algorithm (its agent's options accepted by the strict config), positive
    times, ``vs_memoryless`` over the same algorithm's memoryless row. [the memoryless row of ``ac`` for every
    algorithm; a Q agent's forward step reading an actor-critic's heads]"""
    timed = []
    real = timing.interleaved_seconds
    monkeypatch.setattr(agent, "interleaved_seconds",
                        lambda calls, **kw: timed.append(list(calls)) or real(calls, 1, 0.0))
    rows = agent.measure_all(["mingru"], [4], [2], steps=2, algorithms=ALL)
    assert len(timed) == 1 and len(timed[0]) == len(ALL) * 2 * 2  # one call: algorithms x torsos x (full, forward)
    assert [(r["algorithm"], r["cell"]) for r in rows] == [(a, t) for a in ALL for t in ("memoryless", "mingru")]
    for r in rows:
        assert r["full_seconds"] > 0 and r["forward_seconds"] > 0 and r["env_steps_per_second"] > 0
        assert r["ratio_to_forward"] == pytest.approx(r["full_seconds"] / r["forward_seconds"])
    for memoryless, recurrent in zip(rows[::2], rows[1::2], strict=True):
        assert memoryless["algorithm"] == recurrent["algorithm"] and memoryless["vs_memoryless"] == 1.0
        assert recurrent["vs_memoryless"] == pytest.approx(recurrent["full_seconds"] / memoryless["full_seconds"])
    printed = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in printed] == [a for a in ALL for _ in range(2)]


def test_each_algorithm_runs_its_own_agent_and_step_rule():
    """The names mean what they say: the algorithm, the step rule (the intentional ones ``intentional``, as the
    memory-chain-L-q presets' agent: eta 0.5, lambda 0.8), the Gaussian agent on pendulum-p; and ``--algorithms``
    refuses a name it does not know."""
    configs = {name: RLConfig(**{**options, "hidden": 4, "envs": 2}) for name, options in agent.ALGORITHMS.items()}
    assert {name: (c.algorithm, c.optimizer) for name, c in configs.items()} == {
        "ac": ("ac", "adam"), "ac-intentional": ("ac", "intentional"), "q": ("q", "adam"),
        "q-intentional": ("q", "intentional"), "qrc": ("qrc", "adam"), "sarsa": ("sarsa", "adam"),
        "gaussian": ("ac", "adam")}
    assert (configs["q-intentional"].lr, configs["q-intentional"].lam) == (0.5, 0.8)
    assert configs["gaussian"].env == "pendulum-p" and configs["q"].env == "memory-chain"
    with pytest.raises(SystemExit):
        agent.main(["--algorithms", "dqn"])
    with pytest.raises(ValueError, match="algorithms must be among"):
        agent.measure(["mingru"], 4, [2], 2, ("dqn",))


def test_a_q_agents_forward_step_is_epsilon_greedy_on_its_action_values():
    """``sampled``: a Q agent's action the argmax of its values where it does not explore (epsilon 0), both actions
    drawn where it always does (epsilon 1, equal values); the Gaussian agent's a draw about its mean."""
    key, h = jax.random.key(1), jnp.eye(3)
    params = {"q": {"W": jnp.array([[0.0, 1.0], [1.0, 0.0], [0.0, 1.0]]), "b": jnp.zeros(2)}}
    assert agent.sampled(params, h, key, 0.0).tolist() == [1, 0, 1]
    assert set(agent.sampled(params, jnp.zeros((64, 3)), key, 1.0).tolist()) == {0, 1}
    head = {"W": jnp.ones((3, 1)), "b": jnp.zeros(1)}
    gaussian = {"policy": head, "value": head, "log_std": jnp.full((1,), -20.0)}
    assert jnp.allclose(agent.sampled(gaussian, h, key, 0.0), 1.0, atol=1e-6)
