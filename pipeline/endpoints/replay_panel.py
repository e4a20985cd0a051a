"""The replay panel (+panel=replay): one configuration per provider family of the recordings.

The panel file (conf/panel/replay.yaml) declares a configuration per provider family it
prices: its `provider` names the recordings' `provider`, its `model` is the name the replay
server answers to, its `prices` make the run's estimate non-zero. `replay_configs` holds that
list against the recordings (`replay.dir`, default data/provider-replies):
- a declared configuration whose provider has no servable recording is a ConfigError (it
  would be probed and fail, or worse, be served another provider's bytes);
- a provider family with servable recordings but no declared configuration is added as
  `replay-<provider>` serving model `replay/<provider>`, unpriced (decision: nothing in the
  directory is silently left out; its rows show cost 0).
Servable (decision): only 2xx recordings unless `replay.statuses=all`. Error replies would
make units invalid or retried, which is expected, but a recorded 402 stops the whole run
(the engine treats it as the provider refusing to bill further).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from pipeline.config.schema import EndpointConfig, PanelConfig, ReplayConfig
from pipeline.config.strict import ConfigError
from pipeline.endpoints.recording import Recording, load_recordings, model_slug

SHIPPED_DIR = Path(__file__).resolve().parents[2] / "data" / "provider-replies"


def replay_dir(replay: ReplayConfig) -> Path:
    """The recordings directory: `replay.dir` (`~` expanded), else the shipped one."""
    return Path(replay.dir).expanduser() if replay.dir else SHIPPED_DIR


def servable(replay: ReplayConfig) -> dict[str, tuple[Recording, ...]]:
    """provider -> its servable recordings (sorted by path), providers sorted."""
    recordings = load_recordings(replay_dir(replay))
    groups: dict[str, list[Recording]] = {}
    for rec in recordings:
        if replay.statuses == "all" or rec.ok:
            groups.setdefault(rec.provider, []).append(rec)
    if not groups:
        raise ConfigError(
            f"replay.dir {str(replay_dir(replay))!r} holds no 2xx recording to serve; "
            "set replay.statuses=all to serve error replies too"
        )
    return {provider: tuple(recs) for provider, recs in sorted(groups.items())}


def replay_configs(panel: PanelConfig, replay: ReplayConfig) -> tuple[EndpointConfig, ...]:
    """The panel's configurations checked against the recordings, undeclared families added."""
    groups = servable(replay)
    declared = {config.provider for config in panel.configs}
    for config in panel.configs:
        if config.provider not in groups:
            raise ConfigError(
                f"panel '{panel.name}': configuration {config.config_id} replays provider "
                f"{config.provider!r}, which has no servable recording in "
                f"{str(replay_dir(replay))!r} (providers: {', '.join(groups)})"
            )
        if config.base_url:
            raise ConfigError(
                f"panel '{panel.name}': configuration {config.config_id} sets base_url; the "
                "replay server is started by the sweep and fills it in"
            )
    added = tuple(
        EndpointConfig(
            config_id=f"replay-{model_slug(provider)}",
            model=f"replay/{provider}",
            family=provider,
            provider=provider,
        )
        for provider in groups
        if provider not in declared
    )
    return (*panel.configs, *added)


def served_by_model(
    endpoints: tuple[EndpointConfig, ...], groups: Mapping[str, tuple[Recording, ...]]
) -> dict[str, tuple[Recording, ...]]:
    """What the panel's replay server serves: each configuration's model -> its provider's
    recordings."""
    models: dict[str, tuple[Recording, ...]] = {}
    for ep in endpoints:
        if models.get(ep.model, groups[ep.provider]) != groups[ep.provider]:
            raise ConfigError(f"model {ep.model!r} is declared for two replayed providers")
        models[ep.model] = groups[ep.provider]
    return models
