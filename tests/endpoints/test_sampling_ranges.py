"""Sampling values outside an endpoint's range are refused before any request (issue 19 item 7)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.chat import ChatMessage, ChatRequest
from pipeline.commands.start import prepare
from pipeline.config import ConfigError, EndpointConfig, build
from pipeline.endpoints.sampling import SamplingOutOfRange
from pipeline.endpoints.wire import build_body

SIM = ["+panel=sim", "sim.configs=1", "arms=[j,q]", "repeats=2", "scenario=small"]


def _endpoint(**extra: object) -> EndpointConfig:
    node = {"config_id": "a", "model": "m", "family": "f", **extra}
    return build(EndpointConfig, node, "configs[0]")


def test_temperature_above_two_is_refused_by_default(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"temperature=5 is outside \[0, 2\], the range sim-"):
        prepare([*SIM, "temperature=5", f"out_dir={tmp_path}"])
    prepare([*SIM, "temperature=2", f"out_dir={tmp_path}"])  # the edge is allowed


def test_a_panel_entry_declares_a_narrower_range(tmp_path: Path) -> None:
    panel = tmp_path / "panel.yaml"
    panel.write_text(
        "configs:\n"
        "  - {config_id: narrow, model: m, family: f, base_url: 'http://127.0.0.1:9/v1',"
        " temperature_range: [0, 1]}\n"
    )
    overrides = ["+panel=endpoint", f"endpoint.panel_file={panel}", "arms=[j,q]", "repeats=2"]
    with pytest.raises(ConfigError, match=r"temperature=1.5 is outside \[0, 1\].*narrow"):
        prepare([*overrides, "temperature=1.5", f"out_dir={tmp_path}"])


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        ({"temperature_range": [2, 1]}, "temperature_range must be [low, high]"),
        ({"top_p_range": [0, 1, 2]}, "top_p_range must be [low, high]"),
        ({"top_p_range": [-1, 1]}, "top_p_range must be [low, high]"),
        ({"max_output_tokens": 0}, "max_output_tokens"),
    ],
)
def test_a_malformed_range_or_cap_is_refused(extra: dict[str, object], needle: str) -> None:
    with pytest.raises(ConfigError) as refused:
        _endpoint(**extra)
    assert needle in str(refused.value)


@pytest.mark.parametrize(
    ("fields", "needle"),
    [
        ({"temperature": 2.5}, "temperature=2.5 is outside [0, 2]"),
        ({"top_p": 1.5}, "top_p=1.5 is outside [0, 1]"),
        ({"top_p": -0.1}, "top_p=-0.1 is outside [0, 1]"),
        ({"max_tokens": 0}, "max_tokens=0"),
    ],
)
def test_no_request_outside_the_range_is_built(fields: dict[str, float], needle: str) -> None:
    hello = (ChatMessage("user", "hi"),)
    request = ChatRequest(messages=hello, **{"max_tokens": 8, **fields})  # type: ignore[arg-type]
    with pytest.raises(SamplingOutOfRange) as refused:
        build_body(_endpoint(), request)
    assert needle in str(refused.value)
    body, _ = build_body(_endpoint(), ChatRequest(messages=hello, max_tokens=1, top_p=1.0))
    assert body["top_p"] == 1.0
