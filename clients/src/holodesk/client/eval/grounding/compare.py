"""`holodesk eval compare RUN_A RUN_B`: two grounding runs side by side.

Refuses (exit 1, naming each field and both values) when the manifests differ in
what makes scores comparable (manifest.COMPARABLE_FIELDS: benchmark, data set hash and
scope, the dialect's prompt hash, resize rule, coordinates, sampling), or when a run
does not record one of them (a daemon that did not say): a difference in score would
then not be the model's. `--force` compares anyway and still prints the differences.

Otherwise it prints, for the overall score and every row of the official breakdown,
each run's accuracy with its 95% interval, the difference (B - A, in points) and
whether the intervals overlap (when they do, the difference may be noise).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from holodesk.client.cli import Command, command_error
from holodesk.client.eval.grounding import manifest as manifests
from holodesk.client.eval.grounding import outputs
from holodesk.client.exit_codes import ExitCode
from holodesk.client.shown import shown

NAME = "eval compare"
# What is worth saying about the two runs besides their scores (not a refusal).
INFO_FIELDS = ("policy.model", "policy.engine", "policy.dialect", "policy.policy_version")

Row = tuple[str, Mapping[str, Any] | None, Mapping[str, Any] | None]


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_a", type=Path, metavar="RUN_A", help="a grounding run's folder")
    parser.add_argument("run_b", type=Path, metavar="RUN_B", help="another, compared to RUN_A")
    parser.add_argument(
        "--force",
        action="store_true",
        help="compare even when the manifests say the runs are not comparable "
        "(the differences are still printed)",
    )


def run(args: argparse.Namespace) -> int:
    try:
        manifest_a = manifests.read_manifest(args.run_a)
        manifest_b = manifests.read_manifest(args.run_b)
        summary_a = outputs.read_summary(args.run_a)
        summary_b = outputs.read_summary(args.run_b)
    except ValueError as error:
        return command_error(NAME, error)
    found = manifests.differences(manifest_a, manifest_b, manifests.COMPARABLE_FIELDS)
    unknown = [
        name
        for name in manifests.COMPARABLE_FIELDS
        if not (_recorded(manifest_a, name) and _recorded(manifest_b, name))
    ]
    if found or unknown:
        lines = []
        if found:
            lines.append("the runs differ in what makes scores comparable:")
            lines.append(manifests.describe(found, "A", "B"))
        if unknown:
            lines.append(
                "not recorded (the daemon did not say), so not checked: " + ", ".join(unknown)
            )
        message = "\n".join(lines)
        if not args.force:
            print(
                shown(f"holodesk {NAME}: refusing to compare {args.run_a} and {args.run_b}: ")
                + shown(message)
                + "\n(--force compares them anyway)",
                file=sys.stderr,
            )
            return ExitCode.FAILED
        print(shown(f"not comparable, compared anyway (--force): {message}"), file=sys.stderr)
    print(render(args.run_a, args.run_b, manifest_a, manifest_b, summary_a, summary_b))
    return ExitCode.SUCCEEDED


def _recorded(manifest: Mapping[str, Any], name: str) -> bool:
    """Whether the manifest says this field: a policy field is unknown when the daemon
    reported no policy at all ("policy": null); inside a reported policy, null is a
    value (the OCR policy does not sample)."""
    parent, _, _ = name.rpartition(".")
    if parent == "policy":
        return manifest.get("policy") is not None
    return manifests.field(manifest, name) is not None


def render(
    run_a: Path,
    run_b: Path,
    manifest_a: Mapping[str, Any],
    manifest_b: Mapping[str, Any],
    summary_a: Mapping[str, Any],
    summary_b: Mapping[str, Any],
) -> str:
    lines = [f"A: {run_a}  ({_who(manifest_a)})", f"B: {run_b}  ({_who(manifest_b)})"]
    for name, a, b in manifests.differences(manifest_a, manifest_b, INFO_FIELDS):
        lines.append(f"   {name}: A {a}, B {b}")
    for label, summary in (("A", summary_a), ("B", summary_b)):
        left = summary.get("left_out", 0)
        if left:
            lines.append(f"   {label} left out {left} sample(s): its scores are over fewer")
    rows = _rows(summary_a, summary_b)
    width = max(len(name) for name, _, _ in rows)
    header = f"{'':<{width}}  {'A':>24}  {'B':>24}  {'B - A':>7}  intervals"
    lines += ["", header]
    for name, a, b in rows:
        delta = ""
        overlap = ""
        if a and b and a.get("accuracy") is not None and b.get("accuracy") is not None:
            delta = f"{100 * (b['accuracy'] - a['accuracy']):+.1f}"
            overlap = "overlap" if _overlap(a, b) else "apart"
        lines.append(f"{name:<{width}}  {_cell(a):>24}  {_cell(b):>24}  {delta:>7}  {overlap}")
    return "\n".join(lines)


def _rows(summary_a: Mapping[str, Any], summary_b: Mapping[str, Any]) -> list[Row]:
    """The overall score, then each breakdown row of either run, matched by keys and
    values, in A's order (rows only B has come last)."""
    rows: list[Row] = [("overall", summary_a.get("overall"), summary_b.get("overall"))]
    table_a, table_b = _breakdown_rows(summary_a), _breakdown_rows(summary_b)
    for name in [*table_a, *(n for n in table_b if n not in table_a)]:
        rows.append((name, table_a.get(name), table_b.get(name)))
    return rows


def _breakdown_rows(summary: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    found: dict[str, Mapping[str, Any]] = {}
    for breakdown in summary.get("breakdowns", []):
        keys = " x ".join(breakdown.get("keys", []))
        for row in breakdown.get("rows", []):
            found[f"{keys}: {' / '.join(row.get('values', []))}"] = row
    return found


def _cell(rate: Mapping[str, Any] | None) -> str:
    if rate is None or rate.get("accuracy") is None:
        return "-"
    low, high = rate.get("interval") or (None, None)
    interval = "" if low is None or high is None else f" [{100 * low:.1f}, {100 * high:.1f}]"
    return f"{100 * rate['accuracy']:.1f}%{interval} n={rate.get('count')}"


def _overlap(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    low_a, high_a = a.get("interval") or (None, None)
    low_b, high_b = b.get("interval") or (None, None)
    if low_a is None or high_a is None or low_b is None or high_b is None:
        return True  # unknown: never claim a difference
    return bool(low_a <= high_b and low_b <= high_a)


def _who(manifest: Mapping[str, Any]) -> str:
    policy = manifest.get("policy") or {}
    parts = [
        str(policy.get("model") or policy.get("policy") or "policy not recorded"),
        f"dialect {policy['dialect']}" if policy.get("dialect") else "",
        f"started {manifest.get('started_at')}",
    ]
    return ", ".join(p for p in parts if p)


COMMAND = Command(
    name="compare",
    help="compare two grounding runs whose manifests say they are comparable",
    description="Compare two `holodesk eval grounding` runs: per breakdown row, each run's "
    "accuracy with its 95% interval, the difference and whether the intervals overlap. "
    "Refuses (exit 1, naming the fields) when the manifests differ in benchmark, data set "
    "hash or scope, prompt hash, resize rule, coordinates or sampling; --force compares anyway.",
    configure=configure,
    run=run,
)
