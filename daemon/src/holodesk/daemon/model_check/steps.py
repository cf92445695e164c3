"""Parts (b) and (c): one Locate and one navigation step through the real policy.

Both go through `ModelPolicy` exactly as a session's would (the dialect's
prompt, the engine, the dialect's parser and coordinate mapping), on the
bundled screenshot. Each answer is judged on two things: does it parse, and
does its click land in the target box (else how far away, in frame pixels).
"""

from __future__ import annotations

from dataclasses import dataclass

from holodesk.daemon.actions import Click, Fail, describe
from holodesk.daemon.dialects import DialectParseError
from holodesk.daemon.engines.base import EngineError
from holodesk.daemon.geometry import Point
from holodesk.daemon.model_check.screenshot import Screenshot, distance_to
from holodesk.daemon.policies.model import ModelPolicy
from holodesk.daemon.steps import StepContext

_ENGINE_FAILED = "engine "


@dataclass(frozen=True)
class StepCheck:
    kind: str  # "locate", "navigate", or "data" (a --data sample)
    raw_output: str = ""
    parse_error: str | None = None
    engine_error: str | None = None
    # The click, in frame pixels (None: no click).
    point: Point | None = None
    actions: str = ""
    distance_px: float | None = None
    # A grounding benchmark's verdict, where its scorer judged the trial (--data:
    # polygons, strict edges and refusals as the benchmark counts them); None: the
    # click is judged by its distance to the target box.
    hit: bool | None = None

    @property
    def parsed(self) -> bool:
        return self.engine_error is None and self.parse_error is None

    @property
    def inside(self) -> bool:
        return self.hit if self.hit is not None else self.distance_px == 0.0

    @property
    def ok(self) -> bool:
        return self.parsed and self.inside

    def verdict(self) -> str:
        if self.engine_error is not None:
            return f"engine failed: {self.engine_error}"
        if self.parse_error is not None:
            return f"output does not parse: {self.parse_error}"
        if self.hit is not None:
            return f"{self.actions}: {'hit' if self.hit else 'missed'} by the benchmark's rule"
        if self.point is None or self.distance_px is None:
            return f"no click in the answer ({self.actions or 'no action'})"
        if self.inside:
            return "click inside the target"
        return f"click {self.distance_px:.0f} px from the target"


async def check_locate(policy: ModelPolicy, screenshot: Screenshot) -> StepCheck:
    frame = screenshot.frame()
    try:
        (location,) = await policy.locate(frame, (screenshot.locate,))
    except EngineError as exc:
        return StepCheck("locate", engine_error=str(exc))
    raw = location.raw_output
    if not location.found or location.point is None:
        geometry = policy.dialect.geometry(frame.size)
        try:
            policy.dialect.parse_location(raw, geometry)
            reason = "the policy found no position"
        except DialectParseError as exc:
            reason = exc.message
        return StepCheck("locate", raw_output=raw, parse_error=reason)
    point = location.point
    return StepCheck(
        "locate",
        raw_output=raw,
        point=point,
        actions=f"point ({point.x:.1f}, {point.y:.1f})",
        distance_px=distance_to(screenshot.target, point),
    )


async def check_navigate(policy: ModelPolicy, screenshot: Screenshot) -> StepCheck:
    frame = screenshot.frame()
    context = StepContext(session_id="model-check", task=screenshot.task, step=1, frames=(frame,))
    decision = await policy.decide(context)
    raw = decision.raw_output
    failure = next((a for a in decision.actions if isinstance(a, Fail)), None)
    if failure is not None and not raw and failure.reason.startswith(_ENGINE_FAILED):
        return StepCheck("navigate", engine_error=failure.reason)
    if failure is not None and raw:
        # The policy's own Fail after unparseable output: show the parser's words.
        geometry = policy.dialect.geometry(frame.size)
        try:
            policy.dialect.parse_step(raw, geometry)
        except DialectParseError as exc:
            return StepCheck("navigate", raw_output=raw, parse_error=exc.message)
    text = "; ".join(describe(a) for a in decision.actions)
    # The task needs a click (a double click counts); any other action misses it.
    click = next((a for a in decision.actions if isinstance(a, Click)), None)
    if click is None:
        return StepCheck("navigate", raw_output=raw, actions=text)
    distance = distance_to(screenshot.target, click.point)
    return StepCheck(
        "navigate", raw_output=raw, point=click.point, actions=text, distance_px=distance
    )
