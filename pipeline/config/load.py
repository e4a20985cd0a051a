"""Compose the Hydra config and convert it once into a typed RunConfig.

Errors from Hydra (an unknown arm, scenario or panel; an unknown key) are turned into one-line
ConfigErrors that say what was wrong and how to fix it, before any request is sent.

A study's name is its config file's name (`study=NAME` selects conf/study/NAME.yaml): the
composed `study.name` is set from that choice, never written in the file, so the two cannot
disagree. `compose` composes once and returns both the plain dict (what the manifest records)
and the typed RunConfig built from that same dict.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.config.schema import RunConfig
from pipeline.config.strict import ConfigError, build
from pipeline.run_dir_error import RunDirError

_GROUPS = ("arms", "scenario", "panel", "study")
_STUDY_OVERRIDE = "study="
_PANEL_OVERRIDES = ("panel=", "+panel=", "++panel=")
# A preset's `override /GROUP: NAME` under a study that does not load GROUP (Hydra's words)
_PRESET_OVERRIDE = re.compile(r"In '([\w/-]+)': Could not override '(\w+)'\. No match")


@dataclass(frozen=True)
class Composed:
    """One composition: the resolved dict (as recorded) and the RunConfig built from it."""

    overrides: tuple[str, ...]
    data: dict[str, Any]
    cfg: RunConfig


def conf_dir() -> Path:
    """The conf/ directory: FOLDSWEEP_CONF, else the one beside the package."""
    env = os.environ.get("FOLDSWEEP_CONF")
    return Path(env) if env else Path(__file__).resolve().parents[2] / "conf"


def available(group: str) -> list[str]:
    """Names of the options of a config group (the YAML files in conf/GROUP/)."""
    return sorted(p.stem for p in (conf_dir() / group).glob("*.yaml"))


def study_choice(overrides: Sequence[str] = ()) -> str:
    """The study `overrides` select: the last `study=NAME`, else conf/config.yaml's default.

    Known before composing, so a study's default panel is added to the one composition."""
    chosen = [o.split("=", 1)[1] for o in overrides if o.startswith(_STUDY_OVERRIDE)]
    if chosen:
        return chosen[-1]
    import yaml

    root = yaml.safe_load((conf_dir() / "config.yaml").read_text(encoding="utf-8"))
    defaults = root.get("defaults", []) if isinstance(root, dict) else []
    for entry in defaults:
        if isinstance(entry, dict) and "study" in entry:
            return str(entry["study"])
    raise ConfigError("conf/config.yaml selects no study in its defaults; pass study=NAME")


def selects_panel(overrides: Sequence[str]) -> bool:
    """Whether `overrides` select a panel (`+panel=NAME`)."""
    return any(o.startswith(_PANEL_OVERRIDES) for o in overrides)


def compose(overrides: Sequence[str] = ()) -> Composed:
    """Compose once; the dict and the typed config come from the same composition."""
    data = compose_dict(overrides)
    return Composed(tuple(overrides), data, build(RunConfig, data))


def compose_dict(overrides: Sequence[str] = ()) -> dict[str, Any]:
    """Compose conf/config.yaml with Hydra overrides into a plain dict (`study.name` set)."""
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
    composed = {str(k): v for k, v in data.items()}
    composed["study"] = _named_study(composed.get("study"), study_choice(overrides))
    return composed


def _named_study(node: Any, name: str) -> dict[str, Any]:
    """The study node with its name: the conf file's (a file that names another is refused)."""
    study = dict(node) if isinstance(node, Mapping) else {}
    written = study.get("name")
    if written is not None and written != name:
        raise ConfigError(
            f"conf/study/{name}.yaml names its study {written!r}; a study's name is its file's "
            "name: drop `name:` from the file"
        )
    return {"name": name, **{k: v for k, v in study.items() if k != "name"}}


def load(overrides: Sequence[str] = ()) -> RunConfig:
    """Compose and validate; raises ConfigError with a fix-it message."""
    return compose(overrides).cfg


def config_from_manifest(manifest_config: Mapping[str, Any]) -> RunConfig:
    """The RunConfig a run directory was made with (its manifest's `config`), read strictly.

    The manifest holds the resolved config as composed (secrets dropped), so it converts like
    a fresh one; a key this foldsweep does not know is a RunDirError in one line, not a
    silently ignored setting.
    """
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
    preset = _PRESET_OVERRIDE.match(first)
    if preset is not None:
        where, group = preset.groups()
        return (
            f"conf/{where}.yaml chooses a {group}, which study={study_choice(overrides)} does "
            f"not have: choose another {where.split('/', 1)[0]} for this study"
        )
    if first.startswith("Could not override"):
        key = first.removeprefix("Could not override '").split("'", 1)[0]
        if available(key):
            return (
                f"study={study_choice(overrides)} has no '{key}' group (conf/{key}/ is another "
                f"study's): drop {key}=..."
            )
        return f"unknown config key '{key}'; check the spelling (see conf/config.yaml)"
    return f"bad configuration: {first}"
