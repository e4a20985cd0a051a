"""How a sweep ends: its exit code and what it says on stderr (stdout holds only the run dir).

    0        completed (at least one attempt), or budget_exhausted (a planned stop): a
             summary paragraph on stderr (valid, invalid by reason, not run by reason, cost,
             the report's path; SIMULATED for a simulated run)
    2        bad input, refused before anything started (a new run gets no run directory):
             one `error:` line
    3        nothing_ran: not one unit was attempted (e.g. every configuration failed
             its probes): one `error:` line naming the cause, then the report's path
    4        failed: an endpoint server cannot serve (EndpointServers.fatal) or could not
             start: one `error:` line with the server's message
    5        completed or budget_exhausted, but the share of infrastructure-invalid final
             units is above `fail_on.invalid_share` (off by default; a CI gate, as inspect's
             fail-on-error): one `error:` line with the count, the share, the causes and the
             report's path. The share is over units with a final attempt (valid + invalid),
             not units never run (a budget stop's), and counts `infrastructure:` reasons only:
             a rejection or the arm's own behaviour is data, not a fault. The manifest's
             status stays what it was.
    130/143  stopped by SIGINT / SIGTERM (128 + the signal's number): one line with the
             resume command

A bug still ends in a traceback (exit 1).
"""

from __future__ import annotations

import signal
import textwrap
from collections.abc import Mapping
from pathlib import Path

from pipeline.config.schema import BudgetConfig
from pipeline.store.manifest import OutcomeCounts
from pipeline.study_validity import INFRASTRUCTURE

EXIT_OK = 0
EXIT_NOTHING_RAN = 3
EXIT_FAILED = 4
EXIT_INVALID_SHARE = 5
SIGNAL_EXIT_BASE = 128
WIDTH = 100


def signal_exit_code(signum: int | None) -> int:
    """128 + the signal's number (130 for SIGINT, 143 for SIGTERM); SIGINT's when unknown."""
    return SIGNAL_EXIT_BASE + int(signum if signum is not None else signal.SIGINT)


def signal_name(signum: int | None) -> str:
    if signum is None:
        return "a signal"
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def invalid_share_failure(
    counts: OutcomeCounts | None, threshold: float | None, report: Path | None
) -> str | None:
    """The exit-5 line when infrastructure-invalid final units are above `threshold` (module
    doc), else None (also when `fail_on.invalid_share` is off)."""
    if threshold is None or counts is None:
        return None
    faults = {r: n for r, n in counts.invalid.items() if r.startswith(f"{INFRASTRUCTURE}:")}
    final = counts.valid + sum(counts.invalid.values())
    failed = sum(faults.values())
    if not final or failed / final <= threshold:
        return None
    line = (
        f"error: {failed} of {final} final units are infrastructure-invalid "
        f"({100 * failed / final:.1f}%), above fail_on.invalid_share={threshold:g} "
        f"({by_reason(faults)})"
    )
    return line + (f"; report: {report}" if report is not None else "")


def resume_command(run_dir: Path) -> str:
    return f"python -m pipeline sweep resume={run_dir}"


def by_reason(mapping: Mapping[str, int]) -> str:
    return ", ".join(f"{reason} {n}" for reason, n in sorted(mapping.items())) or "none"


def _wrap(text: str) -> str:
    return textwrap.fill(text, WIDTH, break_long_words=False, break_on_hyphens=False)


def summary_paragraph(
    *,
    status: str,
    counts: OutcomeCounts | None,
    cost_usd: float,
    requests: int,
    simulated: bool,
    report: Path | None,
    run_dir: Path,
    cache_hits: int = 0,
    budget: BudgetConfig | None = None,
    provider_message: str | None = None,
    replay: bool = False,
) -> str:
    """The paragraph a completed (or budget-stopped) sweep prints on stderr (`cost_usd` and
    `requests`: what the run paid and sent, all sessions; `cache_hits`: this session's)."""
    words = []
    if simulated and replay:
        words.append(
            "SIMULATED run (replay): every row comes from recorded provider replies, real bytes "
            "but not answers to these requests."
        )
    elif simulated:
        words.append("SIMULATED run: every row comes from simulated endpoints, not a real model.")
    verb = "stopped by its budget" if status == "budget_exhausted" else status
    if provider_message is not None:
        verb = "stopped: the provider refused to bill further"
    words.append(f"Sweep {verb}.")
    if counts is not None:
        words.append(
            f"Planned {counts.planned}: valid {counts.valid}; invalid by reason: "
            f"{by_reason(counts.invalid)}; not run by reason: {by_reason(counts.not_run)}"
            + (f"; pending {counts.pending}." if counts.pending else ".")
        )
    words.append(f"Cost USD {cost_usd:.4f} over {requests} requests and the probes.")
    if cache_hits:
        words.append(f"{cache_hits} replies came from the response cache, at no cost.")
    tail = f"Report: {report}." if report is not None else "No report (analysis skipped)."
    if status != "budget_exhausted":
        return _wrap(" ".join([*words, tail]))
    # the command a user copies goes alone on its own line, never wrapped (issue 19)
    if provider_message is not None:  # the provider's 402, not our budget
        words.append(
            f"The provider refused to bill further (HTTP 402: {provider_message}). "
            "Add credits or raise the key's limit, then:"
        )
        command = resume_command(run_dir)
    else:
        words.append("To run the rest under a larger budget:")
        command = f"{resume_command(run_dir)} {budget_advice(budget, cost_usd, requests)}"
    return "\n".join([_wrap(" ".join(words)), f"  {command}", _wrap(tail)])


def budget_advice(budget: BudgetConfig | None, cost_usd: float, requests: int) -> str:
    """The override(s) that raise the budget that stopped the sweep: those spent, or (when
    the next attempt would have overspent) every budget that is set."""
    limits = {
        "budget.usd": (budget.usd if budget else None, cost_usd),
        "budget.requests": (budget.requests if budget else None, requests),
    }
    set_limits = {k: (limit, spent) for k, (limit, spent) in limits.items() if limit is not None}
    reached = [key for key, (limit, spent) in set_limits.items() if spent >= limit]
    return " ".join(f"{key}=N" for key in (reached or list(set_limits) or ["budget.usd"]))


def stopped_line(counts: OutcomeCounts | None, signum: int | None, run_dir: Path) -> str:
    """One line: what the stop left undone and the command that continues it."""
    done = ""
    if counts is not None:
        finished = counts.valid + sum(counts.invalid.values())
        done = f" with {finished} of {counts.planned} planned units finished"
    return f"stopped by {signal_name(signum)}{done}; resume with: {resume_command(run_dir)}"
