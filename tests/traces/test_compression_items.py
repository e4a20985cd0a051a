"""Trace items from the shipped corpora, the recorded reasoning and a user's JSONL."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pipeline.traces.compression.items import (
    TraceFileError,
    dedupe,
    from_jsonl,
    from_openhands,
    from_openhands_jsonl,
    from_reasoning_fixture,
    from_swe_agent,
    load_real,
    origin_of,
)
from pipeline.usererror import UserError

DATA = Path(__file__).resolve().parents[2] / "data"
PYDICOM = (
    "swe-agent/tests/test_data/trajectories/gpt4__swe-bench-dev-easy_first_only__default__"
    "t-0.00__p-0.95__c-3.00__install-1/pydicom__pydicom-1458.traj"
)


def _json(relative: str) -> Any:
    return json.loads((DATA / relative).read_text(encoding="utf-8"))


def test_swe_agent_thoughts_are_items_with_provenance() -> None:
    traj = _json(f"transcripts/{PYDICOM}")
    items = load_real(traj, PYDICOM, origin="SWE-agent/SWE-agent@3ea751c")
    thoughts = [s["thought"] for s in traj["trajectory"] if s["thought"].strip()]
    assert [i.text for i in items] == thoughts
    first = items[0]
    assert first.id.startswith("swe-agent/tests/test_data/") and first.id.endswith(
        "pydicom__pydicom-1458/trajectory[0]"
    )
    assert first.provenance == f"SWE-agent/SWE-agent@3ea751c {PYDICOM}#trajectory[0]"
    assert (first.source, first.synthetic, first.band) == ("swe-agent", False, "<1k")


def test_swe_agent_file_without_a_trajectory_gives_its_assistant_history_thoughts() -> None:
    path = "swe-agent/trajectories/demonstrations/function_calling_simple.traj"
    items = load_real(_json(f"transcripts/{path}"), path)
    assert len(items) == 5
    assert all("/history[" in i.id for i in items)
    assert items[0].text.startswith("The `SyntaxError` in `missing_colon.py`")


def test_blank_thoughts_are_not_items() -> None:
    traj = {"trajectory": [{"thought": "  \n"}, {"thought": None}, {"thought": "look at x.py"}]}
    items = from_swe_agent(traj, "swe-agent/a.traj")
    assert [(i.id, i.text) for i in items] == [("swe-agent/a/trajectory[2]", "look at x.py")]


def test_openhands_event_thoughts_new_and_legacy() -> None:
    events = [
        {"id": 1, "action": "run", "args": {"thought": "run the tests", "command": "pytest"}},
        {"id": 2, "observation": "run", "content": "ok"},
        {"action": "run", "thought": "legacy thought", "command": "ls"},
    ]
    items = from_openhands(events, "openhands/x.json")
    assert [(i.id, i.text) for i in items] == [
        ("openhands/x/events[0]", "run the tests"),
        ("openhands/x/events[2]", "legacy thought"),
    ]


def test_openhands_shipped_files_give_thoughts() -> None:
    basic = from_openhands(_json("transcripts/openhands/basic.json"), "openhands/basic.json")
    assert len(basic) == 2
    text = (DATA / "transcripts/openhands/resolver_mock_output.jsonl").read_text(encoding="utf-8")
    resolver = from_openhands_jsonl(text, "openhands/resolver_mock_output.jsonl")
    assert {i.id.split("/")[2] for i in resolver} == {"1", "2"}  # by line number
    assert resolver[0].text.startswith("Certainly! I'll add the MIT license")


def test_openhands_jsonl_line_without_history_is_one_error_naming_the_line() -> None:
    with pytest.raises(TraceFileError, match=r"^out\.jsonl: line 2: expected an object"):
        from_openhands_jsonl('{"history": []}\n{"nope": 1}\n', "out.jsonl")


def test_recorded_reasoning_fixtures() -> None:
    folder = "reasoning-fixtures"
    deepseek = f"{folder}/vercel-ai_deepseek-v4-flash_tool-call.json"
    sonnet = f"{folder}/vercel-ai_anthropic_claude-sonnet-4-6_thinking-tool-call.json"
    compaction = f"{folder}/vercel-ai_anthropic_claude-opus-4-6_compaction.json"
    [ds] = load_real(_json(deepseek), deepseek)
    assert ds.text.startswith("The user asks about weather in San Francisco")
    assert (
        ds.id
        == "reasoning-fixture/vercel-ai_deepseek-v4-flash_tool-call/choices[0].reasoning_content"
    )
    [claude] = load_real(_json(sonnet), sonnet)
    assert claude.text == "The user wants me to call checkSandboxErrors immediately."
    assert load_real(_json(compaction), compaction) == []  # a summary, not reasoning


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning", "reasoning_text"])
def test_every_reasoning_dialect_is_read(field: str) -> None:
    reply = {"choices": [{"message": {"role": "assistant", field: "think about x.py"}}]}
    [item] = from_reasoning_fixture(reply, "reasoning-fixtures/r.json")
    assert item.text == "think about x.py" and item.id.endswith(field)


def test_unknown_corpus_is_a_user_error() -> None:
    with pytest.raises(UserError, match="not a known trace corpus"):
        load_real({}, "elsewhere/file.json")


def test_user_jsonl_reads_id_text_and_optional_source() -> None:
    text = '{"id": "a", "text": "look at x.py"}\n\n{"id": "b", "text": "t", "source": "pi"}\n'
    items = from_jsonl(text, "mine.jsonl")
    assert [(i.id, i.source, i.provenance) for i in items] == [
        ("a", "jsonl", "mine.jsonl#line 1"),
        ("b", "pi", "mine.jsonl#line 3"),
    ]


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('{"id": "a", "text": "x"}\n{"id": "b", "text": ', "line 2: not JSON"),
        ('["a", "b"]', "line 1: expected an object, got list"),
        ('{"text": "x"}', "line 1: 'id' must be a non-empty string, got missing"),
        ('{"id": 3, "text": "x"}', "line 1: 'id' must be a non-empty string, got int"),
        ('{"id": "a", "text": ""}', "line 1: 'text' must be a non-empty string"),
        ('{"id": "a", "text": "x", "txt": "y"}', "line 1: unknown key 'txt'"),
        ('{"id": "a", "text": "x"}\n{"id": "a", "text": "y"}', "line 2: id 'a' already used"),
        ("\n  \n", "file: no traces"),
    ],
)
def test_malformed_user_jsonl_is_one_line_naming_file_line_and_problem(
    text: str, problem: str
) -> None:
    with pytest.raises(TraceFileError) as info:
        from_jsonl(text, "mine.jsonl")
    message = str(info.value)
    assert message.startswith(f"mine.jsonl: {problem}")
    assert "\n" not in message


def test_dedupe_keeps_the_first_of_repeated_texts_and_counts_the_rest() -> None:
    text = '{"id": "a", "text": "same"}\n{"id": "b", "text": "other"}\n{"id": "c", "text": "same"}'
    kept, removed = dedupe(from_jsonl(text, "mine.jsonl"))
    assert [i.id for i in kept] == ["a", "b"] and removed == 1


def test_origin_names_repository_short_commit_and_licence_from_a_sources_entry() -> None:
    entries = json.loads((DATA / "reasoning-fixtures/SOURCES.json").read_text("utf-8"))
    entry = next(e for e in entries if e["path"].startswith("vercel-ai_deepseek"))
    assert origin_of(entry) == "vercel/ai@203e2872b831 (Apache-2.0)"
    shipped = json.loads((DATA / "transcripts/SOURCES.json").read_text("utf-8"))
    assert origin_of(shipped[0]) == "SWE-agent/SWE-agent@3ea751c087f3 (MIT)"


def test_issue21_invalid_utf8_in_a_user_jsonl_is_one_line_naming_file_and_line() -> None:
    data = b'{"id": "a", "text": "fine"}\n{"id": "b", "text": "bad \xff byte"}\n'
    with pytest.raises(TraceFileError, match=r"^mine.jsonl: line 2: not UTF-8 text \(byte 25"):
        from_jsonl(data, "mine.jsonl")


def test_a_line_holding_nan_is_one_line_naming_file_and_line() -> None:
    data = b'{"id": "a", "text": "fine"}\n{"id": "b", "text": "x", "score": NaN}\n'
    with pytest.raises(TraceFileError, match=r"^nan.jsonl: line 2: not JSON: NaN is not a JSON"):
        from_jsonl(data, "nan.jsonl")


def test_issue21_a_line_nested_200000_deep_is_one_line_naming_file_and_line() -> None:
    deep = "[" * 200_000 + "]" * 200_000
    data = f'{{"id": "a", "text": "ok"}}\n{deep}\n'.encode()
    with pytest.raises(TraceFileError, match=r"^deep.jsonl: line 2: nested too deeply"):
        from_jsonl(data, "deep.jsonl")
