"""Panels: materialization of every kind, the recency rule, the catalog, secrets, the CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import date
from pathlib import Path

import pytest
import yaml

from pipeline.cli import main as cli_main
from pipeline.config import (
    ConfigError,
    EndpointConfig,
    EndpointOverride,
    PanelConfig,
    Prices,
    RunConfig,
    SimConfig,
    build,
)
from pipeline.endpoints.catalog import Catalog, CatalogEntry, load_catalog
from pipeline.endpoints.panels import (
    check_secrets,
    load_panel_catalog,
    materialize,
    resolve,
)
from pipeline.usererror import UserError

ROOT = Path(__file__).resolve().parents[2]
PAPER_EXCLUDED = {
    "meta-llama/llama-3.2-3b-instruct",
    "mistralai/ministral-14b-2512",
    "qwen/qwen3-235b-a22b-2507",
}


def _run_config(panel: PanelConfig | None, **kw: object) -> RunConfig:
    return RunConfig(panel=panel, **kw)  # type: ignore[arg-type]


def _entry(model_id: str, created: date, context: int | None = 4096) -> CatalogEntry:
    return CatalogEntry(
        id=model_id,
        canonical_slug=model_id,
        name=model_id,
        created=created,
        context_length=context,
        prices=Prices(input_per_mtok=1.0, output_per_mtok=2.0),
    )


def _catalog(*entries: CatalogEntry) -> Catalog:
    return Catalog(
        snapshot_date=date(2026, 6, 1),
        path=Path("openrouter-models-2026-06-01.json"),
        sha256="0" * 64,
        entries={e.id: e for e in entries},
    )


def _hosted(*configs: EndpointConfig, study_date: str | None = "2026-07-28") -> PanelConfig:
    months = 6 if study_date else None
    return PanelConfig("p", "hosted", configs, study_date=study_date, recency_months=months)


def _config(config_id: str, model: str, **kw: object) -> EndpointConfig:
    return EndpointConfig(config_id, model, family=model.split("/", maxsplit=1)[0], **kw)  # type: ignore[arg-type]


def test_model_published_exactly_on_the_cutoff_is_included() -> None:
    catalog = _catalog(_entry("v/on", date(2026, 1, 28)), _entry("v/before", date(2026, 1, 27)))
    panel = _hosted(_config("on", "v/on"), _config("before", "v/before"))
    result = resolve(panel, catalog)
    assert [c.config_id for c in result.included] == ["on"]
    assert result.excluded[0].code == "before_cutoff"
    assert result.excluded[0].reason == "published 2026-01-27, before cutoff 2026-01-28"


def test_catalog_alias_finds_tencent_hy3_under_its_preview_id() -> None:
    catalog = load_catalog("openrouter-models-2026-06-16.json")
    panel = _hosted(
        _config("aliased", "tencent/hy3", catalog_alias="tencent/hy3-preview"),
        _config("bare", "tencent/hy3"),
    )
    result = resolve(panel, catalog)
    (hy3,) = result.included
    assert (hy3.config_id, hy3.catalog_id, hy3.publication_date) == (
        "aliased",
        "tencent/hy3-preview",
        "2026-04-22",
    )
    assert result.excluded[0].code == "not_in_catalog"


def test_explicit_publication_date_overrides_the_catalog_date() -> None:
    catalog = _catalog(_entry("v/old", date(2025, 1, 1)))
    panel = _hosted(
        _config("old", "v/old", publication_date="2026-02-01"),
        _config("unknown", "v/unknown", publication_date="2026-03-01"),
    )
    result = resolve(panel, catalog)
    assert [(c.config_id, c.publication_date, c.date_source) for c in result.included] == [
        ("old", "2026-02-01", "override"),
        ("unknown", "2026-03-01", "override"),
    ]


def test_catalog_that_knows_none_of_the_panel_models_is_a_user_error() -> None:
    panel = _hosted(_config("a", "v/a"), _config("b", "v/b"))
    with pytest.raises(UserError, match="knows none of panel 'p'"):
        resolve(panel, _catalog(_entry("other/x", date(2026, 5, 1))))


def test_catalog_fills_context_and_prices_only_where_the_panel_leaves_them_unset() -> None:
    catalog = _catalog(_entry("v/a", date(2026, 5, 1), context=8192))
    declared = Prices(input_per_mtok=9.0, output_per_mtok=9.0)
    panel = _hosted(
        _config("filled", "v/a"), _config("kept", "v/a", context_length=100, prices=declared)
    )
    filled, kept = resolve(panel, catalog).included
    assert (filled.context_length, filled.prices.input_per_mtok) == (8192, 1.0)
    assert filled.endpoint.publication_date == "2026-05-01"
    assert (kept.context_length, kept.prices) == (100, declared)


def test_recent_panel_admits_the_paper_twenty_over_eleven_families() -> None:
    data = yaml.safe_load((ROOT / "conf" / "panel" / "recent.yaml").read_text(encoding="utf-8"))
    panel = build(PanelConfig, data["panel"])  # the file is a preset: the panel sits under panel:
    result = resolve(panel, load_panel_catalog(panel))
    assert len(result.included) == 20
    assert {c.model for c in result.excluded} == PAPER_EXCLUDED
    assert len({c.family for c in result.included}) == 11
    assert result.cutoff == date(2026, 1, 28)


def test_no_panel_materializes_the_embedded_local_panel() -> None:
    panel = materialize(_run_config(None))
    assert panel.kind == "local"
    assert [c.config_id for c in panel.configs] == [
        "local-smollm2-135m-q4_1",
        "local-gemma3-270m-base-q4_k_m",
    ]


def test_sim_panel_generates_the_configured_number_of_endpoints() -> None:
    cfg = _run_config(
        PanelConfig("sim", "sim"), sim=SimConfig(configs=4, rpm_limit=30.0, api_key_env="SIM_KEY")
    )
    configs = materialize(cfg).configs
    assert [c.config_id for c in configs] == ["sim-00", "sim-01", "sim-02", "sim-03"]
    assert [c.family for c in configs] == [
        "sim-family-0",
        "sim-family-1",
        "sim-family-2",
        "sim-family-0",
    ]
    assert {c.base_url for c in configs} == {""}
    assert {(c.limits.rpm, c.api_key_env, c.response_format) for c in configs} == {
        (30.0, "SIM_KEY", "json_schema")
    }


def test_endpoint_panel_without_base_url_names_the_missing_override() -> None:
    cfg = _run_config(PanelConfig("endpoint", "endpoint"), endpoint=EndpointOverride(model="m"))
    with pytest.raises(UserError, match=r"endpoint\.base_url=URL"):
        materialize(cfg)


def test_endpoint_panel_builds_one_config_from_the_overrides() -> None:
    override = EndpointOverride(
        base_url="http://127.0.0.1:9/v1", model="org/Model-1", api_key_env="K"
    )
    (config,) = materialize(
        _run_config(PanelConfig("endpoint", "endpoint"), endpoint=override)
    ).configs
    assert (config.config_id, config.family, config.base_url, config.api_key_env) == (
        "endpoint-org-model-1",
        "org",
        "http://127.0.0.1:9/v1",
        "K",
    )


def test_endpoint_panel_file_lists_several_configs(tmp_path: Path) -> None:
    file = tmp_path / "panel.yaml"
    file.write_text(
        "configs:\n"
        "  - {config_id: a, model: m1, family: f1, base_url: 'http://127.0.0.1:1/v1'}\n"
        "  - {config_id: b, model: m2, family: f2, base_url: 'http://127.0.0.1:2/v1',"
        " limits: {rpm: 10}}\n",
        encoding="utf-8",
    )
    cfg = _run_config(
        PanelConfig("endpoint", "endpoint"), endpoint=EndpointOverride(panel_file=str(file))
    )
    configs = materialize(cfg).configs
    assert [(c.config_id, c.limits.rpm) for c in configs] == [("a", None), ("b", 10.0)]


def test_unknown_key_in_a_panel_file_is_a_one_line_cli_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    file = tmp_path / "panel.yaml"
    file.write_text(
        "configs:\n  - {config_id: a, model: m, family: f, base_ur: x}\n", encoding="utf-8"
    )
    code = cli_main(["panel", "arms=[j]", "+panel=endpoint", f"endpoint.panel_file={file}"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1
    assert "base_ur" in err and "configs[0]" in err


def test_duplicate_config_ids_are_rejected() -> None:
    panel = _hosted(_config("a", "v/a"), _config("a", "v/b"))
    with pytest.raises(ConfigError, match="appears twice"):
        materialize(_run_config(panel))


def test_missing_api_key_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENROUTER_API_KEY", raising=False)
    panel = _hosted(_config("a", "v/a", api_key_env="OPENROUTER_API_KEY"), study_date=None)
    with pytest.raises(UserError) as err:
        check_secrets(panel)
    assert str(err.value) == (
        "OPENROUTER_API_KEY is not set: export it or choose another panel "
        "(+panel=sim / no panel for the local models)"
    )
    monkeypatch.setenv("OPENROUTER_API_KEY", "sk-test-value")
    check_secrets(resolve(panel, None))


def test_panel_command_json_lists_twenty_in_and_three_out_without_a_key() -> None:
    env = {k: v for k, v in os.environ.items() if k != "OPENROUTER_API_KEY"}
    env["PYTHONPATH"] = str(ROOT)
    proc = subprocess.run(
        [sys.executable, "-m", "pipeline", "panel", "arms=[j]", "+panel=recent", "--json"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert len(out["included"]) == 20
    assert "tencent/hy3" in {c["model"] for c in out["included"]}
    assert {c["model"] for c in out["excluded"]} == PAPER_EXCLUDED
    reasons = {c["model"]: c["reason"] for c in out["excluded"]}
    assert reasons["qwen/qwen3-235b-a22b-2507"] == "published 2025-07-21, before cutoff 2026-01-28"


def test_panel_command_prints_a_table_by_default(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["panel", "arms=[j]", "+panel=recent"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("panel recent (hosted): 20 included (11 families), 3 excluded")
    assert "hy3-tencent-fp8" in out


@pytest.mark.parametrize(
    ("base_url", "problem"),
    [
        ("localhost:8000/v1", "has no scheme"),
        ("ftp://127.0.0.1/v1", "has scheme 'ftp', not http or https"),
        ("http:///v1", "has no host"),
        ("http://127.0.0.1:8000/ v1", "contains spaces"),
        (" http://127.0.0.1:8000/v1", "contains spaces"),
        ("http://127.0.0.1:99999/v1", "has an invalid host or port"),
        ("http://127.0.0.1:8000/v1?key=1", "has a query or fragment"),
    ],
    ids=["no-scheme", "ftp", "no-host", "space", "leading-space", "bad-port", "query"],
)
def test_malformed_endpoint_base_url_names_the_configuration_value_and_fix(
    base_url: str, problem: str
) -> None:
    cfg = _run_config(
        PanelConfig("endpoint", "endpoint"), endpoint=EndpointOverride(base_url=base_url, model="m")
    )
    with pytest.raises(ConfigError) as err:
        materialize(cfg)
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith(f"configuration endpoint-m: endpoint.base_url {base_url!r} {problem}")
    assert "e.g. http" in message


def test_base_url_without_a_scheme_suggests_the_same_address_with_one() -> None:
    cfg = _run_config(
        PanelConfig("endpoint", "endpoint"),
        endpoint=EndpointOverride(base_url="localhost:8000/v1", model="m"),
    )
    with pytest.raises(ConfigError, match=r"e\.g\. http://localhost:8000/v1$"):
        materialize(cfg)


def test_base_url_with_credentials_is_refused_without_echoing_the_password() -> None:
    panel = _hosted(_config("a", "v/a", base_url="https://user:hunter2@gw.example/v1"))
    with pytest.raises(ConfigError) as err:
        materialize(_run_config(panel))
    assert "configuration a: base_url in panel 'p'" in str(err.value)
    assert "hunter2" not in str(err.value)
    assert "api_key_env" in str(err.value)


def test_malformed_base_url_in_a_panel_file_names_the_file(tmp_path: Path) -> None:
    file = tmp_path / "panel.yaml"
    file.write_text(
        "configs:\n  - {config_id: a, model: m, family: f, base_url: 'http//127.0.0.1/v1'}\n",
        encoding="utf-8",
    )
    cfg = _run_config(
        PanelConfig("endpoint", "endpoint"), endpoint=EndpointOverride(panel_file=str(file))
    )
    with pytest.raises(
        ConfigError, match=rf"configuration a: base_url in endpoint.panel_file {file}"
    ):
        materialize(cfg)


@pytest.mark.parametrize(
    "base_url",
    ["http://127.0.0.1:9/v1", "https://openrouter.ai/api/v1", "http://[::1]:8000/v1/"],
)
def test_well_formed_base_urls_pass(base_url: str) -> None:
    cfg = _run_config(
        PanelConfig("endpoint", "endpoint"), endpoint=EndpointOverride(base_url=base_url, model="m")
    )
    assert materialize(cfg).configs[0].base_url == base_url
