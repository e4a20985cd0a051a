"""The carrier study's unit runner: one fold-and-recall trajectory per unit.

Built once per EndpointWorker (`CarrierStudy.runner`): the fixture is parsed and its chunks are
rendered once there, since every trajectory of the worker folds the same chunks.
"""

from __future__ import annotations

from typing import Any

from pipeline.carrier.arms import Arm, build_arms
from pipeline.carrier.config import ArmConfig
from pipeline.carrier.fixture import Fixture, fixture_from_json
from pipeline.carrier.fixture_model import render_chunk, render_message
from pipeline.carrier.records import RowContext, trajectory_records
from pipeline.carrier.trajectory import TrajectoryInputs, run_trajectory
from pipeline.chat.messages import ChatClient
from pipeline.study import UnitContext, UnitResult, UnitSpec


def chunk_messages(chunk: Any) -> list[tuple[str, str]]:
    """(role, rendered text) per message: tool-call arguments are part of what a runtime sees."""
    return [(m.role, render_message(m)) for m in chunk.messages]


def row_context(arm: Arm, scenario: str, fixture_sha256: str) -> RowContext:
    return RowContext(
        scenario=scenario,
        fixture_sha256=fixture_sha256,
        system_prompt_sha256=arm.system_prompt_sha256,
        declared_capacity_chars=arm.declared_capacity_chars,
    )


class CarrierRunner:
    """Runs trajectories of the configured arms over one fixture."""

    step_purpose = "fold"

    def __init__(
        self,
        arms: dict[str, ArmConfig],
        fixture_json: bytes,
        fixture_sha256: str,
        scenario: str,
    ) -> None:
        self.fixture: Fixture = fixture_from_json(fixture_json)
        self.arms: dict[str, Arm] = build_arms(arms)
        self.fixture_sha256 = fixture_sha256
        self.scenario = scenario
        self._rendered = {c.index: render_chunk(c) for c in self.fixture.chunks}
        self._messages = {c.index: chunk_messages(c) for c in self.fixture.chunks}

    @property
    def steps_per_unit(self) -> int:
        """One fold request per chunk."""
        return len(self.fixture.chunks)

    @property
    def requests_per_unit(self) -> int:
        """The folds and the recall request."""
        return len(self.fixture.chunks) + 1

    async def run(self, spec: UnitSpec, client: ChatClient, context: UnitContext) -> UnitResult:
        arm = self.arms[spec.arm]
        inputs = TrajectoryInputs(
            arm=arm,
            chunks=self.fixture.chunks,
            render_chunk=lambda chunk: self._rendered[chunk.index],
            chunk_messages=lambda chunk: self._messages[chunk.index],
            graded=self.fixture.graded,
            temperature=context.temperature,
            seed=context.seed,
        )
        result = await run_trajectory(client, inputs)
        return trajectory_records(row_context(arm, self.scenario, self.fixture_sha256), result)
