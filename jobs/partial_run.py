"""A run still being written, said where a reader of its analysis will see it (issue 32 §21).

`analyze` (or `report`) on a run whose lock a live sweep of another process holds
(pipeline/store/run_lock.py `live_writer`) reads the units finished so far: every count and
effect is partial. Decision: say so rather than wait for the lock, since a sweep can hold it
for hours and a look at a running sweep is a fair thing to want. The report's first lines
carry `partial_lines` (through jobs/provenance_header.py, so every study's report does) and
`analyze` prints `partial_note` on stderr. A sweep's own end-of-run analysis runs under its
own lock and is never flagged.
"""

from __future__ import annotations

from pathlib import Path

from pipeline.store.run_lock import Holder, live_writer


def partial_note(run_dir: Path, holder: Holder) -> str:
    """The one line `analyze` prints on stderr."""
    return (
        f"analyze: {run_dir} is still being written by {holder.describe()}; this analysis is "
        "partial (the units finished so far): analyze again once the sweep ends"
    )


def partial_lines(run_dir: Path) -> list[str]:
    """The report's warning, first after its title; nothing for a run no one else writes."""
    holder = live_writer(run_dir)
    if holder is None:
        return []
    return [
        f"**Partial: this run was still being written when it was analysed** (its session, "
        f"{holder.describe()}, held the run dir): counts, effects and figures cover only the "
        f"units finished by then. Analyze again once the sweep ends: "
        f"`python -m pipeline analyze {run_dir}`.",
        "",
    ]
