"""Metrics of one summary on hand-made examples."""

from __future__ import annotations

import pytest

from pipeline.traces.compression.items import make_item
from pipeline.traces.compression.metrics import COLUMNS, score, sha256

TRACE = (
    "Wait, actually the bug is in src/gateway/proxy.mjs, not in lib/cache_store.py. "
    "Hmm, let me think again about whether it is really there."
)


def test_a_summary_keeping_one_of_two_paths_retains_half() -> None:
    record = score(make_item("t1", TRACE, "test", "hand"), "Bug in src/gateway/proxy.mjs.")
    assert record["facts_path"] == 2
    assert record["retained_path"] == 1
    assert record["retention_path"] == 0.5
    assert record["retention"] == 0.5
    assert record["precision_path"] == 1.0
    assert record["invented"] == 0


def test_an_invented_path_lowers_precision_and_is_counted() -> None:
    summary = "Bug in src/gateway/proxy.mjs; fix lib/other.py too."
    record = score(make_item("t1", TRACE, "test", "hand"), summary)
    assert record["summary_facts_path"] == 2
    assert record["supported_path"] == 1
    assert record["precision_path"] == 0.5
    assert record["invented_path"] == 1
    assert record["invented"] == 1


def test_kinds_absent_from_the_trace_have_no_retention_rather_than_perfect() -> None:
    record = score(make_item("t1", TRACE, "test", "hand"), "Bug in src/gateway/proxy.mjs.")
    assert record["facts_number"] == 0
    assert record["retention_number"] is None
    assert record["precision_number"] is None


def test_compression_ratio_in_characters_and_tokens() -> None:
    item = make_item("t1", "a" * 1000, "test", "hand")
    record = score(item, "b" * 250, count_tokens=lambda text: len(text) // 4)
    assert record["compression_chars"] == 4.0
    assert (record["trace_tokens"], record["summary_tokens"]) == (250, 62)
    assert record["compression_tokens"] == pytest.approx(250 / 62)
    assert score(item, "b" * 250)["compression_tokens"] is None


def test_an_empty_summary_has_no_ratio_and_says_so() -> None:
    record = score(make_item("t1", TRACE, "test", "hand"), "  ")
    assert record["empty_summary"] is True
    assert record["compression_chars"] is None
    assert record["retention"] == 0.0
    assert record["precision"] is None


def test_repeated_facts_count_once_and_normalised_forms_meet() -> None:
    trace = "It took 30ms, then 30ms again, at line 913 and line 913."
    record = score(make_item("t1", trace, "test", "hand"), "Took 30 ms at Line 913.")
    assert (record["facts_number"], record["retained_number"]) == (1, 1)
    assert (record["facts_line_ref"], record["retained_line_ref"]) == (1, 1)
    assert record["retention"] == 1.0


def test_a_partial_token_is_not_a_retained_fact() -> None:
    trace = "The guard is at line 9 of proxy.mjs."
    record = score(make_item("t1", trace, "test", "hand"), "Guard at line 913 of proxy.mjs.")
    assert record["retained_line_ref"] == 0
    assert record["invented_line_ref"] == 1


def test_the_record_is_flat_scalars_with_the_item_columns() -> None:
    record = score(make_item("t1", TRACE, "jsonl", "hand"), "summary")
    assert all(isinstance(v, str | int | float | bool) or v is None for v in record.values())
    assert (record["item_id"], record["band"], record["source"], record["synthetic"]) == (
        "t1",
        "<1k",
        "jsonl",
        False,
    )
    assert record["summary_sha256"] == sha256("summary")


def test_every_record_has_the_documented_columns_in_order() -> None:
    item = make_item("t1", TRACE, "test", "hand")
    assert tuple(score(item, "x")) == COLUMNS
    assert tuple(score(item, "", count_tokens=len)) == COLUMNS
