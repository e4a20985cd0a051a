"""Panels: from the run config to the list of served configurations that may be swept.

Two steps, both pure apart from reading YAML and the catalog snapshot:
- `materialize(cfg)` turns the selected panel (none, local, sim, endpoint, hosted, replay) into a
  PanelConfig whose `configs` are concrete EndpointConfigs;
- `resolve(panel, catalog)` applies the panel's static admission rule (catalog membership and
  the recency rule) and says, for every configuration, whether it is in and, if not, why.
Nothing is silently dropped: every configuration ends up in `included` or in `excluded` with a
reason. `check_secrets` runs only when requests are about to be sent (the `panel` command
sends nothing and never needs a key).

Publication-date precedence (docs/endpoints.md, "The recency rule"):
`EndpointConfig.publication_date` when set, else the catalog's `created` date of
`catalog_alias` (when set) or of `model`. A configuration the catalog does not know and that
has no explicit date is excluded as `not_in_catalog`; one with an explicit date is admitted on
that date. Context length and prices declared in the panel
win; the catalog fills those left unset.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from pipeline.config import (
    ConfigError,
    EndpointConfig,
    Limits,
    PanelConfig,
    Prices,
    RunConfig,
    build,
    conf_dir,
)
from pipeline.endpoints.catalog import Catalog, CatalogEntry, load_catalog, recency_cutoff
from pipeline.endpoints.limit_groups import check_limit_groups
from pipeline.user_files import read_bounded
from pipeline.usererror import UserError

KINDS = ("hosted", "local", "sim", "endpoint", "offline", "replay")


@dataclass(frozen=True)
class IncludedConfig:
    """An admitted configuration with the facts every row records about it."""

    config_id: str
    model: str
    publication_date: str | None  # YYYY-MM-DD; None only for panels without a recency rule
    date_source: str  # override | catalog | unknown
    provider: str
    quantization: str
    family: str
    context_length: int | None
    prices: Prices
    catalog_id: str | None  # the snapshot id the dates came from (alias-aware)
    endpoint: EndpointConfig  # the configuration with catalog facts filled in


@dataclass(frozen=True)
class ExcludedConfig:
    """A configuration kept out of the panel, with a machine code and a readable reason."""

    config_id: str
    model: str
    code: str  # before_cutoff | not_in_catalog | no_publication_date
    reason: str


@dataclass(frozen=True)
class PanelResolution:
    """Which configurations of a panel are in and which are out."""

    included: tuple[IncludedConfig, ...]
    excluded: tuple[ExcludedConfig, ...]
    panel: str = ""
    kind: str = ""
    study_date: str | None = None
    cutoff: date | None = None
    catalog: str | None = None  # snapshot file name
    catalog_sha256: str | None = None


EMBEDDED_PANEL = "local"  # conf/panel/local.yaml: a plain node (no defaults, no package)


def embedded_panel() -> PanelConfig:
    """The panel a config without `+panel` runs on, read as a file: the start's config was
    composed once already (pipeline.config.load.compose), so no second composition."""
    path = conf_dir() / "panel" / f"{EMBEDDED_PANEL}.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    return build(PanelConfig, data, "panel")


def materialize(cfg: RunConfig) -> PanelConfig:
    """The selected panel with concrete configurations (no panel = the embedded local one)."""
    if cfg.panel is None:
        panel = embedded_panel()
    elif cfg.panel.kind == "sim":
        _no_declared_configs(cfg.panel, "the sim node (sim.configs=N)")
        panel = dataclasses.replace(cfg.panel, configs=_sim_configs(cfg))
    elif cfg.panel.kind == "endpoint":
        _no_declared_configs(cfg.panel, "endpoint.* overrides or endpoint.panel_file")
        panel = dataclasses.replace(cfg.panel, configs=_endpoint_configs(cfg))
    elif cfg.panel.kind in ("hosted", "local"):
        panel = cfg.panel
    elif cfg.panel.kind == "replay":
        from pipeline.endpoints.replay_panel import replay_configs  # reads the recordings

        panel = dataclasses.replace(cfg.panel, configs=replay_configs(cfg.panel, cfg.replay))
    elif cfg.panel.kind == "offline":
        _no_endpoints(cfg.panel)
        panel = cfg.panel
    else:
        raise ConfigError(
            f"panel.kind '{cfg.panel.kind}' is unknown; use one of {', '.join(KINDS)}"
        )
    _check_unique_ids(panel)
    check_limit_groups(panel.name, panel.configs)
    for config in panel.configs:
        _check_base_url(panel, config, cfg)
    return panel


def base_url_problem(value: str) -> str | None:
    """Why `value` cannot be an endpoint's base URL (None if it can): an absolute http(s) URL
    with a host, e.g. http://127.0.0.1:8000/v1, without spaces, credentials, query or fragment.
    """
    if value != value.strip() or any(ch.isspace() for ch in value):
        return "contains spaces"
    if "://" not in value:
        return "has no scheme"
    try:
        parts = urlsplit(value)
        port = parts.port
    except ValueError:
        return "has an invalid host or port"
    checks = (
        (
            parts.scheme.lower() not in ("http", "https"),
            f"has scheme {parts.scheme!r}, not http or https",
        ),
        (not parts.hostname, "has no host"),
        (port == 0, "has port 0"),
        (
            parts.username is not None or parts.password is not None,
            "carries credentials (keys belong in an environment variable: api_key_env)",
        ),
        (
            bool(parts.query or parts.fragment) or value.endswith(("?", "#")),
            "has a query or fragment",
        ),
    )
    return next((problem for failed, problem in checks if failed), None)


def _check_base_url(panel: PanelConfig, config: EndpointConfig, cfg: RunConfig) -> None:
    """A malformed base URL is a one-line error naming the configuration, value and fix."""
    if not config.base_url:  # sim and local servers fill it in; requests need one otherwise
        return
    problem = base_url_problem(config.base_url)
    if problem is None:
        return
    if panel.kind == "endpoint" and not cfg.endpoint.panel_file:
        source = "endpoint.base_url"
    elif panel.kind == "endpoint":
        source = f"base_url in endpoint.panel_file {cfg.endpoint.panel_file}"
    else:
        source = f"base_url in panel '{panel.name}'"
    shown = config.base_url
    if "credentials" in problem:  # never echo a password
        parts = urlsplit(shown)
        shown = parts._replace(netloc=f"***@{parts.netloc.rsplit('@', 1)[1]}").geturl()
    example = "http://127.0.0.1:8000/v1"
    if problem == "has no scheme" and shown.strip() and not shown.startswith("/"):
        example = f"http://{shown.strip()}"
    raise ConfigError(
        f"configuration {config.config_id}: {source} {shown!r} {problem}; give an absolute "
        f"http(s) URL with a host and the API prefix, e.g. {example}"
    )


def _no_endpoints(panel: PanelConfig) -> None:
    """An offline panel prices configurations without serving them: no base URL, no key."""
    for config in panel.configs:
        if config.base_url or config.api_key_env:
            raise ConfigError(
                f"configuration {config.config_id} of offline panel '{panel.name}' names an "
                "endpoint (base_url or api_key_env); offline configurations are never sent a "
                "request: drop them, or use a hosted/endpoint panel"
            )


def load_panel_catalog(panel: PanelConfig) -> Catalog | None:
    """The snapshot the panel names (panel.catalog), or None when it names none."""
    return load_catalog(panel.catalog) if panel.catalog else None


def resolve(panel: PanelConfig, catalog: Catalog | None) -> PanelResolution:
    """Apply catalog membership and the recency rule to every configuration of `panel`."""
    cutoff = _cutoff(panel)
    entries = {c.config_id: _lookup(c, catalog) for c in panel.configs}
    if catalog is not None and panel.configs and all(e is None for e in entries.values()):
        raise UserError(
            f"catalog {catalog.name} knows none of panel '{panel.name}''s "
            f"{len(panel.configs)} models; is panel.catalog the right snapshot?"
        )
    included: list[IncludedConfig] = []
    excluded: list[ExcludedConfig] = []
    for config in panel.configs:
        outcome = _admit(config, entries[config.config_id], catalog, cutoff)
        if isinstance(outcome, IncludedConfig):
            included.append(outcome)
        else:
            excluded.append(outcome)
    return PanelResolution(
        included=tuple(included),
        excluded=tuple(excluded),
        panel=panel.name,
        kind=panel.kind,
        study_date=panel.study_date,
        cutoff=cutoff,
        catalog=catalog.name if catalog else None,
        catalog_sha256=catalog.sha256 if catalog else None,
    )


def check_secrets(panel: PanelConfig | PanelResolution) -> None:
    """Every API-key variable an (included) configuration names must be set and non-empty.

    Only the variable's name is ever read into a message; its value is never touched beyond
    the emptiness test.
    """
    if isinstance(panel, PanelResolution):
        names = [c.endpoint.api_key_env for c in panel.included]
    else:
        names = [c.api_key_env for c in panel.configs]
    missing = sorted({n for n in names if n and not os.environ.get(n)})
    if missing:
        verb = "is" if len(missing) == 1 else "are"
        raise UserError(
            f"{', '.join(missing)} {verb} not set: export it or choose another panel "
            "(+panel=sim / no panel for the local models)"
        )


PANEL_FILE_MAX_BYTES = 4 * 2**20  # hundreds of configurations take a few kB


def read_panel_file(path: Path | str) -> tuple[EndpointConfig, ...]:
    """Parse a panel file: a YAML mapping with one key, `configs`, a list of EndpointConfigs.

    Parsed strictly: an unknown key anywhere is a one-line error naming file and position.
    """
    file = Path(path)
    data = read_bounded(  # a FIFO, a device, a directory or a huge file: one line (issue 19)
        file,
        max_bytes=PANEL_FILE_MAX_BYTES,
        cap_name="a panel file's limit",
        what="endpoint.panel_file",
    )
    try:
        doc: Any = yaml.safe_load(data.decode("utf-8"))
    except RecursionError:
        raise UserError(f"endpoint.panel_file {file}: YAML nested too deeply") from None
    except UnicodeDecodeError as exc:
        raise UserError(
            f"endpoint.panel_file {file}: not a UTF-8 text file (byte {exc.start} is "
            f"0x{exc.object[exc.start]:02x}); give a YAML file with configs: [...]"
        ) from None
    except yaml.YAMLError as exc:
        raise UserError(
            f"endpoint.panel_file {file}: not YAML ({str(exc).splitlines()[0]})"
        ) from None
    if not isinstance(doc, dict) or set(doc) != {"configs"} or not isinstance(doc["configs"], list):
        raise UserError(
            f"endpoint.panel_file {file}: expected a mapping with one key, configs: [...]"
        )
    configs = tuple(
        build(EndpointConfig, item, f"{file}: configs[{i}]")
        for i, item in enumerate(doc["configs"])
    )
    for i, config in enumerate(configs):
        if not config.base_url:
            raise UserError(f"endpoint.panel_file {file}: configs[{i}].base_url is required")
    return configs


def _sim_configs(cfg: RunConfig) -> tuple[EndpointConfig, ...]:
    # base_url stays empty: the simulated servers fill it in when they start.
    return tuple(
        EndpointConfig(
            config_id=f"sim-{i:02d}",
            model=f"sim-model-{i:02d}",
            family=f"sim-family-{i % 3}",
            provider="sim",
            quantization="sim",
            api_key_env=cfg.sim.api_key_env,
            response_format="json_schema",
            limits=Limits(rpm=cfg.sim.rpm_limit, concurrency=cfg.sim.concurrency),
            prices=Prices(
                input_per_mtok=cfg.sim.price_input_per_mtok,
                output_per_mtok=cfg.sim.price_output_per_mtok,
            ),
        )
        for i in range(cfg.sim.configs)
    )


def _endpoint_configs(cfg: RunConfig) -> tuple[EndpointConfig, ...]:
    override = cfg.endpoint
    if override.panel_file:
        if override.base_url or override.model:
            raise ConfigError(
                "give either endpoint.panel_file=FILE or endpoint.base_url=URL endpoint.model=NAME"
            )
        return read_panel_file(override.panel_file)
    missing = [
        f"endpoint.{key}={hint}"
        for key, hint in (("base_url", "URL"), ("model", "NAME"))
        if not getattr(override, key)
    ]
    if missing or override.base_url is None or override.model is None:
        raise ConfigError(f"+panel=endpoint needs {' and '.join(missing)}")
    model = override.model
    return (
        EndpointConfig(
            config_id="endpoint-" + "".join(ch if ch.isalnum() else "-" for ch in model.lower()),
            model=model,
            family=model.split("/", 1)[0],
            base_url=override.base_url,
            api_key_env=override.api_key_env,
            response_format=override.response_format,
        ),
    )


def _no_declared_configs(panel: PanelConfig, source: str) -> None:
    if panel.configs:
        raise ConfigError(
            f"panel '{panel.name}' (kind {panel.kind}) takes its configurations from {source}; "
            "remove its `configs:` list or use kind hosted"
        )


def _check_unique_ids(panel: PanelConfig) -> None:
    seen: set[str] = set()
    for config in panel.configs:
        if config.config_id in seen:
            raise ConfigError(f"panel '{panel.name}': config_id '{config.config_id}' appears twice")
        seen.add(config.config_id)


def _cutoff(panel: PanelConfig) -> date | None:
    if panel.study_date is None and panel.recency_months is None:
        return None
    if panel.study_date is None or panel.recency_months is None:
        raise ConfigError(
            f"panel '{panel.name}': the recency rule needs both study_date and recency_months"
        )
    return recency_cutoff(panel.study_date, panel.recency_months)


def _lookup(config: EndpointConfig, catalog: Catalog | None) -> CatalogEntry | None:
    return catalog.lookup(config.catalog_alias or config.model) if catalog else None


def _admit(
    config: EndpointConfig,
    entry: CatalogEntry | None,
    catalog: Catalog | None,
    cutoff: date | None,
) -> IncludedConfig | ExcludedConfig:
    def out(code: str, reason: str) -> ExcludedConfig:
        return ExcludedConfig(config.config_id, config.model, code, reason)

    published, source = _publication_date(config, entry)
    if catalog is not None and entry is None and published is None:
        known_as = config.catalog_alias or config.model
        return out(
            "not_in_catalog",
            f"not_in_catalog: {known_as} is not in {catalog.name} "
            "(set catalog_alias or publication_date)",
        )
    if cutoff is not None and published is None:
        return out("no_publication_date", "no publication date: set publication_date")
    if cutoff is not None and published is not None and published < cutoff:
        return out("before_cutoff", f"published {published}, before cutoff {cutoff}")
    context = config.context_length
    prices = config.prices
    if entry is not None:
        context = context if context is not None else entry.context_length
        prices = prices if prices != Prices() else entry.prices
    day = published.isoformat() if published else None
    endpoint = dataclasses.replace(
        config, publication_date=day, context_length=context, prices=prices
    )
    return IncludedConfig(
        config_id=config.config_id,
        model=config.model,
        publication_date=day,
        date_source=source,
        provider=config.provider,
        quantization=config.quantization,
        family=config.family,
        context_length=context,
        prices=prices,
        catalog_id=entry.id if entry else None,
        endpoint=endpoint,
    )


def _publication_date(
    config: EndpointConfig, entry: CatalogEntry | None
) -> tuple[date | None, str]:
    if config.publication_date is not None:
        try:
            return date.fromisoformat(config.publication_date), "override"
        except ValueError:
            raise ConfigError(
                f"{config.config_id}.publication_date: expected YYYY-MM-DD, "
                f"got {config.publication_date!r}"
            ) from None
    if entry is not None:
        return entry.created, "catalog"
    return None, "unknown"
