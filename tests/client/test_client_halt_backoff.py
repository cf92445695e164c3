"""The halt (why to stop acting) and the reconnect backoff, as plain values."""

from __future__ import annotations

import random

import pytest

from holodesk.client.halt import Halt, HaltReason, HaltState
from holodesk.client.reconnect import ReconnectPolicy


def test_a_lost_link_pauses_and_a_resume_clears_it() -> None:
    halt = Halt()
    assert halt.trigger(HaltReason.LINK_LOST, "dropped")
    assert halt.is_set()
    assert halt.wait(0)
    halt.link_restored()
    assert not halt.is_set()
    assert halt.state is None


def test_a_stop_overrides_a_lost_link_and_is_never_cleared() -> None:
    """Proves: an emergency stop pressed while reconnecting wins, and neither a
    later link loss nor a resume can undo it; the first stop's reason stays."""
    seen: list[HaltState] = []
    halt = Halt()
    unsubscribe = halt.subscribe(seen.append)
    halt.trigger(HaltReason.LINK_LOST, "dropped")
    assert halt.trigger(HaltReason.EMERGENCY_STOP, "hotkey")
    assert not halt.trigger(HaltReason.LINK_LOST, "dropped again")
    assert not halt.trigger(HaltReason.USER, "ctrl-c")
    halt.link_restored()
    assert halt.is_set()
    assert halt.state == HaltState(HaltReason.EMERGENCY_STOP, "hotkey")
    assert [s.reason for s in seen] == [HaltReason.LINK_LOST, HaltReason.EMERGENCY_STOP]
    unsubscribe()
    halt.link_restored()
    assert len(seen) == 2


def test_backoff_grows_is_capped_and_jittered_downwards() -> None:
    policy = ReconnectPolicy(
        max_attempts=10, max_elapsed_s=1e9, initial_backoff_s=1, max_backoff_s=8, jitter=0.5
    )
    rng = random.Random(7)
    for attempt, ceiling in [(1, 1), (2, 2), (3, 4), (4, 8), (5, 8), (10, 8)]:
        for _ in range(50):
            delay = policy.delay(attempt, 0, rng)
            assert delay is not None
            assert ceiling * 0.5 <= delay <= ceiling
    no_jitter = ReconnectPolicy(jitter=0, initial_backoff_s=0.5, multiplier=3)
    assert [no_jitter.delay(n, 0) for n in (1, 2, 3)] == [0.5, 1.5, 4.5]


def test_backoff_gives_up_after_attempts_or_time() -> None:
    policy = ReconnectPolicy(max_attempts=3, max_elapsed_s=10, jitter=0, initial_backoff_s=1)
    assert policy.delay(3, 0) == 4
    assert policy.delay(4, 0) is None  # out of attempts
    assert policy.delay(3, 6.5) is None  # the attempt would start after 10 s
    assert ReconnectPolicy(max_attempts=0).delay(1, 0) is None


def test_a_retry_delay_from_the_daemon_is_never_cut_short() -> None:
    """A full daemon's RetryInfo (10 s) outweighs a short backoff, and still counts
    against the time allowed for resuming."""
    policy = ReconnectPolicy(max_attempts=3, max_elapsed_s=30, jitter=0, initial_backoff_s=1)
    assert policy.delay(1, 0, at_least_s=10) == 10
    assert policy.delay(3, 0, at_least_s=2) == 4  # the backoff is longer
    assert policy.delay(1, 25, at_least_s=10) is None


@pytest.mark.parametrize(
    "kwargs",
    [
        {"max_attempts": -1},
        {"initial_backoff_s": 5, "max_backoff_s": 1},
        {"multiplier": 0.5},
        {"jitter": 1.5},
    ],
)
def test_nonsense_policies_are_refused(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError, match="reconnect"):
        ReconnectPolicy(**kwargs)  # type: ignore[arg-type]
