"""Budget stop: a dollar budget below the sweep's cost stops it cleanly; a resume finishes it.

The sim endpoints are priced (sim.price_*_per_mtok) so trajectories cost money. One endpoint
holds two trajectories in flight (sim.concurrency=1), so the sweep takes several waves and
the budget trips with work still queued. "Everything already paid for is written" is checked
against the servers' own request counters: every chat request a server answered is either a
probe (one per probed chat shape, without faults) or counted in a written row.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from pipeline.endpoints.probe import spent_by_probes
from tests.reliability.conftest import SWEEP_TIMEOUT_S
from tests.reliability.harness import SweepHarness
from tests.reliability.tables import RunView, key_of, view

pytestmark = [pytest.mark.slow, pytest.mark.ray]

BUDGET_USD = 0.15  # a trajectory costs about $0.05 at these prices; the sweep about $0.60
PRICED = (
    "+panel=sim",
    "sim.configs=2",
    "arms=[j]",
    "repeats=6",
    "sim.concurrency=1",
    "sim.latency_s=0.1",
    "sim.price_input_per_mtok=10",
    "sim.price_output_per_mtok=10",
)
CHAT_PROBE_SHAPES = ("plain", "schema")


def sent_by_config(requests: list[dict[str, Any]], session: int | None = None) -> Counter[str]:
    """Requests the engine recorded as sent (not cache hits), per configuration."""
    counts: Counter[str] = Counter()
    for r in requests:
        if not r["cache_hit"] and (session is None or r["session"] == session):
            counts[r["config_id"]] += 1
    return counts


def requests_of(run_dir: Path) -> list[dict[str, Any]]:
    return pq.read_table(run_dir / "requests").to_pylist()


def probe_requests(run: RunView) -> Counter[str]:
    """Requests the probes sent: one per sample of a chat shape (probe.samples)."""
    counts: Counter[str] = Counter()
    for p in run.manifest.probes:
        if p["shape"] in CHAT_PROBE_SHAPES:
            counts[p["config_id"]] += len(p["samples"])
    return counts


def test_budget_stops_cleanly_then_a_resume_with_more_budget_completes(
    harness: SweepHarness, tmp_path: Path
) -> None:
    first = harness.run(
        [*PRICED, f"budget.usd={BUDGET_USD}", f"out_dir={tmp_path}"], timeout_s=SWEEP_TIMEOUT_S
    )
    assert first.returncode == 0, first.stderr[-3000:]
    assert first.run_dir is not None
    stopped = view(first.run_dir)
    counts = stopped.manifest.counts
    assert stopped.manifest.status == "budget_exhausted"
    assert counts is not None
    assert counts.not_run.get("budget_exhausted", 0) > 0
    written = {key_of(r) for r in stopped.rows}
    assert counts.valid == len(written)
    assert counts.valid + counts.not_run["budget_exhausted"] == counts.planned == len(stopped.plan)
    requests = requests_of(first.run_dir)
    # the run's spend: its requests and its probes (priced sim probes are paid for too)
    spent = sum(r["spent_usd"] for r in requests) + spent_by_probes(stopped.manifest.probes)
    # The budget is checked before every request: the overshoot is at most the requests in
    # flight (one per endpoint at sim.concurrency=1) times the dearest request.
    dearest = max(r["spent_usd"] for r in requests)
    assert spent <= BUDGET_USD + 2 * dearest
    assert stopped.manifest.extra["totals"]["cost_usd"] == pytest.approx(spent)
    served = {cid: c["requests"] for cid, c in stopped.manifest.sim_counters.items()}
    paid = sent_by_config(requests) + probe_requests(stopped)
    assert served == dict(paid), "a request the server answered is not on record"
    cut = {r["row_id"] for r in requests} - {r["row_id"] for r in stopped.rows}
    print(
        f"budget stop: ${spent:.3f} spent of ${BUDGET_USD}, {len(written)} trajectories written, "
        f"{counts.not_run['budget_exhausted']} not run ({len(cut)} cut mid-flight)"
    )

    second = harness.run([f"resume={first.run_dir}", "budget.usd=100"], timeout_s=SWEEP_TIMEOUT_S)
    assert second.returncode == 0, second.stderr[-3000:]
    done = view(first.run_dir)
    assert done.manifest.status == "completed"
    assert done.manifest.counts is not None
    assert done.manifest.counts.valid == done.manifest.counts.planned == len(done.plan)
    assert not [k for k, n in done.attempts().items() if n > 1]
    before = {r["row_id"]: r for r in stopped.rows}
    assert all(before[i] == r for r in done.rows if (i := r["row_id"]) in before)
    session = done.manifest.history[-1]["sim_counters"]  # the resumed session's servers
    served = {cid: c["requests"] for cid, c in session.items()}
    everything = requests_of(first.run_dir)
    assert served == dict(sent_by_config(everything, session=1)), "the resume re-sent paid requests"
    hits = [r for r in everything if r["cache_hit"]]
    assert {
        r["row_id"] for r in hits
    } <= cut  # what a cut unit had been answered came from the cache
    assert len(hits) == sum(r["session"] == 0 and r["row_id"] in cut for r in everything)
    total = {cid: c["requests"] for cid, c in done.manifest.sim_counters.items()}
    assert total == dict(sent_by_config(everything) + probe_requests(stopped))  # run sums
