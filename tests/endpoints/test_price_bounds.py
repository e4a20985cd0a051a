"""Prices are finite and >= 0, budgets finite: one line before anything starts (issue 32 §7).

A negative or NaN price turned the budget off (a -1000/Mtok panel "cost" -$7.96 and ran all
12 requests against a $0.50 budget); `budget.usd=inf` or `1e309` passed silently as "no
limit". Each is now refused where the panel (or the config) is loaded, naming the
configuration and the field.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.cli import main
from pipeline.config.schema import EndpointConfig, Prices
from pipeline.config.strict import ConfigError
from pipeline.endpoints.panels import read_panel_file


def _panel_file(tmp_path: Path, prices: str) -> Path:
    path = tmp_path / "panel.yaml"
    path.write_text(
        "configs:\n"
        "  - {config_id: cheap, model: m, family: f, base_url: 'http://127.0.0.1:9/v1',\n"
        f"     prices: {prices}}}\n",
        encoding="utf-8",
    )
    return path


def _one_error(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    assert main(argv) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1, err
    assert err[0].startswith("error: ")
    return err[0]


@pytest.mark.parametrize(
    ("prices", "field", "shown"),
    [
        ("{input_per_mtok: -1000}", "input_per_mtok", "-1000"),
        ("{output_per_mtok: .nan}", "output_per_mtok", "nan"),
        ("{cached_input_per_mtok: .inf}", "cached_input_per_mtok", "inf"),
        ("{cache_write_per_mtok: -0.5}", "cache_write_per_mtok", "-0.5"),
    ],
)
def test_a_negative_or_non_finite_price_in_a_panel_file_is_one_line_naming_config_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], prices: str, field: str, shown: str
) -> None:
    path = _panel_file(tmp_path, prices)
    with pytest.raises(ConfigError) as refused:
        read_panel_file(path)
    assert "cheap" in str(refused.value) and f"prices.{field}" in str(refused.value)
    line = _one_error(
        capsys,
        ["sweep", "+panel=endpoint", f"endpoint.panel_file={path}", f"out_dir={tmp_path / 'r'}"],
    )
    assert "configuration cheap" in line and f"prices.{field}" in line and shown in line
    assert "finite" in line and ">= 0" in line
    assert not (tmp_path / "r").exists()  # refused before a run directory was made


def test_the_sim_panel_prices_are_bounded_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    line = _one_error(
        capsys,
        ["sweep", "+panel=sim", "sim.price_input_per_mtok=-1000", f"out_dir={tmp_path}"],
    )
    assert "sim.price_input_per_mtok" in line


def test_an_endpoint_config_names_itself_and_the_field() -> None:
    with pytest.raises(ConfigError, match=r"configuration x: prices\.input_per_mtok"):
        EndpointConfig(config_id="x", model="m", family="f", prices=Prices(input_per_mtok=-1.0))
    EndpointConfig(config_id="x", model="m", family="f", prices=Prices(0.0, 0.0, 0.0, 0.0))


@pytest.mark.parametrize("value", ["inf", "1e309", "nan", "-inf"])
def test_a_budget_that_is_not_a_finite_number_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str
) -> None:
    line = _one_error(capsys, ["sweep", "+panel=sim", f"budget.usd={value}", f"out_dir={tmp_path}"])
    assert "budget.usd" in line and "finite" in line
    assert "null" in line  # says how to ask for no limit
