"""`python -m pipeline sweep [hydra overrides]`: run or resume a sweep; prints the run dir."""

from __future__ import annotations

import sys


def main(argv: list[str]) -> int:
    if any(a in ("-h", "--help") for a in argv):
        print(
            "usage: python -m pipeline sweep [KEY=VALUE ...] [+panel=NAME]\n"
            "  e.g. arms=[j,q] repeats=4 scenario=small +panel=sim resume=RUN_DIR budget.usd=15"
        )
        return 0
    from pipeline.sweep.execute import run_sweep

    run_dir = run_sweep(argv)
    print(run_dir)
    sys.stdout.flush()
    return 0
