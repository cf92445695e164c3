"""The check as a whole: template, then Locate and one navigation step, then a verdict.

The policy is built exactly as `holodeskd --policy ENGINE --policy-opt ...`
builds it (the policy registry), so what passes here is what the daemon runs.
Parse retries are 0 by default: the check measures the model's first answer,
not the repair loop.
"""

from __future__ import annotations

import enum
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TextIO

from holodesk.daemon.dialects import Dialect
from holodesk.daemon.engines.base import EngineError
from holodesk.daemon.engines.transformers_options import flag
from holodesk.daemon.engines.vllm_args import DEFAULT_MODEL
from holodesk.daemon.model_check import report
from holodesk.daemon.model_check.screenshot import Screenshot, bundled_screenshot
from holodesk.daemon.model_check.steps import StepCheck, check_locate, check_navigate
from holodesk.daemon.model_check.template import TemplateReport, check_template
from holodesk.daemon.policies.model import ModelPolicy
from holodesk.daemon.policies.registry import create_policy, dialect_from_options

ENGINES = ("vllm", "transformers", "openai")


class Exit(enum.IntEnum):
    OK = 0
    FAILED = 1  # an answer did not parse, a click missed, or the template has a problem
    USAGE = 2  # bad options (argparse uses 2 as well)
    ENGINE = 3  # the engine could not start


@dataclass(frozen=True)
class CheckOptions:
    model: str
    engine: str = "vllm"
    # Policy options as `--policy-opt` gives them: dialect, engine settings...
    policy_options: Mapping[str, str] = field(default_factory=dict)
    # Where the chat template comes from (default: the model).
    tokenizer: str | None = None
    parse_retries: int = 0
    template: bool = True

    def __post_init__(self) -> None:
        if self.engine not in ENGINES:
            raise ValueError(f"engine {self.engine!r} is not one of {', '.join(ENGINES)}")
        if self.parse_retries < 0:
            raise ValueError("parse_retries cannot be negative")

    def all_options(self) -> dict[str, str]:
        return {**self.policy_options, "model": self.model}

    def trust_remote_code(self) -> bool:
        return flag(self.policy_options, "trust_remote_code", self.model == DEFAULT_MODEL)


@dataclass(frozen=True)
class CheckResult:
    template: TemplateReport | None
    steps: tuple[StepCheck, ...]
    error: str | None = None
    exit: Exit = Exit.OK

    @property
    def summary(self) -> str:
        return report.summary(self.template, self.steps, self.error)


async def run_check(
    options: CheckOptions, *, screenshot: Screenshot | None = None, out: TextIO | None = None
) -> CheckResult:
    """Run the whole check, printing each part as soon as it is known."""
    stream = out or sys.stdout
    shot = screenshot or bundled_screenshot()
    try:
        dialect = dialect_from_options(options.policy_options)
        policy = create_policy(options.engine, options.all_options())
    except (ValueError, OSError) as exc:
        return _finish(CheckResult(None, (), f"bad options: {exc}", Exit.USAGE), stream)
    if not isinstance(policy, ModelPolicy):
        message = f"{options.engine} is not a model policy"
        return _finish(CheckResult(None, (), message, Exit.USAGE), stream)
    policy.parse_retries = options.parse_retries
    print(f"model check: {options.model} via {options.engine}, dialect {dialect.name}", file=stream)
    template = _template(options, dialect, shot, stream) if options.template else None
    try:
        await policy.start()
    except (EngineError, OSError, ValueError) as exc:
        error = f"the {options.engine} engine could not start: {exc}"
        return _finish(CheckResult(template, (), error, Exit.ENGINE), stream)
    try:
        locate = await check_locate(policy, shot)
        report.print_step(locate, shot, stream)
        navigate = await check_navigate(policy, shot)
        report.print_step(navigate, shot, stream)
    finally:
        await policy.close()
    steps = (locate, navigate)
    passed = all(s.ok for s in steps) and (template is None or template.ok)
    return _finish(CheckResult(template, steps, None, Exit.OK if passed else Exit.FAILED), stream)


def _template(
    options: CheckOptions, dialect: Dialect, shot: Screenshot, stream: TextIO
) -> TemplateReport:
    source = options.tokenizer or options.model
    template = check_template(
        source,
        dialect,
        shot,
        trust_remote_code=options.trust_remote_code(),
        revision=options.policy_options.get("revision") or None,
    )
    report.print_template(template, stream)
    return template


def _finish(result: CheckResult, stream: TextIO) -> CheckResult:
    print(result.summary, file=stream)
    return result
