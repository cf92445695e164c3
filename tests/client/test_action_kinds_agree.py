"""The client's and the daemon's action vocabularies are two families on purpose
(the daemon's kinds exist before their ids; the client's are flat values with ids and
an Unsupported kind), so what ties them is checked here, against the contract itself:
the same kinds, the same fields, the contract's own names; and the values they share
(Sampling, Completion, Modifier) are one definition, read the same on both sides."""

from __future__ import annotations

import dataclasses
import re
from typing import get_args

from holodesk.client import actions as client_actions
from holodesk.client import convert as client_convert
from holodesk.client import generation as client_generation
from holodesk.daemon import actions as daemon_actions
from holodesk.daemon import convert as daemon_convert
from holodesk.daemon import generation as daemon_generation
from holodesk.daemon.geometry import Point
from holodesk.proto.v1 import action_pb2, agent_pb2
from holodesk.values import actions as values_actions
from holodesk.values import generation as values_generation
from holodesk.values.keys import MODIFIERS

_IDS = ("action_id", "frame_id")


def snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def field_names(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls) if f.name not in _IDS)


def client_kinds() -> dict[str, type]:
    kinds = get_args(client_actions.Action)
    return {snake(k.__name__): k for k in kinds if k is not client_actions.Unsupported}


def daemon_kinds() -> dict[str, type]:
    return {snake(k.__name__): k for k in get_args(daemon_actions.ActionKind)}


def contract_kinds() -> dict[str, tuple[str, tuple[str, ...]]]:
    kinds: dict[str, tuple[str, tuple[str, ...]]] = {}
    for field in action_pb2.Action.DESCRIPTOR.oneofs_by_name["kind"].fields:
        message = field.message_type
        assert message is not None, field.name
        kinds[field.name] = (message.name, tuple(x.name for x in message.fields))
    return kinds


def test_both_sides_have_exactly_the_contracts_action_kinds() -> None:
    contract = contract_kinds()
    assert sorted(client_kinds()) == sorted(contract)
    assert sorted(daemon_kinds()) == sorted(contract)
    # The client reads what it cannot understand as its one extra kind, never sent.
    assert "unsupported" not in contract
    for name, kind in client_kinds().items():
        assert contract[name][0] == f"{kind.__name__}Action", name


def test_each_kind_has_the_contracts_fields_on_both_sides() -> None:
    contract, client, daemon = contract_kinds(), client_kinds(), daemon_kinds()
    for name, (message, fields) in contract.items():
        assert field_names(client[name]) == fields, (name, message)
        assert field_names(daemon[name]) == fields, (name, message)
        # The client's action carries the ids the daemon keeps on its Action wrapper.
        client_own = tuple(f.name for f in dataclasses.fields(client[name]))
        assert set(_IDS) <= set(client_own), name
    assert tuple(f.name for f in dataclasses.fields(daemon_actions.Action)) == (*_IDS, "kind")


def test_the_kinds_that_end_a_batch_agree() -> None:
    client_control = {k.__name__ for k in get_args(client_actions.ControlAction)}
    assert client_control == {k.__name__ for k in daemon_actions.TERMINAL_KINDS}
    assert {k.__name__ for k in daemon_actions.SESSION_ENDING_KINDS} < client_control


def test_modifiers_are_one_definition_named_as_keys() -> None:
    assert client_actions.Modifier is daemon_actions.Modifier is values_actions.Modifier
    assert tuple(m.value for m in values_actions.Modifier) == MODIFIERS
    names = [v.name for v in action_pb2.Modifier.DESCRIPTOR.values]
    wire = [n for n in names if n != "MODIFIER_UNSPECIFIED"]
    assert wire == [f"MODIFIER_{m.name}" for m in values_actions.Modifier]


def test_a_clicks_modifiers_cross_the_wire_as_the_daemon_holds_them() -> None:
    mods = tuple(daemon_actions.Modifier)
    kind = daemon_actions.Click(Point(3.5, 4.0), modifiers=mods)
    wire = daemon_convert.action_to_pb(daemon_actions.Action("a1", "f1", kind))
    read = client_convert.action_from_pb(wire)
    assert isinstance(read, client_actions.Click)
    assert read.modifiers == tuple(m.value for m in mods)
    assert (read.action_id, read.frame_id, read.point) == (
        "a1",
        "f1",
        client_actions.FramePoint(3.5, 4.0),
    )


def test_sampling_and_completion_are_one_definition_with_the_contracts_fields() -> None:
    assert client_generation.Sampling is daemon_generation.Sampling is values_generation.Sampling
    assert (
        client_generation.Completion is daemon_generation.Completion is values_generation.Completion
    )
    sampling_fields = tuple(f.name for f in dataclasses.fields(values_generation.Sampling))
    assert sampling_fields == tuple(f.name for f in agent_pb2.SamplingParams.DESCRIPTOR.fields)
    completion_fields = {f.name for f in dataclasses.fields(values_generation.Completion)}
    # `parsed` is the wire's own field, and here a rule: no parse error.
    assert completion_fields | {"parsed"} == {
        f.name for f in agent_pb2.Completion.DESCRIPTOR.fields
    }


def test_the_client_s_sampling_reads_back_equal_on_the_daemon() -> None:
    for sampling in (
        values_generation.Sampling(),
        values_generation.Sampling(temperature=0.7, top_p=0.9, seed=2**64 - 1, candidates=3),
        values_generation.Sampling(temperature=0.0, logprobs=True, max_tokens=64),
    ):
        wire = client_convert.sampling_to_pb(sampling)
        assert daemon_convert.sampling_from_pb(wire, "start.sampling") == sampling


def test_a_completion_reads_back_as_the_daemon_wrote_it() -> None:
    completions = (
        values_generation.Completion(
            "ok", token_ids=(1, 2), token_logprobs=(-0.5, -0.25), cumulative_logprob=-0.75
        ),
        values_generation.Completion("??", parse_error="no action in the answer"),
    )
    step = daemon_generation.StepGeneration(messages=(), completions=completions, chosen=0)
    read = client_convert.generation_from_pb(daemon_convert.generation_to_pb(step))
    assert read.completions == completions
    assert [c.parsed for c in read.completions] == [True, False]


def test_the_wires_parsed_flag_decides_when_it_and_the_error_disagree() -> None:
    unparsed = client_convert.completion_from_pb(agent_pb2.Completion(text="x", parsed=False))
    assert not unparsed.parsed
    assert unparsed.parse_error == "not parsed (the daemon gave no reason)"
    parsed = client_convert.completion_from_pb(
        agent_pb2.Completion(text="x", parsed=True, parse_error="stale")
    )
    assert parsed.parsed
    assert parsed.parse_error == ""
