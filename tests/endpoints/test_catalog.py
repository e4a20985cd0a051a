"""Catalog snapshots: import, parsing, lookup and the recency-rule date arithmetic."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, date, datetime
from pathlib import Path

import pytest

from pipeline.endpoints.catalog import (
    CatalogError,
    import_dump,
    load_catalog,
    months_before,
    recency_cutoff,
)

SHIPPED = "openrouter-models-2026-06-16.json"
SHIPPED_SHA256 = "ee220d359b53d3dc7dc6f4984cd9be392030fa2854047221b33b2cc209085048"


def _ts(day: str, hour: int = 12) -> int:
    return int(datetime.fromisoformat(day).replace(hour=hour, tzinfo=UTC).timestamp())


def _model(model_id: str, created: int, **extra: object) -> dict[str, object]:
    return {"id": model_id, "created": created, **extra}


def _write_dump(path: Path, *models: dict[str, object]) -> Path:
    path.write_text(json.dumps({"data": list(models)}), encoding="utf-8")
    return path


def test_import_dump_copies_bytes_into_a_dated_file(tmp_path: Path) -> None:
    src = _write_dump(tmp_path / "dump.json", _model("a/b", _ts("2026-03-01")))
    dest = import_dump(src, tmp_path / "catalog", "2026-03-02")
    assert dest == tmp_path / "catalog" / "openrouter-models-2026-03-02.json"
    assert dest.read_bytes() == src.read_bytes()
    assert load_catalog(dest).snapshot_date == date(2026, 3, 2)


def test_import_dump_refuses_a_model_created_after_the_snapshot_date(tmp_path: Path) -> None:
    src = _write_dump(tmp_path / "dump.json", _model("a/late", _ts("2026-03-05")))
    with pytest.raises(CatalogError, match="after the snapshot date 2026-03-02"):
        import_dump(src, tmp_path, date(2026, 3, 2))


def test_reimporting_identical_bytes_is_a_no_op_but_different_bytes_are_refused(
    tmp_path: Path,
) -> None:
    src = _write_dump(tmp_path / "dump.json", _model("a/b", _ts("2026-03-01")))
    first = import_dump(src, tmp_path / "catalog", "2026-03-02")
    assert import_dump(src, tmp_path / "catalog", "2026-03-02") == first
    other = _write_dump(tmp_path / "other.json", _model("a/c", _ts("2026-03-01")))
    with pytest.raises(CatalogError, match="immutable"):
        import_dump(other, tmp_path / "catalog", "2026-03-02")


def test_import_dump_rejects_a_document_that_is_not_a_models_dump(tmp_path: Path) -> None:
    src = tmp_path / "dump.json"
    src.write_text('{"models": []}', encoding="utf-8")
    with pytest.raises(CatalogError, match="data"):
        import_dump(src, tmp_path / "catalog", "2026-03-02")


def test_shipped_snapshot_is_the_recorded_upstream_blob() -> None:
    catalog = load_catalog(SHIPPED)
    assert catalog.sha256 == SHIPPED_SHA256
    assert hashlib.sha256(catalog.path.read_bytes()).hexdigest() == SHIPPED_SHA256
    assert len(catalog.entries) == 337
    assert max(e.created for e in catalog.entries.values()) == catalog.snapshot_date


def test_created_timestamp_is_read_as_a_utc_date(tmp_path: Path) -> None:
    late_evening_utc = _ts("2026-03-01", hour=23)
    src = _write_dump(tmp_path / "d.json", _model("a/b", late_evening_utc))
    catalog = load_catalog(import_dump(src, tmp_path, "2026-03-02"))
    assert catalog.entries["a/b"].created == date(2026, 3, 1)


def test_per_token_price_strings_become_usd_per_million_tokens(tmp_path: Path) -> None:
    pricing = {"prompt": "0.000000098", "completion": "0.0000044", "input_cache_read": "0.00000002"}
    src = _write_dump(tmp_path / "d.json", _model("a/b", _ts("2026-03-01"), pricing=pricing))
    prices = load_catalog(import_dump(src, tmp_path, "2026-03-02")).entries["a/b"].prices
    assert prices.input_per_mtok == 0.098
    assert prices.output_per_mtok == 4.4
    assert prices.cached_input_per_mtok == 0.02
    assert prices.cache_write_per_mtok is None


def test_lookup_finds_a_model_by_id_or_canonical_slug() -> None:
    catalog = load_catalog(SHIPPED)
    by_id = catalog.lookup("z-ai/glm-5.2")
    assert by_id is not None
    assert catalog.lookup("z-ai/glm-5.2-20260616") == by_id
    assert catalog.lookup("tencent/hy3") is None  # only known as tencent/hy3-preview


def test_load_catalog_rejects_a_file_name_without_a_date(tmp_path: Path) -> None:
    src = _write_dump(tmp_path / "models.json", _model("a/b", _ts("2026-03-01")))
    with pytest.raises(CatalogError, match="YYYY-MM-DD"):
        load_catalog(src)


def test_paper_cutoff_is_six_months_before_the_study_date() -> None:
    assert recency_cutoff("2026-07-28", 6) == date(2026, 1, 28)


def test_months_before_clamps_to_the_last_day_of_a_short_month() -> None:
    assert months_before(date(2026, 8, 31), 6) == date(2026, 2, 28)
    assert months_before(date(2026, 3, 15), 15) == date(2024, 12, 15)
