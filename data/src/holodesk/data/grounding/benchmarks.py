"""The grounding benchmarks holodesk reads and scores, each with its official breakdown.

`card_figure` is what Holotron-12B's model card reports (percent), so a run can be set
beside it; ScreenSpot-Pro is not in the card. The card does not say which harness,
prompt or resize produced its table, so a gap is a lead to follow, not a verdict.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Literal

from holodesk.data.grounding.readers import (
    groundui,
    osworld_g,
    screenspot_pro,
    screenspot_v2,
    showdown,
    webclick,
)
from holodesk.data.grounding.samples import Dataset

Interval = Literal["wilson", "bootstrap"]
Reader = Callable[..., Dataset]


@dataclass(frozen=True)
class Benchmark:
    """One benchmark: how to read it, how its table breaks down, its interval.

    `reader(path, *, strict=False) -> Dataset`. `breakdowns` lists the official
    tables, each a tuple of group keys (one row per combination of their values).
    """

    name: str
    reader: Reader
    breakdowns: tuple[tuple[str, ...], ...]
    interval: Interval
    card_figure: float | None
    layout: str = ""

    def read(self, path: Path, *, strict: bool = False) -> Dataset:
        return self.reader(path, strict=strict)


BENCHMARKS: Mapping[str, Benchmark] = MappingProxyType(
    {
        b.name: b
        for b in (
            Benchmark(
                name=screenspot_v2.BENCHMARK,
                reader=screenspot_v2.read,
                breakdowns=(("platform", "data_type"), ("platform",), ("data_type",)),
                interval="wilson",
                card_figure=89.9,
                layout="screenspot_{mobile,desktop,web}_v2.json + screenspotv2_image/",
            ),
            Benchmark(
                name=screenspot_pro.BENCHMARK,
                reader=screenspot_pro.read,
                breakdowns=(("group", "ui_type"), ("group",), ("application",), ("ui_type",)),
                interval="wilson",
                card_figure=None,
                layout="annotations/<app>.json + images/",
            ),
            Benchmark(
                name=osworld_g.BENCHMARK,
                reader=osworld_g.read,
                breakdowns=(("category",), ("box_type",)),
                interval="wilson",
                card_figure=49.0,
                layout="OSWorld-G.json + images/ (+ classification_result.json)",
            ),
            Benchmark(
                name=groundui.BENCHMARK,
                reader=groundui.read,
                breakdowns=(("platform",), ("source",)),
                interval="wilson",
                card_figure=82.0,
                layout="Parquet: image, instruction, bbox, resolution, source, platform",
            ),
            Benchmark(
                name=webclick.BENCHMARK,
                reader=webclick.read,
                breakdowns=(("bucket",),),
                interval="wilson",
                card_figure=83.8,
                layout="Parquet: image, instruction, bbox (normalised), bucket",
            ),
            Benchmark(
                name=showdown.BENCHMARK,
                reader=showdown.read,
                breakdowns=(),
                interval="bootstrap",
                card_figure=66.1,
                layout="data.csv + frames/",
            ),
        )
    }
)
