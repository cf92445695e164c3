"""Issue 15 item 4: no caller, authenticated or not, can grow the daemon's metrics.

Every label of every series takes its values from a bounded set: a method nobody
serves is counted under one ``method="unknown"`` label, however many names are
tried, so neither the daemon's memory nor /metrics grows with the calls.
"""

from __future__ import annotations

import asyncio
import urllib.request
import uuid
from pathlib import Path

import grpc
import pytest
from prometheus_client.parser import text_string_to_metric_families

from holodesk.daemon.metrics import OTHER_LABEL, BoundedLabel
from holodesk.daemon.rpc.metrics_interceptor import UNKNOWN_METHOD
from tests.daemon.support import GUARD_S, running_daemon, scripted_policy, write_tokens

pytestmark = pytest.mark.abuse

CALLS = 3000
CONCURRENCY = 100


def _fetch(url: str) -> str:
    with urllib.request.urlopen(url, timeout=GUARD_S) as response:
        return str(response.read().decode())


def _method_labels(text: str) -> set[str]:
    return {
        sample.labels["method"]
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if "method" in sample.labels
    }


def _unknown_count(text: str) -> float:
    (count,) = (
        sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == "holodesk_rpc_errors_total"
        and sample.labels == {"method": UNKNOWN_METHOD, "code": "UNIMPLEMENTED"}
    )
    return count


async def _unknown_calls(channel: grpc.aio.Channel, count: int) -> None:
    """`count` calls, each to a method name never used before, CONCURRENCY at a time."""
    names = iter(range(count))

    async def caller() -> None:
        for _ in names:
            method = f"/evil.{uuid.uuid4().hex}/M{uuid.uuid4().hex}"
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await channel.unary_unary(method)(b"", timeout=GUARD_S)
            assert refused.value.code() == grpc.StatusCode.UNIMPLEMENTED

    await asyncio.gather(*(caller() for _ in range(CONCURRENCY)))


async def test_unknown_methods_share_one_label_and_metrics_stay_small(tmp_path: Path) -> None:
    """3,000 calls to 3,000 different unknown methods, without a credential, on a
    daemon that requires tokens: one label, and /metrics no bigger than after one."""
    tokens = write_tokens(tmp_path, ops="admin")
    async with running_daemon(
        [scripted_policy([])], metrics_address="127.0.0.1:0", tokens_file=str(tokens.path)
    ) as daemon:
        exporter = daemon.running.metrics_exporter
        assert exporter is not None
        await _unknown_calls(daemon.channel, 1)
        after_one = await asyncio.to_thread(_fetch, exporter.url)
        await _unknown_calls(daemon.channel, CALLS)
        after_all = await asyncio.to_thread(_fetch, exporter.url)

    assert _method_labels(after_all) == {UNKNOWN_METHOD}
    # Only the counter's value grows (a few digits), never a series per call.
    assert len(after_all) - len(after_one) < 64
    assert _unknown_count(after_all) == CALLS + 1


def test_a_bounded_label_keeps_its_first_values_and_folds_the_rest() -> None:
    """The guard on every label: past its limit new values share OTHER_LABEL, while
    the values it already holds keep their own series."""
    label = BoundedLabel("policy", limit=3)
    assert [label.value(v) for v in ("a", "b", "c", "d", "e", "a")] == [
        "a",
        "b",
        "c",
        OTHER_LABEL,
        OTHER_LABEL,
        "a",
    ]
