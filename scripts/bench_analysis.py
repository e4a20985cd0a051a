"""Benchmark: the analysis jobs on a synthetic run directory with >= 10 million check rows.

    PYTHONPATH=. python scripts/bench_analysis.py [--configs 50] [--repeats 300] [--keep DIR]

Synthesizes rows/ (configs x 12 arms x 4 execution groups x repeats trajectories, 2% of them
with an extra infrastructure attempt) and checks/ (14 per row), writes them with pyarrow,
then times, each in a fresh subprocess so peak memory is its own:
- baseline: a bare polars scan + group_by(row_id) of checks (the cheapest pass over the data);
- resume_keys: reading (config_id, arm, execution_group, repeat, attempt) from rows/;
- analyze: jobs.analyze with every default contrast and the 10,000-resample bootstrap, then
  the report (what a sweep's analysis does).
It prints seconds, peak RSS and the ratio of each to the baseline measured in the same run.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

ARMS = ("f", "n", "j", "p", "q", "k", "o", "m", "t", "u", "l", "x")
GROUPS = 4
CHECKS_PER_ROW = 14
RETRY_SHARE = 0.02


def _null(size: int, dtype: pa.DataType) -> pa.Array:
    return pa.nulls(size, type=dtype)


def synthesize(run_dir: Path, configs: int, repeats: int, parts: int, seed: int) -> tuple[int, int]:
    """Writes rows/ and checks/ parts; returns (rows, check rows)."""
    from pipeline import studies

    layout = studies.layout(studies.definition("carrier"))
    rows_schema, checks_schema = layout.schema("rows"), layout.schema("checks")

    rng = np.random.default_rng(seed)
    cfg, arm, group, rep = (
        a.ravel()
        for a in np.meshgrid(
            np.arange(configs),
            np.arange(len(ARMS)),
            np.arange(GROUPS),
            np.arange(repeats),
            indexing="ij",
        )
    )
    retried = rng.random(cfg.size) < RETRY_SHARE
    # Retried trajectories get an invalid attempt 1 and a final attempt 2.
    take = np.concatenate([np.arange(cfg.size), np.flatnonzero(retried)])
    attempt = np.concatenate([np.where(retried, 2, 1), np.ones(retried.sum(), dtype=np.int64)])
    n = take.size
    ability = rng.random((configs, len(ARMS)))
    passed = rng.binomial(CHECKS_PER_ROW, ability[cfg[take], arm[take]])
    valid = np.concatenate([rng.random(cfg.size) > 0.03, np.zeros(retried.sum(), dtype=bool)])
    row_ids = pc.binary_join_element_wise("r", pa.array(np.arange(n)).cast(pa.string()), "")
    columns: dict[str, pa.Array] = {
        "run_id": pa.array(["bench"] * n),
        "row_id": row_ids,
        "config_id": pa.array([f"vendor{c % 11}/model-{c}" for c in range(configs)]).take(
            pa.array(cfg[take])
        ),
        "family": pa.array([f"vendor{c % 11}" for c in range(configs)]).take(pa.array(cfg[take])),
        "arm": pa.array(list(ARMS)).take(pa.array(arm[take])),
        "execution_group": pa.array(group[take], pa.int32()),
        "repeat": pa.array(rep[take], pa.int32()),
        "attempt": pa.array(attempt, pa.int32()),
        "simulated": pa.array(np.ones(n, dtype=bool)),
        "valid": pa.array(valid),
        "invalid_reason": pc.if_else(pa.array(valid), pa.scalar(None, pa.string()), "transport"),
        "recall": pa.array(passed / CHECKS_PER_ROW),
        "checks_passed": pa.array(passed, pa.int32()),
        "checks_total": pa.array(np.full(n, CHECKS_PER_ROW), pa.int32()),
        "fill": pa.array(rng.random(n)),
        "headings_carried": pa.array(rng.integers(0, 6, n), pa.int32()),
        "parse_failures": pa.array(rng.integers(0, 2, n), pa.int32()),
        "abstains": pa.array(rng.random(n) < 0.1),
    }
    rows = pa.Table.from_pydict(
        {f.name: columns.get(f.name, _null(n, f.type)) for f in rows_schema}, schema=rows_schema
    )
    owner = np.repeat(np.arange(n), CHECKS_PER_ROW)
    slot = np.tile(np.arange(CHECKS_PER_ROW), n)
    check_passed = slot < passed[owner]
    present = check_passed | (rng.random(owner.size) < 0.05)
    outcome = np.where(
        check_passed, "passed", np.where(rng.random(owner.size) < 0.3, "fabrication", "missing")
    )
    checks = pa.Table.from_pydict(
        {
            "run_id": pa.array(np.full(owner.size, "bench")),
            "row_id": row_ids.take(pa.array(owner)),
            "label": pa.array([f"fact{i}" for i in range(CHECKS_PER_ROW)]).take(pa.array(slot)),
            "kind": _null(owner.size, pa.string()),
            "expected": _null(owner.size, pa.string()),
            "answered": _null(owner.size, pa.string()),
            "passed": pa.array(check_passed),
            "present_in_carrier": pa.array(present),
            "outcome": pa.array(outcome),
            "stock_signature": pa.array(rng.random(owner.size) < 0.01),
        },
        schema=checks_schema,
    )
    for table, name in ((rows, "rows"), (checks, "checks")):
        (run_dir / name).mkdir(parents=True, exist_ok=True)
        step = -(-table.num_rows // parts)
        for index in range(parts):
            pq.write_table(
                table.slice(index * step, step), run_dir / name / f"part-{index:04d}.parquet"
            )
    return rows.num_rows, checks.num_rows


def measure(step: str, run_dir: Path) -> dict[str, float]:
    """Runs one step in this process; returns seconds and peak RSS (MiB)."""
    started = time.perf_counter()
    if step == "baseline":
        pl.scan_parquet(run_dir / "checks" / "*.parquet").group_by("row_id").agg(
            pl.col("passed").sum()
        ).collect()
    elif step == "resume_keys":
        pl.scan_parquet(run_dir / "rows" / "*.parquet").select(
            "config_id", "arm", "execution_group", "repeat", "attempt"
        ).collect()
    elif step == "analyze":
        from jobs import analyze
        from jobs.carrier.report import render_report

        analyze(run_dir)
        render_report(run_dir)  # a sweep's analysis ends with the report; time both
    else:
        raise ValueError(step)
    seconds = time.perf_counter() - started
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"seconds": seconds, "peak_mib": peak_mib}


def _child(arguments: list[str]) -> dict[str, float]:
    output = subprocess.run(
        [sys.executable, __file__, *arguments], check=True, capture_output=True, text=True
    ).stdout
    loaded: dict[str, float] = json.loads(output.strip().splitlines()[-1])
    return loaded


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configs", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=300)
    parser.add_argument("--parts", type=int, default=16)
    parser.add_argument("--keep", type=Path, help="write the run here and keep it")
    parser.add_argument("--measure", nargs=2, metavar=("STEP", "RUN_DIR"), help=argparse.SUPPRESS)
    parser.add_argument("--synthesize", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure[0], Path(args.measure[1]))))
        return 0
    if args.synthesize:
        started = time.perf_counter()
        rows, checks = synthesize(args.synthesize, args.configs, args.repeats, args.parts, seed=166)
        print(
            json.dumps({"rows": rows, "checks": checks, "seconds": time.perf_counter() - started})
        )
        return 0
    run_dir = args.keep or Path(tempfile.mkdtemp(prefix="foldsweep-bench-"))
    # Every step runs in its own child, and this parent stays small: Linux carries a
    # process's peak RSS across fork and exec, so a heavy parent would mask the children's.
    made = _child(
        [
            "--synthesize",
            str(run_dir),
            "--configs",
            str(args.configs),
            "--repeats",
            str(args.repeats),
            "--parts",
            str(args.parts),
        ]
    )
    print(
        f"synthesized {made['rows']:,} rows and {made['checks']:,} check rows in "
        f"{made['seconds']:.1f}s at {run_dir}"
    )
    results = {
        step: _child(["--measure", step, str(run_dir)])
        for step in ("baseline", "resume_keys", "analyze")
    }
    base = results["baseline"]["seconds"]
    print(f"{'step':<12} {'seconds':>8} {'x baseline':>10} {'peak MiB':>9}")
    for step, result in results.items():
        print(
            f"{step:<12} {result['seconds']:>8.2f} {result['seconds'] / base:>10.1f} "
            f"{result['peak_mib']:>9.0f}"
        )
    if args.keep is None:
        shutil.rmtree(run_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
