"""A toy second study, only in the tests: each unit sends one request and records the echo.

It exists to prove the study seam: it runs through `pipeline sweep` with its own row column and
its own table (`echoes`), and nothing under pipeline/sweep or pipeline/store names it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.chat.errors import EndpointError
from pipeline.chat.messages import ChatClient, ChatMessage, ChatRequest
from pipeline.config.schema import EndpointConfig
from pipeline.config.strict import ConfigError
from pipeline.simulated import SimBehaviour, SimReply
from pipeline.study import (
    Column,
    OneGroup,
    ProbePlan,
    ProgressLabels,
    StudyInputs,
    TableSpec,
    UnitContext,
    UnitOutcome,
    UnitResult,
    UnitSpec,
)
from pipeline.study_validity import endpoint_failure, infrastructure

ECHOES = TableSpec("echoes", (Column("sent", "string"), Column("echoed", "string")))
ROW_COLUMNS = (Column("echo_matches", "bool"),)
PREFIX = "echo: "


@dataclass(frozen=True)
class EchoSim:
    """The simulated model: answers with the last user message."""

    config_id: str
    served_model: str

    def reply(
        self, request_body: Mapping[str, Any], seed: int, *, model_fault_rate: float = 0.0
    ) -> SimReply:
        text = str(request_body["messages"][-1]["content"])
        return SimReply(text, "stop", len(text) // 4 + 1, len(text) // 4 + 1, "other")


class EchoRunner:
    steps_per_unit = 1
    step_purpose = "echo"
    requests_per_unit = 1

    async def run(self, spec: UnitSpec, client: ChatClient, context: UnitContext) -> UnitResult:
        sent = f"{PREFIX}{spec.row_id}"
        request = ChatRequest(
            (ChatMessage("user", sent),), max_tokens=64, seed=context.seed, purpose="echo"
        )
        try:
            response = await client.complete(request)
        except EndpointError as exc:  # the shared vocabulary names it
            failure = endpoint_failure(exc)
            outcome = UnitOutcome(
                False, failure.invalid_reason, failure.retryable, error_detail=failure.detail
            )
            return UnitResult(outcome, {"echo_matches": None})
        outcome = UnitOutcome(valid=True)  # the engine bills the request itself
        row = {"echo_matches": response.text == sent}
        return UnitResult(outcome, row, {"echoes": [{"sent": sent, "echoed": response.text}]})


@dataclass(frozen=True)
class EchoStudy(OneGroup):
    arm_names: tuple[str, ...]

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

    panel_kinds = None
    order_matters = True

    def runner(self, endpoint: EndpointConfig) -> EchoRunner:
        return EchoRunner()

    def lost_unit(self, spec: UnitSpec, detail: str) -> UnitResult:
        outcome = UnitOutcome(False, infrastructure("worker_lost"), True, error_detail=detail)
        return UnitResult(outcome, {"echo_matches": None})

    def sim_models(self, endpoints: Sequence[tuple[str, str]], seed: int) -> list[SimBehaviour]:
        return [EchoSim(config_id, model) for config_id, model in endpoints]


@dataclass(frozen=True)
class EchoDefinition:
    name: str = "echo"
    row_columns: tuple[Column, ...] = ROW_COLUMNS
    tables: tuple[TableSpec, ...] = (ECHOES,)
    default_panel: str | None = None
    uses_contrasts: bool = False

    def configure(self, node: Mapping[str, Any]) -> EchoStudy:
        unknown = sorted(set(node) - {"name", "arms"})
        if unknown:
            raise ConfigError(f"unknown config key study.{unknown[0]}; valid: arms, name")
        return EchoStudy(tuple(node.get("arms", ("a", "b"))))

    def analyze(self, run_dir: Path, analysis: Any) -> Path:
        from pipeline.store.layout import layout_for
        from pipeline.store.reader import read_table

        layout = layout_for(self.row_columns, self.tables)  # its own, not the registry's
        rows = read_table(run_dir, "rows", layout)
        echoes = read_table(run_dir, "echoes", layout)
        out = run_dir / "analysis" / "report.md"
        out.parent.mkdir(exist_ok=True)
        summary = {"rows": rows.num_rows, "echoes": echoes.num_rows}
        out.write_text(f"# echo study\n\n{json.dumps(summary)}\n", encoding="utf-8")
        return out

    def report(self, run_dir: Path) -> Path:
        out = run_dir / "analysis" / "report.md"
        return out if out.is_file() else self.analyze(run_dir, None)
