"""Compose the Hydra config and convert it once into a typed RunConfig.

Errors from Hydra (an unknown arm, scenario or panel; an unknown key) are turned into one-line
ConfigErrors that say what was wrong and how to fix it, before any request is sent.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pipeline.config.schema import RunConfig
from pipeline.config.strict import ConfigError, build

_GROUPS = ("arms", "scenario", "panel", "study")


def conf_dir() -> Path:
    """The conf/ directory: FOLDSWEEP_CONF, else the one beside the package."""
    env = os.environ.get("FOLDSWEEP_CONF")
    return Path(env) if env else Path(__file__).resolve().parents[2] / "conf"


def available(group: str) -> list[str]:
    """Names of the options of a config group (the YAML files in conf/GROUP/)."""
    return sorted(p.stem for p in (conf_dir() / group).glob("*.yaml"))


def compose_dict(overrides: Sequence[str] = ()) -> dict[str, Any]:
    """Compose conf/config.yaml with Hydra overrides into a plain dict."""
    import yaml
    from hydra import compose, initialize_config_dir
    from hydra.errors import HydraException
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    with initialize_config_dir(config_dir=str(conf_dir()), version_base=None):
        try:
            cfg = compose("config", overrides=list(overrides))
        except HydraException as exc:
            raise ConfigError(_explain(exc, overrides)) from None
        except OmegaConfBaseException as exc:
            raise ConfigError(f"bad override: {str(exc).splitlines()[0]}") from None
        except yaml.YAMLError as exc:
            first = str(exc).splitlines()[0]
            raise ConfigError(f"a file under conf/ is not valid YAML: {first}") from None
        try:
            data = OmegaConf.to_container(cfg, resolve=True)
        except OmegaConfBaseException as exc:
            raise ConfigError(f"config does not resolve: {str(exc).splitlines()[0]}") from None
    assert isinstance(data, dict)
    return {str(k): v for k, v in data.items()}


def load(overrides: Sequence[str] = ()) -> RunConfig:
    """Compose and validate; raises ConfigError with a fix-it message."""
    data = compose_dict(overrides)
    cfg = build(RunConfig, data)
    return cfg


def config_from_manifest(manifest_config: Mapping[str, Any]) -> RunConfig:
    """The RunConfig a run directory was made with (its manifest's `config`), read strictly.

    The manifest holds the resolved config as composed (secrets dropped), so it converts like
    a fresh one; a key this foldsweep does not know is a RunDirError in one line, not a
    silently ignored setting.
    """
    from pipeline.store.reader import RunDirError  # the store loads Polars; `load` needs none

    try:
        return build(RunConfig, manifest_config)
    except ConfigError as exc:
        raise RunDirError(f"manifest config does not match this foldsweep: {exc}") from None


def _explain(exc: Exception, overrides: Sequence[str]) -> str:
    text = str(exc)
    first = text.splitlines()[0] if text else type(exc).__name__
    for group in _GROUPS:
        marker = next(
            (m for m in (f"Could not load '{group}/", f"Could not find '{group}/") if m in text),
            None,
        )
        if marker is not None:
            name = text.split(marker, 1)[1].split("'", 1)[0]
            noun = "arm" if group == "arms" else group
            return (
                f"unknown {noun} '{name}'; available: {', '.join(available(group))} "
                f"(add conf/{group}/{name}.yaml to define it)"
            )
    if first.startswith("Could not override"):
        key = first.removeprefix("Could not override '").split("'", 1)[0]
        return f"unknown config key '{key}'; check the spelling (see conf/config.yaml)"
    return f"bad configuration: {first}"
