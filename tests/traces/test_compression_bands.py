"""Length bands: half-open at the edges, configurable, and a deterministic stratified sample."""

from __future__ import annotations

import pytest

from pipeline.config.strict import ConfigError
from pipeline.traces.compression.bands import (
    DEFAULT_EDGES,
    band_index,
    band_of,
    labels,
    stratified_sample,
)
from pipeline.traces.compression.items import TraceItem, make_item


def test_default_edges_and_labels_follow_the_issue() -> None:
    assert DEFAULT_EDGES == (1000, 4000, 16000)
    assert labels() == ("<1k", "1k-4k", "4k-16k", ">=16k")


@pytest.mark.parametrize(
    ("chars", "band"),
    [
        (0, "<1k"),
        (999, "<1k"),
        (1000, "1k-4k"),  # an edge opens the band above it
        (3999, "1k-4k"),
        (4000, "4k-16k"),
        (15999, "4k-16k"),
        (16000, ">=16k"),
        (255000, ">=16k"),
    ],
)
def test_band_split_at_the_edges(chars: int, band: str) -> None:
    assert band_of(chars) == band


def test_custom_edges_name_their_bands() -> None:
    edges = (500, 2500)
    assert labels(edges) == ("<500", "500-2500", ">=2500")
    assert band_index(499, edges) == 0
    assert band_index(500, edges) == 1
    assert band_of(2500, edges) == ">=2500"


@pytest.mark.parametrize("edges", [(), (1000, 1000), (4000, 1000), (0, 10), (1.5, 3)])
def test_bad_edges_are_one_line_config_errors(edges: tuple[int, ...]) -> None:
    with pytest.raises(ConfigError) as info:
        labels(edges)
    assert "\n" not in str(info.value)


def _items(lengths: list[int]) -> list[TraceItem]:
    return [make_item(f"t{i:03d}", "x" * n, "test", "hand") for i, n in enumerate(lengths)]


def test_stratified_sample_is_deterministic_and_ignores_input_order() -> None:
    items = _items([100] * 10 + [2000] * 10 + [5000] * 3)
    first = stratified_sample(items, 4, seed=7)
    again = stratified_sample(list(reversed(items)), 4, seed=7)
    assert [i.id for i in first.items] == [i.id for i in again.items]
    other = stratified_sample(items, 4, seed=8)
    assert [i.id for i in other.items] != [i.id for i in first.items]


def test_stratified_sample_takes_n_per_band_and_reports_what_each_band_had() -> None:
    items = _items([100] * 10 + [2000] * 10 + [5000] * 3)
    sample = stratified_sample(items, 4, seed=1)
    assert [(c.band, c.available, c.taken) for c in sample.counts] == [
        ("<1k", 10, 4),
        ("1k-4k", 10, 4),
        ("4k-16k", 3, 3),
        (">=16k", 0, 0),
    ]
    assert sample.short_bands() == ("4k-16k", ">=16k")
    assert len(sample.items) == 11
    assert [band_of(len(i.text)) for i in sample.items] == ["<1k"] * 4 + ["1k-4k"] * 4 + [
        "4k-16k"
    ] * 3
