"""Issue 18: one validity vocabulary for every study (pipeline.study_validity).

Every label a study writes to `invalid_reason` parses, and its kind alone says `retryable`.
Before: traces wrote `rejected:rejected` for every rejection (it used the error's kind, not
its reason), toolout wrote a non-retryable `infrastructure:` label for an error not known to
be transient, and an unclassified 4xx was `rejected:rejected` everywhere.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from pipeline.chat import errors
from pipeline.chat.errors import EndpointError, InfrastructureFault, RequestRejected
from pipeline.chat.messages import ChatRequest, ChatResponse
from pipeline.commands.start import prepare
from pipeline.endpoints.http_status import status_error
from pipeline.study import UnitContext, UnitSpec, lost_unit
from pipeline.study_validity import (
    Label,
    arm,
    endpoint_failure,
    infrastructure,
    parse,
    rejected,
)

ROOT = Path(__file__).resolve().parents[1]
DEAD = "http://127.0.0.1:9/v1"
# toolout prices its replay by the provider's cache model: its endpoint names a priced one
PRICED = (
    "configs: [{config_id: dead, model: gpt-5, family: openai, provider: openai, "
    f"base_url: '{DEAD}'}}]\n"
)
STUDIES = {
    "carrier": ["+panel=sim", "sim.configs=1", "arms=[j]"],
    "toolout": ["study=toolout", "+panel=endpoint", "endpoint.panel_file={panel_file}"],
    "traces": ["study=traces", "+panel=endpoint", f"endpoint.base_url={DEAD}", "endpoint.model=x"],
}


def _every_error() -> Iterator[EndpointError]:
    """One instance of every class of the endpoint error tree, and HTTP replies mapped to it."""
    yield EndpointError("bare")
    yield InfrastructureFault("bare infrastructure")
    yield errors.TransportFault("refused")
    yield errors.TimeoutFault("read timeout")
    yield errors.MalformedEnvelope("not JSON")
    yield errors.ErrorBodyFault("error in a 200")
    yield errors.InFlightBudgetExhausted("402")
    yield RequestRejected(400, "no reason given")
    yield RequestRejected(0, "not sent", reason="schema_unsupported")
    for status, body in [(429, ""), (503, ""), (400, "bad"), (401, "key"), (418, "teapot")]:
        found = status_error(status, body)
        assert found is not None
        yield found


def test_the_three_kinds_build_and_parse_back() -> None:
    assert parse(infrastructure("timeout")) == Label("infrastructure", "timeout")
    assert parse(rejected("context_too_long")) == Label("rejected", "context_too_long")
    assert parse(arm("catch_up")) == Label("arm", "catch_up")
    assert parse("infrastructure:http_503").retryable
    assert not parse("rejected:auth").retryable and not parse("catch_up").retryable


@pytest.mark.parametrize(
    "label", ["rejected:rejected", "infrastructure:infrastructure", "oops:x", "rejected:", "A b"]
)
def test_a_label_outside_the_vocabulary_is_refused(label: str) -> None:
    with pytest.raises(ValueError, match="not a"):
        parse(label)


@pytest.mark.parametrize("error", list(_every_error()), ids=lambda e: type(e).__name__)
def test_every_endpoint_error_gets_a_label_whose_kind_is_its_retryability(
    error: EndpointError,
) -> None:
    failure = endpoint_failure(error)
    label = parse(failure.invalid_reason)
    assert label.retryable is failure.retryable is isinstance(error, InfrastructureFault)
    assert label.cause not in ("rejected", "infrastructure")


def test_an_unclassified_4xx_is_named_by_its_status() -> None:
    found = status_error(400, "bad request")
    assert isinstance(found, RequestRejected)
    assert endpoint_failure(found).invalid_reason == "rejected:http_400"


class Failing:
    """A ChatClient whose every request raises `error`."""

    def __init__(self, error: EndpointError) -> None:
        self.error = error

    async def complete(self, request: ChatRequest) -> ChatResponse:
        raise self.error


def _spec(arm_name: str) -> UnitSpec:
    return UnitSpec("run", "cfg", "model", "family", arm_name, 0, 0, 0)


@pytest.mark.parametrize("name", sorted(STUDIES))
async def test_every_study_writes_only_vocabulary_labels(name: str, tmp_path: Path) -> None:
    """Each study's runner, driven by a client that fails every way, and its lost unit."""
    panel_file = tmp_path / "panel.yaml"
    panel_file.write_text(PRICED, encoding="utf-8")
    overrides = [o.format(panel_file=panel_file) for o in STUDIES[name]]
    p = prepare([*overrides, f"out_dir={tmp_path}"])
    endpoint = p.resolution.included[0].endpoint
    runner = p.study.runner(endpoint)
    seen = set()
    arms = p.study.arms()
    for arm_name in sorted({arms[0], arms[-1]}):  # traces: a visibility and a summary arm
        for error in _every_error():
            result = await runner.run(_spec(arm_name), Failing(error), UnitContext(1, 0.0))
            outcome = result.outcome
            for records in result.tables.values():  # a rejection recorded as data (traces)
                for record in records:
                    for column in ("error", "decoding_problem"):
                        value = record.get(column)
                        if isinstance(value, str) and ":" in value:
                            assert parse(value).cause != "rejected", (name, column, value)
                            seen.add(parse(value).kind)
            if outcome.valid:
                continue
            assert outcome.invalid_reason is not None
            label = parse(outcome.invalid_reason)
            assert label.retryable is outcome.retryable, (name, arm_name, error)
            seen.add(label.kind)
    spec = _spec(p.study.arms()[0])
    lost = lost_unit(p.definition.row_columns, p.study.lost_row(spec), "worker died").outcome
    assert lost.invalid_reason == "infrastructure:worker_lost" and lost.retryable
    assert "infrastructure" in seen


def test_the_carrier_s_catch_up_is_an_arm_label() -> None:
    from pipeline.carrier.validity import CATCH_UP, ValidityInputs, decide

    assert parse(CATCH_UP) == Label("arm", "catch_up")
    assert decide(ValidityInputs(None, False, True, True)).invalid_reason == CATCH_UP


_HAND_BUILT = re.compile(r"""f?["'](infrastructure|rejected):""")


def test_no_study_builds_a_label_by_hand() -> None:
    """The words come from pipeline.study_validity: a string literal spelling a prefix in a
    study package would be a second, unchecked copy of the vocabulary."""
    offenders = []
    for package in ("carrier", "toolout", "traces", "studies"):
        for path in sorted((ROOT / "pipeline" / package).rglob("*.py")):
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if _HAND_BUILT.search(line):
                    offenders.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert offenders == []


def test_docs_tables_lists_invalid_reasons_in_the_vocabulary() -> None:
    """Every `invalid_reason` row of docs/tables.md names labels of the vocabulary only."""
    text = (ROOT / "docs" / "tables.md").read_text(encoding="utf-8")
    rows = [
        line
        for line in text.splitlines()
        if line.startswith("|") and "invalid_reason" in line.split("|")[1]
    ]
    assert len(rows) >= 3  # carrier, toolout and traces rows tables
    for line in rows:
        for token in re.findall(r"`([^`]+)`", line):
            if token.startswith(("infrastructure", "rejected")) or token == "catch_up":
                parse(token.replace("<cause>", "cause").replace("<reason>", "reason"))
