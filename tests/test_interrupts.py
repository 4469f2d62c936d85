"""rtrl.interrupts on tiny hand-checked sequences of Ctrl-Cs (the watcher thread's ``on_interrupt`` called
directly; ``quit_now`` replaced by a recorder, so nothing exits): deferred blocks nest, a Ctrl-C inside any depth
waits for ``poll()``, a second one quits at once, and leaving the outermost block forgets a pending one."""

import pytest

from rtrl import interrupts


def raises_interrupt(f) -> bool:
    """Whether ``f()`` raises ``KeyboardInterrupt`` (caught here: one escaping a test would stop pytest itself)."""
    try:
        f()
    except KeyboardInterrupt:
        return True
    return False


@pytest.fixture
def quits(monkeypatch):
    said = []
    monkeypatch.setattr(interrupts, "quit_now", said.append)
    monkeypatch.setattr(interrupts._State, "deferring", 0)
    monkeypatch.setattr(interrupts._State, "pending", False)
    return said


def test_outside_a_block_a_ctrl_c_quits_at_once(quits):
    interrupts.on_interrupt()
    assert quits == ["interrupted"]


def test_inside_a_block_it_waits_for_the_next_poll(quits):
    with interrupts.deferred():
        interrupts.on_interrupt()
        assert quits == []
        with pytest.raises(KeyboardInterrupt):
            interrupts.poll()
        assert not raises_interrupt(interrupts.poll)  # raised once, then forgotten
    assert quits == []


def test_a_ctrl_c_in_an_inner_block_survives_the_inner_block_ending(quits):
    with interrupts.deferred():
        with interrupts.deferred():
            interrupts.on_interrupt()
        # still inside the outer block: the pending stop is kept for the outer loop's safe point
        with pytest.raises(KeyboardInterrupt):
            interrupts.poll()
    assert quits == []


def test_a_second_ctrl_c_at_any_depth_quits_at_once(quits):
    with interrupts.deferred(), interrupts.deferred():
        interrupts.on_interrupt()
        interrupts.on_interrupt()
    assert len(quits) == 1 and "again" in quits[0]


def test_leaving_the_outermost_block_forgets_a_pending_stop(quits):
    with interrupts.deferred():
        interrupts.on_interrupt()
    assert not raises_interrupt(interrupts.poll)  # nothing pending any more: a later block starts clean
    with interrupts.deferred():
        assert not raises_interrupt(interrupts.poll)
    assert quits == []
