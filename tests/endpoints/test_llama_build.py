"""The llama-server build is portable, and the build script's check would catch one that is not.

A green CI on the machine that compiled the binary says nothing about the next machine (issue
9), so these tests look at the artifact: its instructions and its recorded flags.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from pipeline.endpoints import llama_bin

REPO = Path(__file__).resolve().parents[2]
needs_objdump = pytest.mark.skipif(shutil.which("objdump") is None, reason="objdump not found")
needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc not found")


def _build_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "build_llama_server", REPO / "scripts" / "build_llama_server.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _compile(tmp_path: Path, flags: list[str], body: str) -> Path:
    source = tmp_path / "probe.c"
    source.write_text(body)
    binary = tmp_path / "probe.o"
    subprocess.run(["gcc", "-O2", "-c", *flags, str(source), "-o", str(binary)], check=True)
    return binary


AVX512_ADD = """
#include <immintrin.h>
void add(float *a, const float *b) {
    _mm512_storeu_ps(a, _mm512_add_ps(_mm512_loadu_ps(a), _mm512_loadu_ps(b)));
}
"""
AVX2_ADD = """
#include <immintrin.h>
void add(float *a, const float *b) {
    _mm256_storeu_ps(a, _mm256_add_ps(_mm256_loadu_ps(a), _mm256_loadu_ps(b)));
}
"""


@needs_objdump
@needs_gcc
def test_portability_check_rejects_a_binary_with_avx512_instructions(tmp_path: Path) -> None:
    script = _build_script()
    binary = _compile(tmp_path, ["-mavx512f"], AVX512_ADD)
    with pytest.raises(script.BuildError, match="%zmm"):
        script._check_portable(binary)


@needs_objdump
@needs_gcc
def test_portability_check_passes_an_avx2_binary(tmp_path: Path) -> None:
    script = _build_script()
    binary = _compile(tmp_path, ["-mavx2"], AVX2_ADD)
    assert script._check_portable(binary) == "passed"


def test_a_build_with_other_flags_is_not_up_to_date(tmp_path: Path) -> None:
    script = _build_script()
    binary = tmp_path / "bin" / "llama-server"
    binary.parent.mkdir()
    binary.write_bytes(b"")
    record = {
        "sdist_version": llama_bin.SDIST_VERSION,
        "cmake_flags": list(llama_bin.PORTABLE_CMAKE_FLAGS),
        "portability_check": "passed",
    }
    llama_bin.build_info_path(binary).write_text(json.dumps(record))
    assert script._up_to_date(binary)
    native = {**record, "cmake_flags": ["-DGGML_NATIVE=ON"]}
    llama_bin.build_info_path(binary).write_text(json.dumps(native))
    assert not script._up_to_date(binary)


@pytest.mark.local_model
@needs_objdump
def test_the_installed_llama_server_has_no_avx512_or_amx_instruction() -> None:
    build = llama_bin.locate()
    listing = subprocess.run(
        ["objdump", "-d", "--no-show-raw-insn", str(build.binary)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    found = [p for p in llama_bin.FORBIDDEN_X86_PATTERNS if p in listing]
    assert found == [], f"{build.binary} is not portable: {found}"
    assert "%ymm" in listing  # the AVX2 baseline is in use, not a scalar fallback


@pytest.mark.local_model
def test_the_installed_llama_server_records_the_portable_flags() -> None:
    build = llama_bin.locate()
    assert build.info.get("cmake_flags") == list(llama_bin.PORTABLE_CMAKE_FLAGS)
    assert build.info.get("portability_check") == "passed"
    assert build.info.get("sdist_sha256") == llama_bin.SDIST_SHA256
