"""A run is bounded by the work it asks for, counted before anything starts (``rtrl.devices.check_work``,
``RLAssembly.work_needed``), not only by the memory it holds: a size typed by mistake is refused at once, in one
line naming the options to make smaller, with nothing written."""

from __future__ import annotations

import pytest

from rtrl.cli import main
from rtrl.devices import MAX_RECORDED, MAX_UPDATES, check_work
from rtrl.rl.assemble import assemble
from rtrl.rl.config import RLConfig


def test_the_bound_is_on_the_count_itself():
    check_work(MAX_UPDATES, MAX_RECORDED)  # at the bound: allowed
    with pytest.raises(ValueError, match=r"asks for 1e\+14 float updates .*more than the 1e\+14 a run may"):
        check_work(MAX_UPDATES + 1)
    with pytest.raises(ValueError, match=r"gather 10,000,001 per-seed figures \(seeds x records\)"):
        check_work(0, MAX_RECORDED + 1, "--seeds")


def test_the_work_of_a_tiny_run_counted_by_hand():
    """An Elman torso of 2 on tmaze (3 inputs, 3 actions), linear heads, 10 steps x 2 environments x 3 seeds,
    records every 4 steps (3 records: 4, 8, 10)."""
    a = assemble(RLConfig(env="tmaze", cell="elman", hidden=2, envs=2, steps=10, record_every=4, seeds=3))
    torso = 3 * 2 + 2 + 2 * 2  # W, b, R
    heads = (2 * 3 + 3) + (2 * 1 + 1)  # policy, value
    import jax

    from rtrl.devices import floats_of

    memory = floats_of(lambda: a.agent.torso.learner.init(a.agent.torso.cell.init(jax.random.PRNGKey(0))))
    assert floats_of(lambda: a.agent.init(jax.random.PRNGKey(0))) == torso + heads
    assert a.work_needed() == (10 * 2 * 3 * (torso + heads + memory), 3 * 3)
    # the actor's and the critic's steps apart (--critic-lr): two sets of traces per environment, both updated, each
    # on the leaves its gradient reaches: the critic's the torso and the value head, the actor's the torso and the
    # policy head
    split = assemble(RLConfig(env="tmaze", cell="elman", hidden=2, envs=2, steps=10, record_every=4, seeds=3,
                              optimizer="intentional", lr=0.05, critic_lr=0.5))
    critic, actor = torso + (2 * 1 + 1), torso + (2 * 3 + 3)
    assert split.work_needed() == (10 * 2 * 3 * (critic + actor + memory), 3 * 3)


@pytest.mark.parametrize("argv, said", [
    # fits in memory (about 0.6 GiB), but 1e7 steps of 4e7 parameters: days
    (["--head-hidden", "1000000", "--envs", "1", "--steps", "10000000"], "float updates"),
    # 100,000 seeds recorded every step for 1,000 steps: 1e8 figures gathered on the host
    (["--hidden", "4", "--envs", "2", "--seeds", "100000", "--steps", "1000", "--record-every", "1"],
     "per-seed figures"),
])
def test_a_run_asking_for_days_of_work_is_refused_up_front(tmp_path, capsys, argv, said):
    out = tmp_path / "run"
    assert main(["rl", "--env", "tmaze", *argv, "--quiet", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.splitlines() == [err] and said in err and "choose a smaller --hidden, --envs, --seeds" in err, err
    assert not out.exists()
