"""The file and command getters on real files and commands, in a task's HOME (the home
convention: `~` and /home/user are that HOME)."""

from __future__ import annotations

from pathlib import Path

from holodesk.client.eval.tasks.registry import GETTERS

from .contexts import bare_context


def test_vm_file_copies_into_the_cache_or_gives_none(tmp_path: Path) -> None:
    with bare_context(tmp_path) as context:
        (context.home / "Desktop").mkdir()
        (context.home / "Desktop" / "notes.txt").write_text("hello")
        vm_file = GETTERS["vm_file"].fetch
        got = vm_file(context, {"path": "/home/user/Desktop/notes.txt", "dest": "notes.txt"})
        assert got == str(context.cache / "notes.txt")
        assert Path(got).read_text() == "hello"
        # The copy is what was scored: a later change does not reach it.
        (context.home / "Desktop" / "notes.txt").write_text("changed")
        assert Path(got).read_text() == "hello"
        assert vm_file(context, {"path": "~/missing.txt", "dest": "m.txt"}) is None
        many = vm_file(
            context,
            {
                "path": ["~/Desktop/notes.txt", "~/nope.txt"],
                "dest": ["a.txt", "b.txt"],
                "multi": True,
                "gives": [1, 0],
            },
        )
        assert many == [None, str(context.cache / "a.txt")]


def test_cloud_file_reads_the_suite_files_only(tmp_path: Path) -> None:
    with bare_context(tmp_path) as context:
        (context.task_folder / "gold").mkdir()
        (context.task_folder / "gold" / "answer.txt").write_text("42\n")
        cloud_file = GETTERS["cloud_file"].fetch
        got = cloud_file(context, {"path": "gold/answer.txt", "dest": "gold.txt"})
        assert Path(got).read_text() == "42\n"
        url = (context.task_folder / "gold" / "answer.txt").as_uri()
        assert Path(cloud_file(context, {"path": url, "dest": "g2.txt"})).read_text() == "42\n"
        assert cloud_file(context, {"path": "gold/none.txt", "dest": "x"}) is None
        check = GETTERS["cloud_file"].check
        assert check is not None
        assert "no network" in check({"path": "https://example.org/a.txt", "dest": "a"})


def test_rule_and_command_getters(tmp_path: Path) -> None:
    with bare_context(tmp_path) as context:
        (context.home / "out.txt").write_text("done\n")
        assert GETTERS["rule"].fetch(context, {"rules": {"expected": 1}}) == {"expected": 1}
        line = GETTERS["vm_command_line"].fetch
        error = GETTERS["vm_command_error"].fetch
        assert line(context, {"command": "cat ~/out.txt", "shell": True}) == "done\n"
        assert line(context, {"command": ["cat", "/home/user/out.txt"]}) == "done\n"
        assert line(context, {"command": "cat ~/out.txt"}) == "done\n"  # split, no shell
        assert line(context, {"command": "echo $HOME", "shell": True}) == f"{context.home}\n"
        assert error(context, {"command": "echo oops >&2", "shell": True}) == "oops\n"
        assert line(context, {"command": "cat ~/none.txt", "shell": True}) == ""


def test_osworld_placeholders_in_commands(tmp_path: Path) -> None:
    with bare_context(tmp_path) as context:
        line = GETTERS["vm_command_line"].fetch
        command = "echo {SCREEN_WIDTH}x{SCREEN_HEIGHT} {SCREEN_WIDTH_HALF},{SCREEN_HEIGHT_HALF}"
        assert line(context, {"command": command, "shell": True}) == "1280x800 640,400\n"
        assert line(context, {"command": ["echo", "{CLIENT_PASSWORD}"]}) == "password\n"
