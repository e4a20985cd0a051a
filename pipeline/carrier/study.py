"""The carrier study (seed 001) as the engine sees it: a configured, picklable Study value.

It owns the fixture (generated from the scenario and seed, byte-identical for the same inputs,
stored as RUN_DIR/fixture.json), the arms, what each endpoint must serve (plain or schema
requests, and the largest fold prompt), a lost attempt's row and the simulated pseudo-model.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pipeline.carrier.arms import Arm, build_arms
from pipeline.carrier.config import CarrierConfig, carrier_config
from pipeline.carrier.fixture import Fixture, fixture_from_json, fixture_json, generate
from pipeline.carrier.fixture_model import chunk_tokens
from pipeline.carrier.records import lost_row
from pipeline.carrier.runner import CarrierRunner, row_context
from pipeline.carrier.sim_model import carrier_sim_models
from pipeline.config.schema import EndpointConfig
from pipeline.simulated import SimBehaviour
from pipeline.study import OneGroup, ProbePlan, ProgressLabels, Record, StudyInputs, UnitSpec

FIXTURE_FILE = "fixture.json"
CONTEXT_SLACK_TOKENS = 1024  # system prompt, schema text and message framing


def context_tokens_needed(fixture: Fixture, arms: Mapping[str, Arm]) -> int:
    """The largest fold prompt any arm can send, plus its reply."""
    biggest_chunk = max(chunk_tokens(c) for c in fixture.chunks)
    worst = max(a.carry_cap_tokens + 1200 + a.output_tokens for a in arms.values())
    return biggest_chunk + worst + CONTEXT_SLACK_TOKENS


@dataclass(frozen=True)
class CarrierStudy(OneGroup):
    """The configured carrier study: its config and the fixture bytes every unit folds."""

    config: CarrierConfig
    fixture_bytes: bytes
    fixture_sha256: str

    progress_labels = ProgressLabels(unit="trajectories", step="folds")

    @classmethod
    def from_node(cls, node: Mapping[str, Any]) -> CarrierStudy:
        """Convert the `study` node and generate the fixture (bad input: one ConfigError line)."""
        config = carrier_config(node)
        build_arms(config.arms)  # an arm that cannot be built fails here, before anything starts
        data = fixture_json(generate(config.scenario, config.fixture_seed))
        return cls(config, data, hashlib.sha256(data).hexdigest())

    @property
    def fixture(self) -> Fixture:
        return fixture_from_json(self.fixture_bytes)

    @property
    def inputs(self) -> StudyInputs:
        return StudyInputs(
            label=self.config.scenario.name,
            digest=self.fixture_sha256,
            files={FIXTURE_FILE: self.fixture_bytes},
        )

    def arms(self) -> Sequence[str]:
        return sorted(self.config.arms)

    def probe_plan(self) -> ProbePlan:
        arms = build_arms(self.config.arms)
        shapes = {
            name: frozenset({"schema" if arm.schema is not None else "plain"})
            for name, arm in arms.items()
        }
        return ProbePlan(shapes, context_tokens_needed(self.fixture, arms))

    panel_kinds = None  # any
    order_matters = True  # first-order carryover between arms is why the schedule exists

    def runner(self, endpoint: EndpointConfig) -> CarrierRunner:
        return CarrierRunner(
            dict(self.config.arms), self.fixture_bytes, self.fixture_sha256, self.inputs.label
        )

    def lost_row(self, spec: UnitSpec) -> Record:
        arm = build_arms({spec.arm: self.config.arms[spec.arm]})[spec.arm]
        return lost_row(row_context(arm, self.config.scenario.name, self.fixture_sha256), spec.arm)

    def sim_models(self, endpoints: Sequence[tuple[str, str]], seed: int) -> list[SimBehaviour]:
        return list(carrier_sim_models(endpoints, tuple(self.fixture.planted), seed))
