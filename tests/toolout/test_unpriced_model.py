"""A configuration whose model its cache model does not price: one line before Ray starts.

Issue 32 §8: the tool-output study accounts each configuration under its provider's cache
model; a model that file does not price raised `UnknownPriceError` inside a Ray actor (a
92-line `RayTaskError`, exit 1). The study's runner is built for every configuration before
anything starts (pipeline/sweep/run.py `prepare`), and that is where it is refused now, naming
the configuration, the model and the cache model.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.cli import main

PANEL = """configs:
  - {config_id: "openai:gpt-9", model: gpt-9, family: openai, provider: openai,
     base_url: "http://127.0.0.1:9/v1"}
"""


def test_a_toolout_model_without_a_cache_model_price_is_refused_before_ray_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    panel = tmp_path / "panel.yaml"
    panel.write_text(PANEL, encoding="utf-8")
    argv = [
        "sweep",
        "study=toolout",
        "+panel=endpoint",
        f"endpoint.panel_file={panel}",
        f"out_dir={tmp_path / 'runs'}",
    ]
    assert main(argv) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1, err
    line = err[0]
    assert line.startswith("error: configuration openai:gpt-9: ")
    assert "'gpt-9'" in line and "cache model 'openai'" in line
    assert "gpt-5" in line  # the models it does price, to pick from
    assert not (tmp_path / "runs").exists()  # before a run directory, Ray or a server
