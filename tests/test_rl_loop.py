"""``rtrl.rl.train``'s callbacks: the order of the trainer's (``rtrl.driver``'s), state first, at every record."""

from rtrl.rl import RLConfig, train
from rtrl.rl.loop import RLState


def test_on_record_gets_the_state_then_the_record_at_each_record():
    seen = []
    config = RLConfig(env="tmaze", hidden=2, envs=2, steps=4, record_every=2, fidelity_every=0)
    state, records = train(config, on_record=lambda state, record: seen.append((state, record)))
    assert [type(s) for s, _ in seen] == [RLState, RLState]
    assert [r for _, r in seen] == records and [r["step"] for r in records] == [2, 4]
    assert int(seen[-1][0].step) == int(state.step) == 4
