"""Which keys the portal types, replayed on real keymaps compiled by libxkbcommon.

The keymaps are xkeyboard-config's, compiled as a compositor compiles its
keyboard settings (evdev rules, pc105); what mutter 43 and xdg-desktop-portal-kde
5.27 do with a keysym is portal_keysyms' docstring. The real desktops' refusals
(their own keymaps, read from the compositor) are the conformance suites'
(test_portal_mutter*.py, test_portal_kwin*.py).
"""

from __future__ import annotations

import pytest

from holodesk.platform.errors import InputError
from holodesk.platform.wayland.portal_keysyms import (
    KDE_5,
    MUTTER,
    AnyKeysym,
    PortalKeysyms,
    PortalTyping,
)
from holodesk.platform.wayland.xkb import XkbKeymap

EURO_SIGN = 0x20AC  # the legacy keysym keymaps carry, not U+20AC's 0x010020AC
BOTH = pytest.mark.parametrize("typing", [MUTTER, KDE_5], ids=["mutter", "kde"])


def keysyms(typing: PortalTyping, layout: str) -> PortalKeysyms:
    keymap = XkbKeymap.from_names(layout)
    return PortalKeysyms(typing, lambda: keymap)


@BOTH
def test_the_us_layout_types_ascii_and_named_keys(typing: PortalTyping) -> None:
    text = "Hello, World! ~ 1+1=2 (ok) {x} <a|b> \"q\" 'z' #$%^&*_?:@`\\"
    found = keysyms(typing, "us").keysyms([*text, "enter", "ctrl", "shift_r", "kp_add"])
    assert found["H"] == ord("H")
    assert found["enter"] == 0xFF0D
    assert set(found) == {*text, "enter", "ctrl", "shift_r", "kp_add"}


@BOTH
def test_what_the_us_layout_lacks_is_refused_naming_every_key(typing: PortalTyping) -> None:
    with pytest.raises(InputError) as raised:
        keysyms(typing, "us").keysyms([*"café \u200d日", "f13"])
    message = str(raised.value)
    assert (
        "has no key for: 'é' (U+00E9), U+200D ZERO WIDTH JOINER, '日' (U+65E5), the f13 key. "
        "Nothing of this input was sent." in message
    ), message
    assert typing.desktop in message
    assert "its keyboard layout (English (US)) has a key for" in message
    assert "Input Sources" in message
    assert "System Settings > Keyboard > Layouts" in message


@BOTH
def test_a_key_the_portal_would_type_as_another_is_refused(typing: PortalTyping) -> None:
    # KP_1 is Num Lock's level of KP_End's key; both desktops press Shift for a second
    # level, and Shift does not reach it: KP_End would arrive.
    with pytest.raises(InputError) as raised:
        keysyms(typing, "us").keysyms(["kp_1", "1"])
    message = str(raised.value)
    assert "the key the portal would press for these types something else: the kp_1 key. " in (
        message
    ), message
    assert "'1' for kp_1" in message


@BOTH
def test_a_layouts_own_characters_type_with_its_keysyms(typing: PortalTyping) -> None:
    # German: ß on its own key, € and µ on AltGr (level 3: ISO_Level3_Shift, which
    # both desktops press), y and z swapped.
    found = keysyms(typing, "de").keysyms("€ßµ@yz")
    assert found["€"] == EURO_SIGN
    assert found["ß"] == ord("ß")


@BOTH
def test_a_level_no_desktop_reaches_is_refused(typing: PortalTyping) -> None:
    # German ¿ is Shift+AltGr+ß, the fourth level: both type that key with no modifier
    # (an ß), so it would arrive as another character.
    with pytest.raises(InputError, match=r"types something else: '¿' \(U\+00BF\)\. "):
        keysyms(typing, "de").keysyms("a¿")


def test_with_several_layouts_every_one_must_have_the_key() -> None:
    # mutter types in the active layout, which holodesk cannot see: Latin letters are
    # not on the Russian one, Cyrillic ones not on the US one. Digits are on both.
    both = keysyms(MUTTER, "us,ru")
    assert set(both.keysyms("123 ")) == set("123 ")
    with pytest.raises(InputError) as raised:
        both.keysyms("aф")
    message = str(raised.value)
    assert "which of its layouts (English (US), Russian) is active; not all of them have a " in (
        message
    ), message
    assert "'a' (U+0061), 'ф' (U+0444)" in message


def test_kde_finds_the_key_in_the_first_layout_and_kwin_reads_it_in_the_active_one() -> None:
    # xdg-desktop-portal-kde 5.27 searches the first layout: the comma's key there is
    # Cyrillic б in the Russian one, so a comma is refused; mutter finds the Russian
    # layout's own comma key.
    assert keysyms(MUTTER, "us,ru").keysyms(",") == {",": ord(",")}
    with pytest.raises(InputError, match=r"types something else: ',' \(U\+002C\)\. "):
        keysyms(KDE_5, "us,ru").keysyms(",")


def test_an_assumed_layout_says_it_was_not_read() -> None:
    keymap = XkbKeymap.from_names("us")
    assumed = PortalKeysyms(MUTTER, lambda: keymap, "WAYLAND_DISPLAY is not set")
    with pytest.raises(InputError) as raised:
        assumed.keysyms("é")
    message = str(raised.value)
    assert "could not read the keyboard layout of GNOME (mutter) (WAYLAND_DISPLAY" in message
    assert "run holodesk inside the Wayland session" in message


def test_a_new_keymap_is_used_as_soon_as_it_comes() -> None:
    keymaps = [XkbKeymap.from_names("us")]
    source = PortalKeysyms(MUTTER, lambda: keymaps[-1])
    with pytest.raises(InputError):
        source.keysyms("ß")
    keymaps.append(XkbKeymap.from_names("de"))
    assert source.keysyms("ß") == {"ß": ord("ß")}


def test_any_keysym_refuses_nothing() -> None:
    assert AnyKeysym().keysyms("é日") == {"é": 0xE9, "日": 0x01000000 + ord("日")}
