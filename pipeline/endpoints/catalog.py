"""Dated model-catalog snapshots and the recency rule's date arithmetic.

A snapshot is an OpenRouter `GET /api/v1/models` dump (`{"data": [model, ...]}`) stored
byte-for-byte under `data/catalog/openrouter-models-YYYY-MM-DD.json`; the date in the name is
the day the dump was taken, so a panel names exactly which catalog its dates came from and the
manifest can record the file's SHA-256.

Decisions the paper leaves open (docs/endpoints.md, "The snapshot" and "The recency rule"):
- A model's publication date is the UTC calendar date of its `created` unix timestamp.
- Lookup is by exact `id`, falling back to `canonical_slug`; a served alias the snapshot knows
  under another id is declared in the panel (`catalog_alias`), never guessed.
- Prices in the dump are USD-per-token decimal strings; they are converted to USD per million
  tokens (`Prices`). They are the catalog's headline prices, not necessarily the pinned
  provider's, and the probe is what verifies a pin.
- The cutoff is the study date minus N calendar months, clamped to the month's last day
  (2026-08-31 minus 6 months is 2026-02-28); a model published exactly on the cutoff is in.
"""

from __future__ import annotations

import calendar
import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from pipeline.config.schema import Prices
from pipeline.usererror import UserError

SNAPSHOT_PREFIX = "openrouter-models-"
_SNAPSHOT_NAME = re.compile(r"^openrouter-models-(\d{4}-\d{2}-\d{2})\.json$")


class CatalogError(UserError):
    """A snapshot is missing, malformed or inconsistent with its date."""


@dataclass(frozen=True)
class CatalogEntry:
    """What the snapshot says about one model id."""

    id: str
    canonical_slug: str
    name: str
    created: date  # UTC date of the `created` timestamp: the publication date
    context_length: int | None
    prices: Prices
    supported_parameters: tuple[str, ...] = ()


@dataclass(frozen=True)
class Catalog:
    """One dated snapshot, indexed by model id."""

    snapshot_date: date
    path: Path
    sha256: str
    entries: Mapping[str, CatalogEntry]

    @property
    def name(self) -> str:
        return self.path.name

    def lookup(self, model_id: str) -> CatalogEntry | None:
        """The entry for `model_id` (exact id, else canonical slug), or None."""
        found = self.entries.get(model_id)
        if found is not None:
            return found
        for entry in self.entries.values():
            if entry.canonical_slug == model_id:
                return entry
        return None


def catalog_dir() -> Path:
    """data/catalog/ beside the package (the snapshots shipped with the project)."""
    return Path(__file__).resolve().parents[2] / "data" / "catalog"


def snapshot_name(day: date) -> str:
    return f"{SNAPSHOT_PREFIX}{day.isoformat()}.json"


def import_dump(src: Path | str, dest_dir: Path | str, day: date | str) -> Path:
    """Copy a /api/v1/models dump into `dest_dir` as a snapshot dated `day`; return its path.

    The bytes are copied unchanged (the SHA-256 stays that of the source). The dump is
    validated first, and a dump listing a model created after `day` is refused: a snapshot
    cannot know models published after it was taken. Re-importing identical bytes is a no-op;
    overwriting a snapshot with different bytes is refused (snapshots are immutable).
    """
    snapshot_day = _parse_day(day, "snapshot date")
    raw = Path(src).read_bytes()
    entries = _parse_dump(raw, str(src))
    newest = max((e.created for e in entries.values()), default=None)
    if newest is not None and newest > snapshot_day:
        raise CatalogError(
            f"{src}: lists a model created {newest}, after the snapshot date {snapshot_day}"
        )
    dest = Path(dest_dir) / snapshot_name(snapshot_day)
    if dest.exists():
        if dest.read_bytes() == raw:
            return dest
        raise CatalogError(f"{dest} already exists with different content; snapshots are immutable")
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_suffix(".json.tmp")
    tmp.write_bytes(raw)
    tmp.replace(dest)
    return dest


def load_catalog(path: Path | str) -> Catalog:
    """Load a snapshot; a relative path is taken under data/catalog/ (PanelConfig.catalog)."""
    file = Path(path)
    if not file.is_absolute():
        file = catalog_dir() / file
    match = _SNAPSHOT_NAME.match(file.name)
    if match is None:
        raise CatalogError(
            f"{file.name}: a catalog snapshot is named {SNAPSHOT_PREFIX}YYYY-MM-DD.json"
        )
    if not file.is_file():
        raise CatalogError(f"catalog snapshot {file} not found")
    raw = file.read_bytes()
    return Catalog(
        snapshot_date=date.fromisoformat(match.group(1)),
        path=file,
        sha256=hashlib.sha256(raw).hexdigest(),
        entries=_parse_dump(raw, file.name),
    )


def months_before(day: date, months: int) -> date:
    """`day` minus `months` calendar months, clamped to the last day of the target month."""
    index = day.year * 12 + (day.month - 1) - months
    year, month = divmod(index, 12)
    last = calendar.monthrange(year, month + 1)[1]
    return date(year, month + 1, min(day.day, last))


def recency_cutoff(study_date: date | str, recency_months: int) -> date:
    """The earliest admitted publication date: study date minus `recency_months`."""
    if recency_months < 0:
        raise UserError(f"recency_months must be >= 0, got {recency_months}")
    return months_before(_parse_day(study_date, "study_date"), recency_months)


def _parse_day(value: date | str, what: str) -> date:
    if isinstance(value, date):
        return value
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise UserError(f"{what}: expected YYYY-MM-DD, got {value!r}") from None


def _parse_dump(raw: bytes, where: str) -> dict[str, CatalogEntry]:
    try:
        doc = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CatalogError(f"{where}: not a JSON document ({exc})") from None
    models = doc.get("data") if isinstance(doc, dict) else None
    if not isinstance(models, list):
        raise CatalogError(f'{where}: expected a /api/v1/models dump {{"data": [...]}}')
    entries: dict[str, CatalogEntry] = {}
    for i, item in enumerate(models):
        entry = _entry(item, f"{where}: data[{i}]")
        entries[entry.id] = entry
    return entries


def _entry(item: Any, where: str) -> CatalogEntry:
    if not isinstance(item, dict) or not isinstance(item.get("id"), str):
        raise CatalogError(f"{where}: a model needs a string id")
    created = item.get("created")
    if not isinstance(created, int) or isinstance(created, bool):
        raise CatalogError(f"{where} ({item['id']}): `created` must be a unix timestamp")
    context = item.get("context_length")
    pricing = item.get("pricing") or {}
    params = item.get("supported_parameters") or []
    return CatalogEntry(
        id=item["id"],
        canonical_slug=str(item.get("canonical_slug") or item["id"]),
        name=str(item.get("name") or item["id"]),
        created=datetime.fromtimestamp(created, UTC).date(),
        context_length=context if isinstance(context, int) else None,
        prices=Prices(
            input_per_mtok=_per_mtok(pricing.get("prompt"), where) or 0.0,
            output_per_mtok=_per_mtok(pricing.get("completion"), where) or 0.0,
            cached_input_per_mtok=_per_mtok(pricing.get("input_cache_read"), where),
            cache_write_per_mtok=_per_mtok(pricing.get("input_cache_write"), where),
        ),
        supported_parameters=tuple(str(p) for p in params),
    )


def _per_mtok(per_token: Any, where: str) -> float | None:
    """USD-per-token decimal string -> USD per million tokens (Decimal avoids 0.1+0.2 noise)."""
    if per_token is None:
        return None
    try:
        return float(Decimal(str(per_token)) * 1_000_000)
    except InvalidOperation:
        raise CatalogError(f"{where}: price {per_token!r} is not a number") from None
