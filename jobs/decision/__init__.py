"""The study-free joiner of `python -m pipeline decide` (issue 34; docs/engine.md "Decide").

It takes the `StudyDecision`s of any mix of runs and writes one page, decision.md and
decision.json, applying once the rules every study shares (join.py): a simulated or replayed
run never recommends; runs of one study on other inputs are listed side by side, never pooled;
the page leads with what to do, one paragraph per subject, then what is missing and what would
change it, then each run's detail. It names no study (import-linter holds that line).
"""

from jobs.decision.write import write_decision

__all__ = ["write_decision"]
