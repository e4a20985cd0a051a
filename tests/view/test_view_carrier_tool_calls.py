"""Issue 35: a tool call in a fold's input shows its name and arguments, whichever shape the
transcript gives it (the fixture's top-level `name`/`arguments`, or OpenAI's `function`)."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from pipeline.carrier.config import ScenarioConfig
from pipeline.carrier.fixture import fixture_dict, generate
from pipeline.config.strict import build
from pipeline.study_pages.carrier import fixture_chunks
from pipeline.study_pages.carrier_exchanges import tool_call_parts
from pipeline.view import open_runs
from tests.view.rundirs import carrier_run

ROOT = Path(__file__).resolve().parents[2]


@cache
def small_fixture() -> dict[str, Any]:
    """The `small` scenario's fixture, as a sweep writes it to RUN_DIR/fixture.json."""
    data = yaml.safe_load((ROOT / "conf" / "scenario" / "small.yaml").read_text())
    return fixture_dict(generate(build(ScenarioConfig, data, "scenario"), 1))


def first_tool_call() -> dict[str, Any]:
    for chunk in small_fixture()["chunks"]:
        for message in chunk["messages"]:
            if message["tool_calls"]:
                call: dict[str, Any] = message["tool_calls"][0]
                return call
    raise AssertionError("the small fixture has no tool call")


def test_a_fixture_tool_call_gives_its_name_and_arguments() -> None:
    call = first_tool_call()
    assert "function" not in call  # the fixture's shape: name and arguments at the top level
    assert tool_call_parts(call) == (call["name"], call["arguments"])


def test_an_openai_tool_call_gives_its_name_and_arguments() -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{}"}}
    assert tool_call_parts(call) == ("bash", "{}")
    as_object = {"function": {"name": "bash", "arguments": {"command": "ls"}}}
    assert tool_call_parts(as_object) == ("bash", '{"command": "ls"}')


def test_the_fixture_chunks_render_every_tool_call_with_its_name(tmp_path: Path) -> None:
    run_dir = carrier_run(tmp_path / "run")
    (run_dir / "fixture.json").write_text(json.dumps(small_fixture()), encoding="utf-8")
    (run,) = open_runs([run_dir])
    html = "".join(str(text) for _, text in fixture_chunks(run)[0])
    call = first_tool_call()
    assert "[tool call None]" not in html
    assert f"[tool call {call['name']}] " in html
    assert json.loads(call["arguments"])["command"].split()[0] in html
