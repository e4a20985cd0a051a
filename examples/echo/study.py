"""The echo study's protocol: what a unit sends, what it records, and its simulated model.

Pure, like every study's protocol: the engine hands each unit its ChatClient (the only
network), bills every request at the boundary and stores what the unit returns.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pipeline.chat.errors import EndpointError
from pipeline.chat.messages import ChatClient, ChatMessage, ChatRequest
from pipeline.config.schema import EndpointConfig
from pipeline.simulated import SimBehaviour, SimReply
from pipeline.study import (
    Column,
    ProbePlan,
    ProgressLabels,
    StudyDefaults,
    StudyInputs,
    TableSpec,
    UnitContext,
    UnitOutcome,
    UnitResult,
    UnitSpec,
)
from pipeline.study_validity import endpoint_failure

ECHOES = TableSpec("echoes", (Column("sent", "string"), Column("echoed", "string")))
ROW_COLUMNS = (Column("echo_matches", "bool"),)
PREFIX = "echo: "
PURPOSE = "echo"


@dataclass(frozen=True)
class EchoSim:
    """The simulated model of `+panel=sim`: answers with the last user message."""

    config_id: str
    served_model: str

    def reply(
        self, request_body: Mapping[str, Any], seed: int, *, model_fault_rate: float = 0.0
    ) -> SimReply:
        text = str(request_body["messages"][-1]["content"])
        return SimReply(text, "stop", len(text) // 4 + 1, len(text) // 4 + 1, "other")


class EchoRunner:
    """One request per unit; the unit is valid when the endpoint answered at all."""

    steps_per_unit = 1
    step_purpose = PURPOSE
    requests_per_unit = 1

    async def run(self, spec: UnitSpec, client: ChatClient, context: UnitContext) -> UnitResult:
        sent = f"{PREFIX}{spec.row_id}"
        request = ChatRequest(
            (ChatMessage("user", sent),), max_tokens=64, seed=context.seed, purpose=PURPOSE
        )
        try:
            response = await client.complete(request)
        except EndpointError as exc:  # the shared validity vocabulary names it
            failure = endpoint_failure(exc)
            outcome = UnitOutcome(
                False, failure.invalid_reason, failure.retryable, error_detail=failure.detail
            )
            return UnitResult(outcome, {"echo_matches": None})
        row = {"echo_matches": response.text == sent}
        return UnitResult(
            UnitOutcome(valid=True), row, {"echoes": [{"sent": sent, "echoed": response.text}]}
        )


@dataclass(frozen=True)
class EchoStudy(StudyDefaults):
    """The configured echo study: a frozen value, pickled to the Ray actors.

    `StudyDefaults`: one execution group, a lost attempt's row all null, any panel."""

    arm_names: tuple[str, ...]
    order_matters = False  # a unit's echo does not depend on the units before it

    @property
    def progress_labels(self) -> ProgressLabels:
        return ProgressLabels(unit="echo units", step="echoes")

    @property
    def inputs(self) -> StudyInputs:
        return StudyInputs(label="echo")

    def arms(self) -> Sequence[str]:
        return self.arm_names

    def probe_plan(self) -> ProbePlan:
        return ProbePlan({arm: frozenset({"plain"}) for arm in self.arm_names}, 256)

    def runner(self, endpoint: EndpointConfig) -> EchoRunner:
        return EchoRunner()

    def sim_models(self, endpoints: Sequence[tuple[str, str]], seed: int) -> list[SimBehaviour]:
        return [EchoSim(config_id, model) for config_id, model in endpoints]
