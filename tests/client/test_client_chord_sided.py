"""Left/right-specific modifiers are the same modifiers to the chord denylist
(issue 16.5): ctrl_l+alt+delete is still ctrl+alt+delete, however the model spells
the sides, and a rule written with a side denies both sides. Judged on the fake
backend's event list: nothing of a denied chord's last key may go out."""

from __future__ import annotations

import pytest

from holodesk.client import actions as a
from holodesk.client.executor import ActionExecutor
from holodesk.client.safety import SafetyGuard, SafetySettings
from holodesk.client.safety.chords import key_of, parse_chord
from holodesk.platform.backends import fake

OK, REJECTED = a.ActionStatus.OK, a.ActionStatus.REJECTED
DENYLIST = SafetySettings(emergency_stop=None, fail_safe=False, max_actions_per_second=0)


def _pressed(backend: fake.FakeBackend) -> list[str]:
    return [e.key for e in backend.input.events if isinstance(e, fake.Key) and e.down]


@pytest.mark.parametrize(
    "keys",
    [
        ("ctrl_l", "alt", "delete"),
        ("ctrl_r", "alt_r", "delete"),
        ("ControlRight", "AltLeft", "Delete"),
        ("rctrl", "ralt", "del"),
        ("ctrl_l", "ctrl_r", "alt_l", "delete"),
    ],
)
def test_a_chord_with_sided_modifiers_is_denied_like_its_neutral_one(keys: tuple[str, ...]) -> None:
    backend = fake.create()
    report = ActionExecutor(backend, guard=SafetyGuard(DENYLIST, backend)).execute(
        [a.KeyChord(action_id="k", keys=keys)]
    )
    assert [r.status for r in report.results] == [REJECTED]
    assert report.results[0].error == "the key chord ctrl+alt+delete is denied on this client"
    assert "delete" not in _pressed(backend)
    assert backend.input.held() == ((), ())


def test_held_sided_modifiers_count_for_a_later_key() -> None:
    backend = fake.create()
    report = ActionExecutor(backend, guard=SafetyGuard(DENYLIST, backend)).execute(
        [
            a.KeyDown(action_id="c", key="ctrl_r"),
            a.KeyDown(action_id="m", key="alt_l"),
            a.KeyChord(action_id="t", keys=("t",)),
        ]
    )
    assert [r.status for r in report.results] == [OK, OK, REJECTED]
    assert _pressed(backend) == ["ctrl_r", "alt_l"]


def test_a_rule_written_with_a_side_denies_either_side() -> None:
    assert parse_chord("ctrl_r+shift_l+q") == parse_chord("ctrl+shift+q")
    settings = SafetySettings(
        emergency_stop=None,
        fail_safe=False,
        max_actions_per_second=0,
        denied_chords=("meta_r+q",),
    )
    backend = fake.create()
    report = ActionExecutor(backend, guard=SafetyGuard(settings, backend)).execute(
        [a.KeyChord(action_id="q", keys=("meta_l", "q"))]
    )
    assert [r.status for r in report.results] == [REJECTED]


def test_other_new_keys_are_themselves() -> None:
    assert [key_of(k) for k in ("kp_0", "volume_mute", "browser_back")] == [
        "kp_0", "volume_mute", "browser_back",
    ]  # fmt: skip
