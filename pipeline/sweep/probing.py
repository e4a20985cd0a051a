"""Which request shapes each arm needs, and probing them through an endpoint's own worker.

The study says which shapes its arms send (`Study.probe_plan`); the endpoint adds its own:
enough context for the largest prompt, and reasoning off where the endpoint controls it.

Probes run inside the EndpointWorker so they share its session, limiter and retry policy:
a probe is real traffic and counts against the endpoint's limits like any other request.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import asdict
from typing import Any

from pipeline.config.schema import EndpointConfig
from pipeline.endpoints.probe import (
    DEFAULT_SAMPLES,
    SAMPLE_RULE,
    ProbeVerdict,
    probe,
    servable_arms,
)
from pipeline.study import ProbePlan
from pipeline.sweep.worker import EndpointWorkerCore


def arm_needs(plan: ProbePlan, endpoint: EndpointConfig) -> dict[str, frozenset[str]]:
    """Shapes per arm: the study's, reasoning off where supported, enough context."""
    extra = {"context_length"}
    if endpoint.reasoning != "none":
        extra.add("reasoning_disabled")
    return {name: frozenset({*shapes, *extra}) for name, shapes in plan.shapes.items()}


def shapes_needed(needs: Mapping[str, frozenset[str]]) -> list[str]:
    order = ["plain", "schema", "reasoning_disabled", "context_length"]
    wanted = set().union(*needs.values()) if needs else set()
    return [s for s in order if s in wanted]


async def probe_worker(
    core: EndpointWorkerCore,
    shapes: Sequence[str],
    context_needed: int,
    samples: int = DEFAULT_SAMPLES,
) -> list[dict[str, Any]]:
    capped = await core.ensure_client()
    # The raw HTTP client also reads /models (context length); scripted clients lack it.
    client = core.http_client if core.http_client is not None else capped

    @asynccontextmanager
    async def borrowed(_: EndpointConfig) -> AsyncIterator[Any]:
        yield client

    verdicts = await probe(
        borrowed,
        core.settings.endpoint,
        shapes,
        context_tokens_needed=context_needed,
        samples=samples,
    )
    return [asdict(v) for v in verdicts]


def not_run_from_verdicts(
    verdicts: Sequence[Mapping[str, Any]], needs: Mapping[str, frozenset[str]]
) -> dict[str, str]:
    """arm -> not-run reason for the arms this configuration cannot serve."""
    typed = [ProbeVerdict.from_record(v) for v in verdicts]
    return {arm: reason for arm, reason in servable_arms(typed, needs).items() if reason}


def probe_rule(samples: int) -> dict[str, Any]:
    """The rule the run's verdicts were reached by (manifest extra.probe_rule)."""
    return {"samples": samples, "rule": SAMPLE_RULE}
