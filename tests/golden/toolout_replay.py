"""The tool-output replay of the whole shipped corpus, driven without Ray, in golden form.

`replay_tables()` runs every arm (every policy file plus the oracle) under every configuration
of the offline panel (each with its cache model) through the study's own runner, as a worker
would, and returns the `turns`, `sessions` and `decisions` records. `digests()` writes them
as one JSON line per record, sorted by the table's key, and pins those lines byte for byte
(SHA-256 per table and per unit) whatever order the units ran in. Floats are `json`'s
shortest round-trip repr: exact equality, no tolerance.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from pipeline.chat.messages import ChatClient
from pipeline.config.schema import EndpointConfig
from pipeline.studies.toolout import DEFINITION
from pipeline.study import Record, UnitContext, UnitSpec
from pipeline.toolout.study import ToolOutStudy

REPO = Path(__file__).resolve().parents[2]
OFFLINE_PANEL = REPO / "conf" / "panel" / "offline.yaml"
TABLES = ("turns", "sessions", "decisions")
KEYS: Mapping[str, tuple[str, ...]] = {
    "turns": ("config_id", "arm", "transcript_id", "request_index"),
    "sessions": ("config_id", "arm", "transcript_id"),
    "decisions": ("config_id", "arm", "transcript_id", "output_index", "request_index"),
}


class _NoNetwork:
    """The offline runner sends nothing; any call is a bug."""

    async def complete(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("an offline replay sent a request")


def study() -> ToolOutStudy:
    node = {"name": "toolout", "cache_model_for": {"gemini": "gemini-implicit"}}
    return DEFINITION.configure(node)


def endpoints() -> list[EndpointConfig]:
    panel = yaml.safe_load(OFFLINE_PANEL.read_text(encoding="utf-8"))
    # limits (dispatch only) do not change a replay
    return [
        EndpointConfig(**{k: v for k, v in c.items() if k != "limits"}) for c in panel["configs"]
    ]


def _units(the_study: ToolOutStudy) -> Iterator[tuple[EndpointConfig, str, int]]:
    groups = the_study.execution_groups(endpoints())  # the shipped corpus: one shard
    for endpoint in endpoints():
        for arm in the_study.arms():
            for group in range(groups):
                yield endpoint, arm, group


def replay_tables(the_study: ToolOutStudy | None = None) -> dict[str, list[Record]]:
    """Every (configuration, arm) unit's tables, each record tagged with its unit."""
    the_study = the_study or study()
    tables: dict[str, list[Record]] = {name: [] for name in TABLES}
    client: ChatClient = _NoNetwork()  # type: ignore[assignment]
    for endpoint, arm, group in _units(the_study):
        runner = the_study.runner(endpoint)
        spec = UnitSpec(
            "golden", endpoint.config_id, endpoint.model, endpoint.family, arm, group, 0, 0
        )
        result = asyncio.run(runner.run(spec, client, UnitContext(seed=0, temperature=0.0)))
        assert result.outcome.valid, result.outcome
        for name in TABLES:
            for record in result.tables[name]:
                tables[name].append({"config_id": endpoint.config_id, "arm": arm, **record})
    return tables


def _line(record: Mapping[str, Any]) -> str:
    return json.dumps(dict(record), sort_keys=True, ensure_ascii=False, allow_nan=True)


def digests(tables: Mapping[str, Sequence[Record]]) -> dict[str, dict[str, Any]]:
    """{table: {"records", "sha256", "units": {config_id/arm: sha256}}} of the JSON lines.

    The full JSON lines would be about 150 MB (170,580 turns); a SHA-256 per table and per
    unit pins them as exactly, and a unit's digest says where a difference is.
    """
    out: dict[str, dict[str, Any]] = {}
    for name in TABLES:
        keys = KEYS[name]
        ordered = sorted(tables[name], key=lambda r: tuple(r[k] for k in keys))
        whole = hashlib.sha256()
        units: dict[str, Any] = {}
        for record in ordered:
            line = (_line(record) + "\n").encode("utf-8")
            whole.update(line)
            unit = f"{record['config_id']}/{record['arm']}"
            units.setdefault(unit, hashlib.sha256()).update(line)
        out[name] = {
            "records": len(ordered),
            "sha256": whole.hexdigest(),
            "units": {u: h.hexdigest() for u, h in sorted(units.items())},
        }
    return out
