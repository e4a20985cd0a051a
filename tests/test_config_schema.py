"""The config is a schema first: closed sets and ranges fail at conversion, before anything starts.

Issue 10: a misspelt `schedule=` used to fail in the plan after servers, Ray and probes had
started, and a bad `endpoint.response_format` inside a Ray actor.
"""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path
from typing import Any, get_args

import pytest

from pipeline.carrier.arms import CARRIER_RULES, PLAIN_REPRESENTATIONS, SCHEMA_REPRESENTATIONS
from pipeline.carrier.config import (
    ArmConfig,
    CarrierRule,
    PlacementRule,
    Representation,
    ScenarioConfig,
)
from pipeline.carrier.fixture_session import PLACEMENTS
from pipeline.config import (
    ConfigError,
    EndpointConfig,
    Limits,
    LocalModelSpec,
    PanelConfig,
    RunConfig,
    build,
    load,
)
from pipeline.config.schema import (
    LocalSource,
    PanelKind,
    ReasoningForm,
    ResponseFormat,
    ScheduleName,
)
from pipeline.endpoints.local_weights import SOURCES
from pipeline.endpoints.panels import KINDS
from pipeline.endpoints.wire import REASONING_FORMS, RESPONSE_FORMS
from pipeline.sweep.schedules import SCHEDULES
from pipeline.usererror import UserError

REPO = Path(__file__).resolve().parents[1]

ENDPOINT = {"config_id": "c", "model": "m", "family": "f"}
ARM = {
    "name": "w",
    "description": "d",
    "system_prompt": "p",
    "representation": "plain",
    "output_tokens": 10,
    "carry_cap_tokens": 10,
    "carrier_from_reply": "text",
}
SCENARIO = {
    "name": "s",
    "target_tokens": 100,
    "chunk_tokens": 10,
    "folds": 10,
    "placement": "distributed",
}


def _nested(key: str, value: Any) -> dict[str, Any]:
    """`a.b.c`, v -> {"a": {"b": {"c": v}}}."""
    head, _, rest = key.partition(".")
    return {head: _nested(rest, value) if rest else value}


def _merged(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in extra.items():
        out[key] = _merged(out[key], value) if isinstance(value, dict) and key in out else value
    return out


# -- closed sets ------------------------------------------------------------------------------

# (dataclass, a valid mapping, the misspelt key path, the misspelling, the Literal)
LITERALS = [
    (RunConfig, {}, "schedule", "wiliams", ScheduleName),
    (RunConfig, {}, "endpoint.response_format", "jsonn", ResponseFormat),
    (EndpointConfig, ENDPOINT, "response_format", "json", ResponseFormat),
    (EndpointConfig, ENDPOINT, "reasoning", "off", ReasoningForm),
    (PanelConfig, {"name": "p"}, "kind", "simm", PanelKind),
    (LocalModelSpec, {}, "source", "smollm2", LocalSource),
    (ArmConfig, ARM, "representation", "xml", Representation),
    (ArmConfig, ARM, "carrier_from_reply", "rendred", CarrierRule),
    (ScenarioConfig, SCENARIO, "placement", "single", PlacementRule),
]


@pytest.mark.parametrize(
    ("cls", "base", "key", "bad", "literal"),
    LITERALS,
    ids=[f"{c.__name__}.{k}" for c, _, k, *_ in LITERALS],
)
def test_a_misspelt_choice_is_one_line_naming_the_key_value_and_choices(
    cls: type, base: dict[str, Any], key: str, bad: str, literal: Any
) -> None:
    with pytest.raises(ConfigError) as err:
        build(cls, _merged(base, _nested(key, bad)))
    choices = ", ".join(sorted(get_args(literal)))
    assert str(err.value) == f"{key}: {bad!r} is not one of {choices}"


@pytest.mark.parametrize(
    ("cls", "base", "key", "bad", "literal"),
    LITERALS,
    ids=[f"{c.__name__}.{k}" for c, _, k, *_ in LITERALS],
)
def test_every_choice_of_a_literal_is_accepted(
    cls: type, base: dict[str, Any], key: str, bad: str, literal: Any
) -> None:
    for choice in get_args(literal):
        value: Any = build(cls, _merged(base, _nested(key, choice)))
        for part in key.split("."):
            value = getattr(value, part)
        assert value == choice


def test_the_schedule_message_reads_as_the_issue_asks() -> None:
    with pytest.raises(ConfigError, match=r"^schedule: 'wiliams' is not one of latin, williams$"):
        load(["+panel=sim", "schedule=wiliams"])


def test_a_literal_does_not_accept_a_value_of_another_type() -> None:
    with pytest.raises(ConfigError, match="is not one of"):
        build(RunConfig, {"schedule": 1})


@pytest.mark.parametrize(
    ("literal", "module_values"),
    [
        (ScheduleName, set(SCHEDULES)),
        (ResponseFormat, set(RESPONSE_FORMS)),
        (ReasoningForm, set(REASONING_FORMS)),
        (PanelKind, set(KINDS)),
        (LocalSource, set(SOURCES)),
        (Representation, SCHEMA_REPRESENTATIONS | PLAIN_REPRESENTATIONS),
        (CarrierRule, set().union(*CARRIER_RULES.values())),
        (PlacementRule, set(PLACEMENTS)),
    ],
    ids=["schedule", "response_format", "reasoning", "kind", "source", "rep", "carrier", "place"],
)
def test_each_literal_agrees_with_the_module_that_acts_on_it(
    literal: Any, module_values: set[str]
) -> None:
    assert set(get_args(literal)) == module_values


# -- ranges -----------------------------------------------------------------------------------

# (key under RunConfig, the edge that is accepted, just outside it, the allowed range as worded)
RANGES = [
    ("repeats", 1, 0, "at least 1"),
    ("execution_group", 0, -1, "at least 0"),
    ("temperature", 0.0, -0.01, "at least 0"),
    ("sim.fault_rate", 0.0, -0.01, "between 0 and 1"),
    ("sim.fault_rate", 1.0, 1.01, "between 0 and 1"),
    ("sim.configs", 1, 0, "at least 1"),
    ("sim.latency_s", 0.0, -0.01, "at least 0"),
    ("budget.usd", 0.0, -0.01, "at least 0"),
    ("budget.requests", 0, -1, "at least 0"),
    ("timeouts.connect_s", 0.001, 0.0, "greater than 0"),
    ("timeouts.request_s", 0.001, 0.0, "greater than 0"),
    ("retry.trajectory_attempts", 1, 0, "at least 1"),
    ("retry.request_attempts", 1, 0, "at least 1"),
    ("retry.initial_wait_s", 0.0, -0.01, "at least 0"),
    ("analysis.bootstrap.resamples", 1, 0, "at least 1"),
    ("ray.endpoints_per_worker", 1, 0, "at least 1"),
]


@pytest.mark.parametrize(
    ("key", "edge", "outside", "allowed"), RANGES, ids=[f"{k}={o}" for k, _, o, _ in RANGES]
)
def test_a_range_accepts_its_edge_and_rejects_just_outside_in_one_line(
    key: str, edge: float, outside: float, allowed: str
) -> None:
    build(RunConfig, _nested(key, edge))
    with pytest.raises(ConfigError) as err:
        build(RunConfig, _nested(key, outside))
    assert str(err.value) == f"{key} must be {allowed}, not {outside!r}"


def test_unset_budgets_are_not_range_checked() -> None:
    cfg = build(RunConfig, {"budget": {"usd": None, "requests": None}})
    assert cfg.budget.usd is None and cfg.budget.requests is None


def test_max_wait_may_equal_but_not_undercut_the_initial_wait() -> None:
    build(RunConfig, {"retry": {"initial_wait_s": 2.0, "max_wait_s": 2.0}})
    with pytest.raises(ConfigError) as err:
        build(RunConfig, {"retry": {"initial_wait_s": 2.0, "max_wait_s": 1.99}})
    assert str(err.value) == "retry.max_wait_s must be at least retry.initial_wait_s (2), not 1.99"


def test_endpoint_concurrency_accepts_one_and_rejects_zero() -> None:
    build(EndpointConfig, {**ENDPOINT, "limits": {"concurrency": 1}})
    with pytest.raises(ConfigError, match=r"^limits\.concurrency must be at least 1, not 0$"):
        build(EndpointConfig, {**ENDPOINT, "limits": {"concurrency": 0}})
    with pytest.raises(ConfigError, match=r"^limits\.concurrency must"):
        Limits(concurrency=0)  # built in code, not only from YAML


def test_ranges_are_checked_through_hydra_overrides_too() -> None:
    with pytest.raises(ConfigError, match=r"^sim\.fault_rate must be between 0 and 1, not 1\.5$"):
        load(["+panel=sim", "sim.fault_rate=1.5"])


# -- bad config opens no socket ---------------------------------------------------------------

BAD_SWEEPS = {
    "schedule": ["+panel=sim", "schedule=wiliams"],
    "repeats": ["+panel=sim", "repeats=0"],
    "fault_rate": ["+panel=sim", "sim.fault_rate=1.5"],
    "response_format": [
        "+panel=endpoint",
        "endpoint.base_url=http://127.0.0.1:9",
        "endpoint.model=m",
        "endpoint.response_format=jsonn",
    ],
    "request_s": ["+panel=sim", "timeouts.request_s=0"],
}


@pytest.mark.parametrize("overrides", BAD_SWEEPS.values(), ids=BAD_SWEEPS.keys())
def test_bad_config_fails_before_any_socket_ray_or_run_directory(
    overrides: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import ray

    from pipeline.commands.start import execute_sweep

    def forbidden(*_args: Any, **_kwargs: Any) -> Any:
        pytest.fail("bad config got as far as the network or Ray")

    monkeypatch.setattr(socket.socket, "connect", forbidden)
    monkeypatch.setattr(socket.socket, "bind", forbidden)
    monkeypatch.setattr(ray, "init", forbidden)
    out_dir = tmp_path / "runs"
    with pytest.raises(UserError):
        execute_sweep([*overrides, f"out_dir={out_dir}", "progress=false"], analyze=False)
    assert not out_dir.exists()


def test_the_cli_exits_2_with_one_line_on_a_misspelt_schedule(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pipeline",
            "sweep",
            "+panel=sim",
            "schedule=wiliams",
            f"out_dir={tmp_path / 'runs'}",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "error: schedule: 'wiliams' is not one of latin, williams"
    ]
    assert not (tmp_path / "runs").exists()
