"""The pseudo-model behind simulated endpoints: deterministic, representation-sensitive."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from pipeline.carrier.prompts import (
    RECALL_SYSTEM_PROMPT,
    SYSTEM_PROMPTS,
    fold_message,
    recall_message,
)
from pipeline.carrier.sim_model import (
    STOCK_UUID,
    SimFact,
    SimProfile,
    SimReply,
    profiles_for,
    reply,
)

FACTS = tuple(SimFact(f"label {i:02d}", f"val-{i:02d}-{i * 7919 % 1000:03d}") for i in range(40))
CHUNKS = tuple(
    "\n".join(
        f"[operator] please set label {i:02d} to {f.value}" for i, f in enumerate(FACTS)
    ).splitlines()[k::3]
    for k in range(3)
)
GAINER = SimProfile(
    "gainer", skill=0.92, schema_penalty=0.40, partition_gain=0.35, self_partition=0.0
)


def schema_format(fields: int, max_length: int = 9600, wire: str = "json_schema") -> dict[str, Any]:
    props = {f"field_{k}": {"type": "string", "maxLength": max_length} for k in range(fields)}
    schema = {"type": "object", "properties": props, "required": list(props)}
    if wire == "json_schema":
        return {
            "type": "json_schema",
            "json_schema": {"name": "c", "strict": True, "schema": schema},
        }
    return {"type": "json_object", "schema": schema}


def fold_body(carrier: str, chunk: str, response_format: dict[str, Any] | None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": "m",
        "max_tokens": 4000,
        "messages": [
            {"role": "system", "content": SYSTEM_PROMPTS["fixed_headings"]},
            {"role": "user", "content": fold_message(carrier, chunk)},
        ],
    }
    if response_format is not None:
        body["response_format"] = response_format
    return body


def recall_body(carrier: str, labels: list[str]) -> dict[str, Any]:
    return {
        "model": "m",
        "messages": [
            {"role": "system", "content": RECALL_SYSTEM_PROMPT},
            {"role": "user", "content": recall_message(carrier, labels)},
        ],
    }


def correct_answers(profile: SimProfile, response_format: dict[str, Any] | None) -> int:
    """Three folds then a recall of every label; the carrier is the raw reply text."""
    carrier = ""
    for chunk in CHUNKS:
        answer = reply(fold_body(carrier, "\n".join(chunk), response_format), FACTS, profile, 7)
        carrier = answer.text or ""
    recall = reply(recall_body(carrier, [f.label for f in FACTS]), FACTS, profile, 7)
    expected = {f"{f.label}: {f.value}" for f in FACTS}
    return sum(line in expected for line in (recall.text or "").splitlines())


def test_same_request_gives_byte_identical_reply() -> None:
    body = fold_body("", "\n".join(CHUNKS[0]), schema_format(5, 1920))
    assert reply(body, FACTS, GAINER, 7) == reply(dict(body), FACTS, GAINER, 7)


def test_another_seed_or_request_seed_changes_what_is_kept() -> None:
    body = fold_body("", "\n".join(CHUNKS[0]), None)
    base = reply(body, FACTS, GAINER, 7).text
    assert reply(body, FACTS, GAINER, 8).text != base
    assert reply({**body, "seed": 3}, FACTS, GAINER, 7).text != base


def test_five_fields_recall_more_than_one_field_for_a_partition_gainer() -> None:
    one = correct_answers(GAINER, schema_format(1, 9600))
    five = correct_answers(GAINER, schema_format(5, 1920))
    assert five > one + 5


def test_five_fields_recall_less_than_one_field_for_a_partition_loser() -> None:
    loser = replace(GAINER, schema_penalty=0.05, partition_gain=-0.45)
    assert correct_answers(loser, schema_format(5, 1920)) < correct_answers(
        loser, schema_format(1, 9600)
    )


def test_json_object_wire_form_is_read_like_json_schema() -> None:
    chunk = "\n".join(CHUNKS[0])
    a = reply(fold_body("", chunk, schema_format(5, wire="json_object")), FACTS, GAINER, 7)
    b = reply(fold_body("", chunk, schema_format(5)), FACTS, GAINER, 7)
    assert a.representation == b.representation == "five_fields"


def test_schema_reply_fills_every_property_within_max_length() -> None:
    steady = replace(GAINER, skill=0.99, length_pressure=0.0)
    answer = reply(fold_body("", "\n".join(CHUNKS[0]), schema_format(5, 60)), FACTS, steady, 7)
    fields = json.loads(answer.text or "")
    assert sorted(fields) == [f"field_{k}" for k in range(5)]
    assert all(0 < len(value) <= 60 for value in fields.values())


def test_length_pressure_makes_fields_overrun_max_length() -> None:
    pushy = replace(GAINER, skill=0.99, length_pressure=1.0)
    answer = reply(fold_body("", "\n".join(CHUNKS[0]), schema_format(5, 60)), FACTS, pushy, 7)
    assert any(len(value) > 60 for value in json.loads(answer.text or "").values())


def test_plain_reply_carries_the_five_requested_headings() -> None:
    answer = reply(fold_body("", "\n".join(CHUNKS[0]), None), FACTS, GAINER, 7)
    headings = [line for line in (answer.text or "").splitlines() if line.startswith("## ")]
    assert headings == [
        "## Goal",
        "## Progress",
        "## Key facts",
        "## Open questions",
        "## Next steps",
    ]
    assert answer.representation == "headings"


def test_small_max_tokens_cuts_the_reply_with_a_length_finish() -> None:
    body = {**fold_body("", "\n".join(CHUNKS[0]), schema_format(1)), "max_tokens": 20}
    answer = reply(body, FACTS, GAINER, 7)
    assert answer.finish_reason == "length"
    assert answer.completion_tokens == 20


def test_recall_answers_every_value_present_in_memory() -> None:
    exact = replace(GAINER, answer_miss=0.0)
    memory = "\n".join(f"{f.label}: {f.value}" for f in FACTS[:5])
    answer = reply(recall_body(memory, [f.label for f in FACTS[:5]]), FACTS, exact, 7)
    assert (answer.text or "").splitlines() == [f"{f.label}: {f.value}" for f in FACTS[:5]]
    assert answer.kind == "recall"


def test_recall_abstains_on_lost_values_when_it_never_fabricates() -> None:
    honest = replace(GAINER, fabrication=0.0)
    answer = reply(recall_body("nothing kept", ["label 00", "label 01"]), FACTS, honest, 7)
    assert (answer.text or "").splitlines() == ["label 00: unknown", "label 01: unknown"]


def test_recall_fabricates_stock_values_for_lost_values() -> None:
    facts = (
        SimFact("api port", "62114"),
        SimFact("install uuid", "9b2f7c1e-4d3a-4f6b-8a2e-1c5d7e9f0a3b"),
        SimFact("shard count", "19 shards"),
    )
    liar = replace(GAINER, fabrication=1.0)
    answer = reply(recall_body("(none)", [f.label for f in facts]), facts, liar, 7)
    assert (answer.text or "").splitlines() == [
        "api port: 8443",
        f"install uuid: {STOCK_UUID}",
        "shard count: 16 shards",
    ]


def test_model_faults_appear_when_enabled_and_never_when_disabled() -> None:
    bodies = [
        fold_body("", "\n".join(CHUNKS[0]), schema_format(5, 1920)) | {"seed": s} for s in range(60)
    ]
    off = [reply(b, FACTS, GAINER, 7) for b in bodies]
    on = [reply(b, FACTS, GAINER, 7, model_fault_rate=0.5) for b in bodies]
    assert all(r.model_fault is None for r in off)
    kinds = {r.model_fault for r in on} - {None}
    assert kinds == {"empty", "refusal", "nonconforming_json"}
    assert all(_looks_faulty(r) for r in on if r.model_fault)


def _looks_faulty(answer: SimReply) -> bool:
    if answer.model_fault == "refusal":
        return answer.refusal is not None and answer.text in (None, answer.refusal)
    if answer.model_fault == "empty":
        return answer.text == ""
    try:
        parsed = json.loads(answer.text or "")
    except ValueError:
        return answer.finish_reason == "length"
    return "field_0" not in parsed


def test_profiles_are_deterministic_and_include_gainers_and_losers() -> None:
    profiles = profiles_for(8, seed=7)
    assert profiles == profiles_for(8, seed=7)
    assert len({p.config_id for p in profiles}) == 8
    assert any(p.partition_gain > 0.2 for p in profiles)
    assert any(p.partition_gain < -0.1 for p in profiles)
    assert profiles[0].served_model == "sim-model-00"
