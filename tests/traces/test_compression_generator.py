"""The synthetic trace generator: deterministic, sized, labelled, and its planted facts are
exactly what the documented patterns extract."""

from __future__ import annotations

import pytest

from pipeline.traces.compression.bands import band_of
from pipeline.traces.compression.facts import extract
from pipeline.traces.compression.generator import GENERATOR_VERSION, band_lengths, generate


def test_same_seed_and_length_give_the_same_bytes() -> None:
    assert generate(11, 5000) == generate(11, 5000)
    assert generate(11, 5000).item.text != generate(12, 5000).item.text


@pytest.mark.parametrize("length", [200, 999, 1000, 3500, 12000, 30000])
def test_length_is_met_within_forty_characters(length: int) -> None:
    for seed in range(5):
        text = generate(seed, length).item.text
        assert length - 40 <= len(text) <= length


@pytest.mark.parametrize("length", [300, 2500, 9000, 24000])
def test_planted_facts_are_exactly_the_extracted_facts(length: int) -> None:
    for seed in range(10):
        trace = generate(seed, length)
        assert set(extract(trace.item.text)) == set(trace.facts)
        assert len(set(trace.facts)) == len(trace.facts)


def test_long_traces_carry_every_fact_kind_and_churn() -> None:
    trace = generate(3, 8000)
    assert {f.kind for f in trace.facts} == {"path", "line_ref", "identifier", "number"}
    text = trace.item.text
    assert "Wait, actually" in text or "Let me restate" in text or "So again" in text
    assert len(trace.facts) >= 30


def test_synthetic_items_are_labelled_as_such() -> None:
    item = generate(5, 2000).item
    assert item.source == "synthetic" and item.synthetic
    assert item.provenance == f"foldsweep generator v{GENERATOR_VERSION} seed=5 length=2000"
    assert item.id == "synthetic/s5-n2000"
    assert item.band == band_of(len(item.text))


def test_band_lengths_fall_inside_their_bands() -> None:
    lengths = band_lengths(seed=2, n_per_band=5)
    assert [band_of(n) for n in lengths] == (
        ["<1k"] * 5 + ["1k-4k"] * 5 + ["4k-16k"] * 5 + [">=16k"] * 5
    )
    assert all(200 <= n < 32000 for n in lengths)
    assert band_lengths(seed=2, n_per_band=5) == lengths


def test_a_trace_generated_for_a_band_length_lands_in_that_band() -> None:
    lengths = band_lengths(seed=4, n_per_band=8, edges=(1000, 4000, 16000), longest=20000)
    for seed, length in enumerate(lengths):
        assert generate(seed, length).item.band == band_of(length)
