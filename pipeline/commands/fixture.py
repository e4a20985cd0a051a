"""`python -m pipeline fixture --scenario NAME --seed N --out FILE`.

Writes the fixture's canonical JSON atomically (temporary file in the same directory, then
rename, so a killed run never leaves a torn file) and prints its SHA-256 on stdout.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import tempfile
from pathlib import Path

from pipeline.carrier.config import ScenarioConfig
from pipeline.carrier.fixture import fixture_json, generate
from pipeline.config import build, compose_dict
from pipeline.usererror import UserError


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m pipeline fixture",
        description="Write a deterministic fixture (JSON) and print its SHA-256.",
    )
    parser.add_argument("--scenario", required=True, help="a conf/scenario name (s5, small, ...)")
    parser.add_argument("--seed", required=True, type=int, help="fixture generator seed")
    parser.add_argument("--out", required=True, type=Path, help="output JSON file")
    return parser


def load_scenario(name: str) -> ScenarioConfig:
    """The typed scenario NAME from conf/scenario (ConfigError names the available ones)."""
    data = compose_dict([f"scenario={name}"])["study"]["scenario"]
    return build(ScenarioConfig, data, "scenario")


def write_atomic(path: Path, data: bytes) -> None:
    """Write `data` to `path` via a temporary sibling and a rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    if args.out.is_dir():
        raise UserError(f"--out {args.out} is a directory; give a file name")
    fx = generate(load_scenario(args.scenario), args.seed)
    data = fixture_json(fx)
    try:
        write_atomic(args.out, data)
    except OSError as exc:
        raise UserError(f"cannot write {args.out}: {exc.strerror or exc}") from None
    print(hashlib.sha256(data).hexdigest())
    return 0
