"""File inputs of the tool-output study: the dated cache-model files.

The protocol (`pipeline.toolout.cache_models`) parses mappings; reading the YAML happens here,
so pipeline/toolout stays pure. Every `*.yaml` in the directory is one cache model; a file
that fails to parse, or two files with one `name`, raise `CacheModelError` naming the file.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from pipeline.toolout.cache_models import CacheModel, CacheModelError, parse_cache_model

CACHE_MODELS_DIR = Path(__file__).resolve().parents[2] / "data" / "cache-models"


def load_cache_model(path: Path) -> CacheModel:
    """One cache-model file."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise CacheModelError(str(path), "<file>", f"not valid YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise CacheModelError(str(path), "<file>", "must be a mapping of keys")
    return parse_cache_model(data, origin=str(path))


def load_cache_models(directory: Path = CACHE_MODELS_DIR) -> dict[str, CacheModel]:
    """Every cache model in `directory`, by name, in file-name order."""
    models: dict[str, CacheModel] = {}
    for path in sorted(directory.glob("*.yaml")):
        model = load_cache_model(path)
        if model.name in models:
            raise CacheModelError(str(path), "name", f"{model.name!r} is defined twice")
        models[model.name] = model
    if not models:
        raise CacheModelError(str(directory), "<directory>", "no *.yaml cache models found")
    return models
