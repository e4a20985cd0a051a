"""The seam between a study's simulated model and the engine's simulated endpoint server.

Decision: the study owns model behaviour (what a simulated model answers to a request of that
study's protocol); the engine owns everything else a served model is (HTTP, the model id
check, latency, rate limits, injected infrastructure faults, counters). The engine's sim
server (`pipeline.endpoints.sim.SimServer`) therefore knows only `SimBehaviour` and
`SimReply`, and a study plugs its pseudo-model in without the engine importing the study.

Pure and a leaf: stdlib only, no project import, so both sides may depend on it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

__all__ = ["SimBehaviour", "SimReply"]


@dataclass(frozen=True)
class SimReply:
    """The pseudo-model's answer; text None means `content: null` on the wire."""

    text: str | None
    finish_reason: str
    prompt_tokens: int
    completion_tokens: int
    kind: str  # fold | recall | other
    refusal: str | None = None
    model_fault: str | None = None  # empty | refusal | nonconforming_json | length_stop
    representation: str = ""  # plain | headings | single_field | five_fields | other


class SimBehaviour(Protocol):
    """What a study's simulated model gives the engine's sim server: one served configuration.

    Implementations are frozen, picklable values: `SimServerProcess` ships them to a child
    process. `reply` must be deterministic in (request body, seed) and do no I/O; the server
    adds latency, limits and infrastructure faults around it. Model-behaviour faults (empty
    reply, refusal, bad JSON) are the behaviour's, drawn at `model_fault_rate`.
    """

    @property
    def config_id(self) -> str:
        """The configuration this behaviour simulates (it seeds the behaviour's draws)."""
        ...

    @property
    def served_model(self) -> str:
        """The model id the server answers to; a request naming another gets 404."""
        ...

    def reply(
        self, request_body: Mapping[str, Any], seed: int, *, model_fault_rate: float = 0.0
    ) -> SimReply:
        """The reply to one chat-completions request body."""
        ...
