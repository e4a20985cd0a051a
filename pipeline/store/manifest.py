"""The run manifest (RUN_DIR/manifest.json) and the outcome accounting it states.

Nothing is silently dropped: every planned unit is counted exactly once, as valid,
invalid (by reason), not run (by reason) or pending, from the FINAL (highest) attempt of its
(config_id, arm, execution_group, repeat) key. ``OutcomeCounts`` refuses to exist if the four
do not add up to the plan.

The caller passes the resolved config without secrets; ``redact`` still drops anything that
looks like a credential at the write boundary (defense in depth). Only the *names* of the
environment variables that hold keys (``*_env``) are kept.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, NamedTuple, get_args

import polars as pl
import pyarrow as pa

from pipeline.store.final import KEY, final_rows
from pipeline.store.parts import write_json_atomic
from pipeline.store.provenance import git_revision, package_versions
from pipeline.store.reader import MANIFEST_FILE, RunDirError, read_json
from pipeline.study import UnitKey

RunStatus = Literal["running", "completed", "nothing_ran", "stopped", "budget_exhausted", "failed"]
"""How a run directory's last session ended. ``nothing_ran``: the sweep ended without a single
attempt in the whole run (every planned unit is not run, e.g. every configuration
failed its probes); ``completed`` means at least one attempt exists and nothing is owed."""
FORMAT_VERSION = 2  # 2: the study seam (config.study node, the study's row columns last)
_SECRET_MARKERS = ("api_key", "apikey", "authorization", "password", "secret")
REDACTED = "<redacted>"


class ExtraKey(NamedTuple):
    """The schema of one key of the manifest's `extra`: what its value must be, and what it is."""

    check: Callable[[Any], bool]
    shape: str  # the value's type, as the one-line error names it
    meaning: str


def _is(kind: type) -> Callable[[Any], bool]:
    return lambda value: isinstance(value, kind) and not (kind is int and isinstance(value, bool))


def _list_of(kind: type) -> Callable[[Any], bool]:
    return lambda value: isinstance(value, list) and all(isinstance(v, kind) for v in value)


def _optional(check: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda value: value is None or check(value)


EXTRA_SCHEMA: Mapping[str, ExtraKey] = {
    "overrides": ExtraKey(
        _list_of(str), "list of strings", "the command-line overrides, replayed by a resume"
    ),
    "panel": ExtraKey(_optional(_is(str)), "string or null", "the panel's name"),
    "panel_excluded": ExtraKey(
        _list_of(dict), "list of objects", "configurations the panel's rules excluded, with why"
    ),
    "simulated": ExtraKey(_is(bool), "boolean", "planned against simulated endpoints"),
    "schedule": ExtraKey(
        _list_of(dict), "list of objects", "each execution group's schedule closure"
    ),
    "inputs": ExtraKey(_is(dict), "object", "the study's inputs record (StudyInputs.record)"),
    "probe_rule": ExtraKey(_is(dict), "object", "the rule the probe verdicts were reached by"),
    "sim_counters": ExtraKey(_is(dict), "object", "the last session's simulated servers' counters"),
    "server_restarts": ExtraKey(_list_of(dict), "list of objects", "local server restarts"),
    "local_servers": ExtraKey(_is(dict), "object", "the local servers this run started on"),
    "totals": ExtraKey(_is(dict), "object", "the last session's attempts, requests and cost"),
    "error": ExtraKey(_is(str), "string", "the one line that ended a failed session"),
    "lock_takeovers": ExtraKey(
        _list_of(dict), "list of objects", "stale run-dir locks taken over (holder, by whom)"
    ),
    "aborted": ExtraKey(_is(bool), "boolean", "a second signal stopped the session at once"),
    "stopped_before_plan": ExtraKey(
        _is(int), "integer", "the signal that stopped a new run before its plan was written"
    ),
    "stop_reason": ExtraKey(
        _is(str), "string", "why a budget_exhausted session stopped, when not the budget"
    ),
    "provider_message": ExtraKey(
        _optional(_is(str)), "string or null", "what the provider said when it refused to bill"
    ),
}
"""Every key the manifest's `extra` may hold (issue 18: typed, not a bag). A key not listed
is refused when written (a bug: add it here with its meaning) and when read (the manifest was
written by another foldsweep or edited)."""


def extra_problem(extra: Mapping[str, Any]) -> str | None:
    """The first key of `extra` that is unknown or of the wrong type, as one line; else None."""
    for key, value in extra.items():
        schema = EXTRA_SCHEMA.get(key)
        if schema is None:
            return f"extra.{key} is not a manifest key (known: {', '.join(sorted(EXTRA_SCHEMA))})"
        if not schema.check(value):
            return f"extra.{key} must be a {schema.shape}, not {type(value).__name__}"
    return None


class FinalAttempt(NamedTuple):
    """The highest attempt recorded for a key: the unit's current outcome."""

    row_id: str
    attempt: int
    valid: bool
    invalid_reason: str | None
    retryable: bool


@dataclass(frozen=True)
class OutcomeCounts:
    """planned == valid + sum(invalid) + sum(not_run) + pending, always."""

    planned: int
    valid: int
    invalid: dict[str, int]
    not_run: dict[str, int]
    pending: int

    def __post_init__(self) -> None:
        total = self.valid + sum(self.invalid.values()) + sum(self.not_run.values()) + self.pending
        if total != self.planned:
            raise AssertionError(f"outcome counts do not add up: {self} sums to {total}")


def utc_now() -> str:
    """Now as an ISO-8601 UTC timestamp (seconds precision, ``Z`` suffix)."""
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def final_attempts(rows: pa.Table) -> dict[UnitKey, FinalAttempt]:
    """The final attempt of every key in ``rows`` (the rule of pipeline.store.final)."""
    names = ["row_id", *KEY, "attempt", "valid", "invalid_reason", "retryable"]
    frame = pl.from_arrow(rows.select(names))
    assert isinstance(frame, pl.DataFrame)
    return {
        UnitKey(r["config_id"], r["arm"], r["execution_group"], r["repeat"]): FinalAttempt(
            r["row_id"], r["attempt"], r["valid"], r["invalid_reason"], bool(r["retryable"])
        )
        for r in final_rows(frame.lazy()).iter_rows(named=True)
    }


def planned_keys(plan: pa.Table) -> list[tuple[UnitKey, str, str | None]]:
    """(key, status, not_run_reason) for every plan row; a repeated key is a RunDirError."""
    cols = plan.select(
        ["config_id", "arm", "execution_group", "repeat", "status", "not_run_reason"]
    ).to_pydict()
    out = []
    for i in range(plan.num_rows):
        key = UnitKey(
            cols["config_id"][i], cols["arm"][i], cols["execution_group"][i], cols["repeat"][i]
        )
        out.append((key, cols["status"][i], cols["not_run_reason"][i]))
    repeated = [k for k, n in Counter(k for k, _, _ in out).items() if n > 1]
    if repeated:
        raise RunDirError(f"the plan lists {repeated[0]} twice; plan.parquet is corrupt")
    return out


def outcome_counts(
    plan: pa.Table, rows: pa.Table, *, unfinished_as: str | None = None
) -> OutcomeCounts:
    """Count every planned unit by the outcome of its final attempt.

    ``unfinished_as`` (e.g. "budget_stop") counts keys with no row yet as not run for that
    reason instead of pending; use it when the sweep ends without running them.
    """
    finals = final_attempts(rows)
    planned = planned_keys(plan)
    strays = set(finals) - {key for key, _, _ in planned}
    if strays:
        raise RunDirError(f"rows/ holds {min(strays)} which is not in the plan; wrong run dir?")
    valid = pending = 0
    invalid: Counter[str] = Counter()
    not_run: Counter[str] = Counter()
    for key, status, reason in planned:
        final = finals.get(key)
        if status == "not_run":
            not_run[reason or "unspecified"] += 1
        elif final is None and unfinished_as is not None:
            not_run[unfinished_as] += 1
        elif final is None:
            pending += 1
        elif final.valid:
            valid += 1
        else:
            invalid[final.invalid_reason or "unspecified"] += 1
    return OutcomeCounts(len(planned), valid, dict(invalid), dict(not_run), pending)


def redact(obj: Any) -> Any:
    """A copy of ``obj`` without credential-like keys or bearer values; ``*_env`` names stay."""
    if isinstance(obj, Mapping):
        kept = {}
        for key, value in obj.items():
            name = str(key).lower()
            if not name.endswith("_env") and any(m in name for m in _SECRET_MARKERS):
                continue
            kept[str(key)] = redact(value)
        return kept
    if isinstance(obj, list | tuple):
        return [redact(item) for item in obj]
    if isinstance(obj, str) and obj.lower().startswith("bearer "):
        return REDACTED
    return obj


@dataclass(frozen=True)
class Manifest:
    """Everything needed to know what a run was: see docs/engine.md, "Manifest"."""

    run_id: str
    config: dict[str, Any]
    config_fingerprint: str
    started_at: str
    study: str  # the study that owns the run's tables: its definition's name (pipeline.studies)
    status: RunStatus = "running"
    finished_at: str | None = None
    versions: dict[str, str | None] = field(default_factory=dict)
    git_sha: str | None = None
    git_dirty: bool | None = None
    # The SHA-256 of the study's inputs (`StudyInputs.digest`: a fixture's, a corpus's). The key
    # is a stored name kept for compatibility: every manifest.json already holds it.
    fixture_sha256: str | None = None
    catalog_sha256: str | None = None
    provenance: dict[str, str] = field(default_factory=dict)
    counts: OutcomeCounts | None = None
    probes: list[dict[str, Any]] = field(default_factory=list)
    sim_counters: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    format_version: int = FORMAT_VERSION
    # One entry per session, oldest first: when it started, its command-line overrides, its
    # resolved config and fingerprint, and on a resume the config changes it applied and the
    # units it added (pipeline/sweep/history.py). A manifest written before history existed
    # reads with an empty list.
    history: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def start(
        cls,
        run_id: str,
        config: Mapping[str, Any],
        *,
        config_fingerprint: str,
        study: str,
        fixture_sha256: str | None = None,
        catalog_sha256: str | None = None,
        provenance: Mapping[str, str] | None = None,
    ) -> Manifest:
        """A running manifest stamped with now, the package versions and the git revision."""
        git = git_revision()
        return cls(
            run_id=run_id,
            config=redact(config),
            config_fingerprint=config_fingerprint,
            started_at=utc_now(),
            study=study,
            versions=package_versions(),
            git_sha=git.sha,
            git_dirty=git.dirty,
            fixture_sha256=fixture_sha256,
            catalog_sha256=catalog_sha256,
            provenance=dict(provenance or {}),
        )

    def finish(self, status: RunStatus, counts: OutcomeCounts) -> Manifest:
        """This manifest closed with ``status``, the final counts and the finish time."""
        return dataclasses.replace(self, status=status, counts=counts, finished_at=utc_now())

    def to_json(self) -> dict[str, Any]:
        problem = extra_problem(self.extra)
        if problem is not None:  # the code wrote it: a bug, not bad input
            raise ValueError(f"manifest {problem}")
        data = dataclasses.asdict(self)
        for name in ("config", "probes", "sim_counters", "extra", "history"):
            data[name] = redact(data[name])
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Manifest:
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - names)
        if unknown or data.get("format_version") != FORMAT_VERSION:
            raise RunDirError(
                f"manifest format not understood (format_version={data.get('format_version')}, "
                f"unknown keys {unknown}); use the foldsweep version that wrote it"
            )
        if data.get("status") not in get_args(RunStatus):
            raise RunDirError(f"manifest status {data.get('status')!r} is not a run status")
        problem = extra_problem(data.get("extra") or {})
        if problem is not None:
            raise RunDirError(f"manifest is not understood: {problem}")
        fields = dict(data)
        try:
            if fields.get("counts") is not None:
                fields["counts"] = OutcomeCounts(**fields["counts"])
            return cls(**fields)
        except (TypeError, AssertionError) as exc:
            raise RunDirError(f"manifest is corrupt: {exc}") from None


def write_manifest(run_dir: Path, manifest: Manifest) -> Path:
    """Atomically write RUN_DIR/manifest.json."""
    return write_json_atomic(run_dir / MANIFEST_FILE, manifest.to_json())


def load_manifest(run_dir: Path) -> Manifest:
    """Read RUN_DIR/manifest.json; a missing or corrupt manifest is a RunDirError."""
    return Manifest.from_json(read_json(run_dir / MANIFEST_FILE))
