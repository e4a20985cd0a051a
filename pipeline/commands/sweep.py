"""`python -m pipeline sweep [hydra overrides]`: run or resume a sweep; prints the run dir.

stdout holds only the run directory. stderr gets the summary paragraph of a completed sweep,
or the one line naming why it did not complete; the exit code follows the outcome (the table
in pipeline/sweep/summary.py: 0 completed, 2 bad input, 3 nothing ran, 4 failed, 5 above
fail_on.invalid_share, 130/143 stopped by SIGINT/SIGTERM).
"""

from __future__ import annotations

import sys


def main(argv: list[str]) -> int:
    if any(a in ("-h", "--help") for a in argv):
        print(
            "usage: python -m pipeline sweep [KEY=VALUE ...] [+panel=NAME]\n"
            "  e.g. arms=[j,q] repeats=4 scenario=small +panel=sim resume=RUN_DIR budget.usd=15\n"
            "exit: 0 completed, 2 bad input, 3 nothing ran, 4 failed, 5 above "
            "fail_on.invalid_share, 130/143 stopped by SIGINT/SIGTERM (resume=RUN_DIR continues)"
        )
        return 0
    from pipeline.commands.start import execute_sweep

    end = execute_sweep(argv)  # locks a resumed run dir, resolves the study once, runs it
    print(end.message, file=sys.stderr, flush=True)
    print(end.run_dir)
    sys.stdout.flush()
    return end.exit_code
