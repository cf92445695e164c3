"""Reading a recorded step's policy version from its Generation's JSON (versions.py).

The shapes here are what protobuf's JSON mapping writes (uint64 as strings, zero
values left out), checked against a real Generation message, plus what a hand-edited
or damaged recording may hold.
"""

from __future__ import annotations

from google.protobuf import json_format

from holodesk.data.versions import as_count, describe_versions, step_versions
from holodesk.proto.v1 import agent_pb2


def recorded(generation: agent_pb2.Generation) -> dict[str, object]:
    """A Generation as recordings store it."""
    return json_format.MessageToDict(generation, preserving_proto_field_name=True)


def test_the_recorded_json_of_a_real_generation_reads_back() -> None:
    straddling = agent_pb2.Generation(
        completions=[
            agent_pb2.Completion(
                text="x",
                versions=[
                    agent_pb2.VersionSpan(version=7, start=0, end=3),
                    agent_pb2.VersionSpan(version=8, start=3, end=9),
                ],
            )
        ],
        policy_version=8,
        policy_label="step-800",
    )
    as_json = recorded(straddling)
    assert as_json["policy_version"] == "8"  # uint64: a string in JSON
    versions = step_versions(as_json)
    assert (versions.policy_version, versions.policy_label) == (8, "step-800")
    assert versions.versions == {7, 8}
    assert versions.mixed

    # Version 0 of an updatable engine: every zero left out of the JSON, still a version.
    first = recorded(
        agent_pb2.Generation(
            completions=[agent_pb2.Completion(versions=[agent_pb2.VersionSpan(end=4)])]
        )
    )
    assert "policy_version" not in first
    assert step_versions(first).versions == {0}
    assert step_versions(first).known

    # A policy without versions, and a step without a model.
    plain = step_versions(recorded(agent_pb2.Generation(completions=[agent_pb2.Completion()])))
    assert not plain.known
    assert plain.versions == frozenset()
    assert step_versions(None) == step_versions({})


def test_damaged_values_are_unknown_not_errors() -> None:
    damaged = {
        "policy_version": "three",
        "policy_label": 5,
        "completions": [
            {"versions": [{"version": "-1"}, {"version": 2.0}, {"version": True}, "junk"]},
            "junk",
            {"versions": "junk"},
        ],
    }
    versions = step_versions(damaged)
    assert (versions.policy_version, versions.policy_label) == (0, "")
    assert versions.versions == {2}
    assert step_versions({"policy_version": 4}).versions == {4}  # no spans: the step's own
    assert [as_count(v) for v in ("12", " 3 ", 5, -5, "1e3", None, 1.5)] == [
        12,
        3,
        5,
        None,
        None,
        None,
        None,
    ]


def test_versions_read_as_words() -> None:
    assert describe_versions([]) == ""
    assert describe_versions([3, 3]) == "v3"
    assert describe_versions([2, 3]) == "v2, v3"
    assert describe_versions([5, 3, 4]) == "v3–v5"
    assert describe_versions([1, 4, 2]) == "v1, v2, v4"
