"""EndedSessions (session/ended_sessions.py): the recorder's memory of sessions that
left, for ReportReward. Bounded in number (the oldest go first) and in age."""

from __future__ import annotations

import time

from holodesk.daemon.session.ended_sessions import Ended, EndedSessions


def _ended(principal: str, track: str | None = "track") -> Ended[str]:
    return Ended(principal, track, time.monotonic())


def test_keeps_what_it_remembers() -> None:
    ended: EndedSessions[str] = EndedSessions(capacity=10, ttl_s=3600)
    ended.remember("s1", _ended("alice"))
    ended.remember("s2", _ended("bob", None))
    first, second = ended.get("s1"), ended.get("s2")
    assert first is not None
    assert (first.principal, first.track) == ("alice", "track")
    assert second is not None
    assert (second.principal, second.track) == ("bob", None)
    assert ended.get("s3") is None
    assert [e.principal for e in ended.values()] == ["alice", "bob"]


def test_over_capacity_the_oldest_goes_first() -> None:
    ended: EndedSessions[str] = EndedSessions(capacity=2, ttl_s=3600)
    for name in ("s1", "s2", "s3"):
        ended.remember(name, _ended(name))
    assert ended.get("s1") is None
    assert [e.principal for e in ended.values()] == ["s2", "s3"]


def test_remembering_again_makes_it_the_newest() -> None:
    ended: EndedSessions[str] = EndedSessions(capacity=2, ttl_s=3600)
    ended.remember("s1", _ended("first"))
    ended.remember("s2", _ended("s2"))
    ended.remember("s1", _ended("again"))
    ended.remember("s3", _ended("s3"))
    assert ended.get("s2") is None
    assert [e.principal for e in ended.values()] == ["again", "s3"]


def test_an_entry_older_than_the_ttl_is_forgotten() -> None:
    # Left "an hour ago" against a one-minute TTL: stale however fast the test runs.
    ended: EndedSessions[str] = EndedSessions(capacity=10, ttl_s=60)
    ended.remember("old", Ended("old", "track", time.monotonic() - 3600))
    assert ended.get("old") is None
    ended.remember("fresh", _ended("fresh"))
    ended.expire()
    assert ended.get("fresh") is not None
