"""README is the front door and the docs stay alive: links resolve, commands exist.

- every relative link in README.md and docs/**/*.md names a file (and its anchor, where
  given, a heading of that page), and every page under docs/ is reachable from README;
- every `holodesk ...` / `holodeskd ...` command README names exists in the CLI, with
  each `--flag` it gives; the docs' commands name subcommands that exist;
- README's first screen says what holodesk is and holds the two commands (CI runs the
  second exactly as README gives it, through .ci/run); no README line over 300 characters;
- the OCR task language's examples parse, and the scripted policy's example script loads
  and parses in its dialect.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import json
import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from holodesk.client.cli import build_parser, load_commands
from holodesk.daemon import cli as daemon_cli
from holodesk.daemon.cli_flags import build_parser as build_daemon_parser
from holodesk.daemon.cli_token import build_token_parser
from holodesk.daemon.dialects import get_dialect
from holodesk.daemon.engines.scripted import ScriptedEngine
from holodesk.daemon.geometry import Size
from holodesk.daemon.policies.ocr.instructions import InstructionError
from holodesk.daemon.policies.ocr.instructions import parse as parse_task

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
PAGES = [README, *sorted(DOCS.rglob("*.md"))]

DEMO_COMMAND = "tools/setup.sh && uv run holodesk demo"
TEST_COMMAND = "tools/setup.sh && uv run pytest"
FIRST_SCREEN_LINES = 25
MAX_README_LINE = 300

_FENCE = re.compile(r"^\s*(```+|~~~+)\s*([\w+-]*)")
_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_HTML_ANCHOR = re.compile(r"<a\s+(?:name|id)=\"([^\"]+)\"")


@dataclass(frozen=True)
class Block:
    info: str
    text: str


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def _prose_lines(text: str) -> Iterator[tuple[int, str]]:
    """Numbered lines outside fenced code blocks."""
    fence = ""
    for number, line in enumerate(text.splitlines(), start=1):
        opened = _FENCE.match(line)
        if opened and (not fence or opened.group(1).startswith(fence)):
            fence = "" if fence else opened.group(1)
            continue
        if not fence:
            yield number, line


def _blocks(text: str) -> list[Block]:
    """The fenced code blocks, with their info strings."""
    blocks: list[Block] = []
    fence, info = "", ""
    lines: list[str] = []
    for line in text.splitlines():
        opened = _FENCE.match(line)
        if opened and not fence:
            fence, info, lines = opened.group(1), opened.group(2), []
        elif opened and opened.group(1).startswith(fence) and not opened.group(2):
            blocks.append(Block(info, "\n".join(lines)))
            fence = ""
        elif fence:
            lines.append(line)
    return blocks


def _without_code_spans(line: str) -> str:
    return re.sub(r"(`+).*?\1", "", line)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: its text, lowercased, punctuation dropped."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # links: their text
    text = re.sub(r"<[^>]+>", "", text).replace("`", "")
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    found: set[str] = set()
    seen: dict[str, int] = {}
    text = page.read_text(encoding="utf-8")
    for _, line in _prose_lines(text):
        found.update(_HTML_ANCHOR.findall(line))
        heading = _HEADING.match(line)
        if heading is None:
            continue
        base = slug(heading.group(2))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def links(page: Path) -> list[tuple[int, str]]:
    """(line, target) of every relative link of `page`, code aside."""
    found: list[tuple[int, str]] = []
    for number, line in _prose_lines(page.read_text(encoding="utf-8")):
        for target in _LINK.findall(_without_code_spans(line)):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE):
                continue  # http:, https:, mailto: ...
            found.append((number, target))
    return found


def _resolve(page: Path, target: str) -> tuple[Path, str]:
    path, _, anchor = target.partition("#")
    return (page if not path else (page.parent / path).resolve()), anchor


@pytest.mark.parametrize("page", PAGES, ids=_rel)
def test_every_relative_link_resolves(page: Path) -> None:
    broken: list[str] = []
    for number, target in links(page):
        path, anchor = _resolve(page, target)
        if not path.exists():
            broken.append(f"{_rel(page)}:{number}: {target}: no such file")
        elif anchor and path.suffix == ".md" and anchor not in anchors(path):
            broken.append(f"{_rel(page)}:{number}: {target}: no heading #{anchor}")
        elif anchor and path.suffix != ".md":
            broken.append(f"{_rel(page)}:{number}: {target}: an anchor into a non-page")
    assert not broken, "\n".join(broken)


def test_every_docs_page_is_reachable_from_readme() -> None:
    reached: set[Path] = set()
    todo = [README.resolve()]
    while todo:
        page = todo.pop()
        if page in reached or page.suffix != ".md" or not page.is_file():
            continue
        reached.add(page)
        for _, target in links(page):
            path, _ = _resolve(page, target)
            todo.append(path / "README.md" if path.is_dir() else path)
    unreached = [_rel(p) for p in DOCS.rglob("*.md") if p.resolve() not in reached]
    assert not unreached, f"no path of links from README.md leads to {sorted(unreached)}"


def test_the_slugs_are_githubs() -> None:
    assert slug("`holodesk report`: one page per session") == "holodesk-report-one-page-per-session"
    assert slug("KDE, run on headless KWin 5.27.5") == "kde-run-on-headless-kwin-5275"
    assert slug("`--format trainer`: token rows") == "--format-trainer-token-rows"
    assert slug("`type X into F`") == "type-x-into-f"


# README's first screen ----------------------------------------------------------------


def test_readme_first_screen_says_what_it_is_and_how_to_run_it() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    screen = "\n".join(lines[:FIRST_SCREEN_LINES])
    assert DEMO_COMMAND in screen
    assert TEST_COMMAND in screen
    first_paragraph = next(line for line in lines[1:] if line.strip())
    assert first_paragraph.startswith("**holodesk** is "), first_paragraph


def test_ci_runs_readmes_test_command() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert TEST_COMMAND in ci.splitlines()


def test_no_readme_line_is_over_300_characters() -> None:
    long = [
        f"README.md:{number}: {len(line)} characters"
        for number, line in enumerate(README.read_text(encoding="utf-8").splitlines(), start=1)
        if len(line) > MAX_README_LINE
    ]
    assert not long, "\n".join(long)


# Commands -----------------------------------------------------------------------------


def _code_texts(page: Path) -> list[str]:
    """Shell lines of the page's code blocks (continuations joined) and its code spans."""
    text = page.read_text(encoding="utf-8")
    texts: list[str] = []
    for block in _blocks(text):
        if block.info in ("", "bash", "sh", "shell", "console"):
            texts.extend(block.text.replace("\\\n", " ").splitlines())
    for _, line in _prose_lines(text):
        texts.extend(span for _, span in re.findall(r"(`+)(.+?)\1", line))
    return texts


def commands(page: Path, program: str) -> list[list[str]]:
    """The words after `program` of every command line of the page that runs it."""
    found: list[list[str]] = []
    for text in _code_texts(page):
        try:
            words = shlex.split(text, comments=True)
        except ValueError:
            continue  # prose in a code span, not a command line
        segment: list[str] = []
        for word in [*words, "&&"]:
            if word not in ("&&", "||", ";", "|", "&"):
                segment.append(word)
                continue
            while segment and (re.match(r"^[A-Z_]+=", segment[0]) or segment[0] == "uv"):
                segment = segment[2:] if segment[0] == "uv" else segment[1:]  # uv run
            if segment and segment[0] == program:
                found.append([w.strip("[]") for w in segment[1:]])
            segment = []
    return found


def _subparsers(
    parser: argparse.ArgumentParser,
) -> argparse._SubParsersAction[argparse.ArgumentParser] | None:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action
    return None


def _options(parser: argparse.ArgumentParser) -> set[str]:
    return {option for action in parser._actions for option in action.option_strings}


def _placeholder(word: str) -> bool:
    """A flag, or a word that stands for one's value (`holodesk NAME`, `RECORDING`)."""
    return word.startswith("-") or word.isupper()


def _walk(parser: argparse.ArgumentParser, words: list[str]) -> tuple[list[str], list[str]]:
    """(problems, the subcommand path) of `words` given to `parser`."""
    path: list[str] = []
    options = _options(parser)
    problems: list[str] = []
    expecting_subcommand = _subparsers(parser) is not None
    for word in words:
        if word == "--":
            break  # what follows is another program's (holodesk mcp install ... -- FLAGS)
        if word.startswith("--"):
            flag = word.split("=", 1)[0]
            if flag not in options:
                problems.append(f"{' '.join(path) or '(top)'} has no option {flag}")
            continue
        subparsers = _subparsers(parser)
        if not expecting_subcommand or subparsers is None or _placeholder(word):
            continue
        names = word.split("|")  # `holodesk service status|uninstall`
        unknown = [name for name in names if name not in subparsers.choices]
        if unknown:
            problems.append(f"{' '.join(path) or '(top)'} has no subcommand {unknown[0]!r}")
            break
        path.append(names[0])
        parser = subparsers.choices[names[0]]
        options |= _options(parser)
        expecting_subcommand = _subparsers(parser) is not None
    return problems, path


@pytest.fixture(scope="module")
def client_parser() -> argparse.ArgumentParser:
    return build_parser(load_commands())


def test_readme_names_holodesk_commands(client_parser: argparse.ArgumentParser) -> None:
    named = commands(README, "holodesk")
    assert len(named) >= 5, "README should show holodesk's commands"
    problems: list[str] = []
    for words in named:
        found, _ = _walk(client_parser, words)
        problems.extend(f"holodesk {' '.join(words)}: {p}" for p in found)
    assert not problems, "\n".join(problems)


def test_every_holodesk_subcommand_the_docs_name_exists(
    client_parser: argparse.ArgumentParser,
) -> None:
    subparsers = _subparsers(client_parser)
    assert subparsers is not None
    problems: list[str] = []
    for page in PAGES:
        for words in commands(page, "holodesk"):
            if words and not _placeholder(words[0]) and words[0] not in subparsers.choices:
                problems.append(f"{_rel(page)}: holodesk {' '.join(words)}")
    assert not problems, "no such subcommand:\n" + "\n".join(problems)


# holodeskd's routes are written by hand in holodesk.daemon.cli.main: a subcommand word,
# its one action, the parser of the rest.
DAEMON_ROUTES = {
    "token": ("new", build_token_parser),
    "config": ("path", lambda: _config_parser()),
}


def _config_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="holodeskd config")
    parser.add_argument("--config")
    return parser


@pytest.mark.parametrize("route", sorted(DAEMON_ROUTES))
def test_holodeskd_routes_its_subcommands(route: str) -> None:
    action, _ = DAEMON_ROUTES[route]
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as exited:
        daemon_cli.main([route, action, "--help"])
    assert exited.value.code == 0
    assert f"holodeskd {route}" in out.getvalue()


def test_readme_names_holodeskd_commands() -> None:
    """README's holodeskd commands, flags and all; the docs' token and config commands
    (elsewhere in the docs, `holodeskd live view on URL` is what it prints)."""
    named = commands(README, "holodeskd")
    assert named, "README should show how to start holodeskd"
    problems: list[str] = []
    docs = [w for p in PAGES if p != README for w in commands(p, "holodeskd")]
    for words in [*named, *docs]:
        route = DAEMON_ROUTES.get(words[0]) if words else None
        if route is not None:
            action, parser = route
            if words[1:2] != [action]:
                problems.append(f"holodeskd {' '.join(words)}: `{words[0]}` takes `{action}`")
            rest = words[2:]
            options = _options(parser())
        elif words and not _placeholder(words[0]):
            if words in named:
                problems.append(f"holodeskd {' '.join(words)}: no subcommand {words[0]!r}")
            continue
        else:
            rest = words
            options = _options(build_daemon_parser())
        if words in named:  # README's flags too; the docs' subcommands only
            for word in rest:
                if word == "--":
                    break
                flag = word.split("=", 1)[0]
                if flag.startswith("--") and flag not in options:
                    problems.append(f"holodeskd {' '.join(words)}: no option {flag}")
    assert not problems, "\n".join(problems)


def test_readmes_python_modules_exist() -> None:
    modules = {
        words[words.index("-m") + 1]
        for text in _code_texts(README)
        for words in [text.split()]
        if "python" in words and "-m" in words[:-1]
    }
    missing = sorted(m for m in modules if importlib.util.find_spec(m) is None)
    assert not missing, f"README runs modules that do not exist: {missing}"


def test_the_command_finder_sees_what_readme_shows() -> None:
    named = [" ".join(words[:1]) for words in commands(README, "holodesk")]
    for subcommand in ("demo", "run", "report"):
        assert subcommand in named


# The examples of the docs -------------------------------------------------------------


def test_the_ocr_task_examples_parse() -> None:
    page = DOCS / "ocr-tasks.md"
    tasks = [
        line
        for block in _blocks(page.read_text(encoding="utf-8"))
        if block.info == "task"
        for line in block.text.splitlines()
        if line.strip()
    ]
    assert len(tasks) >= 15
    for task in tasks:
        assert parse_task(task), task


def test_the_refused_ocr_tasks_are_refused() -> None:
    page = (DOCS / "ocr-tasks.md").read_text(encoding="utf-8")
    table = page[page.index("| task | why |") :].split("\n\n", 1)[0].splitlines()[2:]
    refused = [cell.group(1) for row in table if (cell := re.match(r"^\| `(.+?)` \|", row))]
    assert len(refused) == len(table), table
    assert len(refused) >= 5
    for task in refused:
        with pytest.raises(InstructionError):
            parse_task(task)


def test_the_scripted_policy_example_loads_and_parses(tmp_path: Path) -> None:
    page = (DOCS / "scripted-policy.md").read_text(encoding="utf-8")
    script = next(b.text for b in _blocks(page) if b.info == "json")
    path = tmp_path / "script.json"
    path.write_text(script, encoding="utf-8")
    engine = ScriptedEngine.from_file(path)
    dialect = get_dialect("holotron")
    geometry = dialect.geometry(Size(1280, 800))
    entries = json.loads(script)
    outputs = [o for entry in entries for o in ([entry] if isinstance(entry, str) else entry)]
    assert len(engine.outputs) == 3
    assert len(outputs) == 4
    for output in outputs:
        assert dialect.parse_step(output, geometry).actions, output
