"""The manifest's history: one entry per sweep session of a run directory.

A run's `config` and `config_fingerprint` are those of its latest session (the next resume
compares against them); `history` keeps every session's own, so a run resumed with more
repeats still says what it was first planned as. An entry: `session` (0 first), `started_at`,
`overrides` (the run's full override list as of that session), `config` and
`config_fingerprint`, `execution` (the session's execution settings: retries, timeouts,
`fail_on`, the sim's infrastructure keys and each configuration's limits, which a resume may
change without counting as a config change; pipeline/sweep/resume.py), `changes` (each changed
key with before, after and kind, per pipeline/sweep/resume_change.py; empty on the first
session), `added_units` (units the
session planned on top of the run's plan) and, on a simulated panel, `sim_counters` (that
session's servers; the manifest's own `sim_counters` are the run's sums). A manifest written
before history existed gets a first entry rebuilt from what it recorded (`reconstructed:
true`; its config is then the run's recorded one).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from pipeline.store.manifest import Manifest, redact, utc_now
from pipeline.sweep.resume import config_fingerprint, execution_settings
from pipeline.sweep.resume_change import ConfigChange


def session_entry(
    session: int,
    overrides: Sequence[str],
    config: Mapping[str, Any],
    changes: Sequence[ConfigChange] = (),
    *,
    started_at: str | None = None,
) -> dict[str, Any]:
    return {
        "session": session,
        "started_at": started_at or utc_now(),
        "overrides": list(overrides),
        "config": redact(config),
        "config_fingerprint": config_fingerprint(config),
        "execution": redact(execution_settings(config)),
        "changes": [change.as_record() for change in changes],
        "added_units": 0,
    }


def with_session(
    manifest: Manifest,
    overrides: Sequence[str],
    config: Mapping[str, Any],
    changes: Sequence[ConfigChange],
) -> Manifest:
    """`manifest` reopened for a resumed session under `config`: its history gains the
    session's entry, and the run's config, fingerprint and overrides become this session's."""
    history = list(manifest.history)
    if not history:  # written before history existed: rebuild its first session
        recorded = [str(o) for o in manifest.extra.get("overrides", [])]
        first = session_entry(0, recorded, manifest.config, started_at=manifest.started_at)
        first["config_fingerprint"] = manifest.config_fingerprint
        history.append({**first, "reconstructed": True})
    history.append(session_entry(len(history), overrides, config, changes))
    return dataclasses.replace(
        manifest,
        config=redact(config),
        config_fingerprint=config_fingerprint(config),
        history=history,
        extra={**manifest.extra, "overrides": list(overrides)},
    )


def with_added_units(manifest: Manifest, added: int) -> Manifest:
    """The latest session's entry records how many units it added to the plan."""
    history = [dict(entry) for entry in manifest.history]
    if history:
        history[-1]["added_units"] = added
    return dataclasses.replace(manifest, history=history)


def with_session_counters(manifest: Manifest, counters: Mapping[str, Any]) -> Manifest:
    """The simulated servers' counters of this session added to the run's totals
    (`sim_counters`, summed per configuration and key) and kept on the session's entry: a
    resume that sends nothing no longer zeroes what earlier sessions counted."""
    history = [dict(entry) for entry in manifest.history]
    if history:
        history[-1]["sim_counters"] = dict(counters)
    total = add_counts(manifest.sim_counters, counters)
    return dataclasses.replace(manifest, sim_counters=total, history=history)


def add_counts(a: Mapping[str, Any], b: Mapping[str, Any]) -> dict[str, Any]:
    """Nested counters summed key by key (a key on one side only is kept as it is)."""
    out: dict[str, Any] = dict(a)
    for key, value in b.items():
        mine = out.get(key)
        if isinstance(value, Mapping) and isinstance(mine, Mapping):
            out[key] = add_counts(mine, value)
        elif isinstance(value, int | float) and isinstance(mine, int | float):
            out[key] = mine + value
        else:
            out[key] = value
    return out


def with_session_bill(manifest: Manifest, totals: Mapping[str, Any]) -> Manifest:
    """The session's entry records what it sent, paid and took from the response cache."""
    history = [dict(entry) for entry in manifest.history]
    if history:
        history[-1].update(
            requests_sent=totals["requests"],
            spent_usd=totals["spent_usd"],
            cache_hits=totals["cache_hits"],
        )
    return dataclasses.replace(manifest, history=history)


def session_index(manifest: Manifest) -> int:
    """This session's index in the run's history (0 for a new run)."""
    return max(0, len(manifest.history) - 1)
