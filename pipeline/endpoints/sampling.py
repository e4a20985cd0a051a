"""Sampling values against the ranges an endpoint accepts: refused before the first request.

Why (issue 19): `temperature=5` was accepted and the sweep ran, although OpenAI's API takes
0-2 and other providers less; a provider then answers every request with a 400 (or clamps it
silently). Each endpoint declares `temperature_range` (default [0, 2]) and `top_p_range`
(default [0, 1]); `max_tokens` must be at least 1. `check_sampling` is called for the run's
values in `prepare` (one line naming the endpoint and the range), and `check_request` by
`wire.build_body` for every request a study builds, so a study cannot send what the endpoint
refuses (that is a bug in the study, so it raises, not a user error).
"""

from __future__ import annotations

from pipeline.chat import ChatRequest
from pipeline.config import ConfigError, EndpointConfig


def _outside(value: float, bounds: tuple[float, ...]) -> bool:
    return not bounds[0] <= value <= bounds[1]


def sampling_problem(
    endpoint: EndpointConfig,
    *,
    temperature: float | None = None,
    top_p: float | None = None,
    max_tokens: int | None = None,
) -> str | None:
    """What is out of range for `endpoint`, in words, or None."""
    for name, value, bounds in (
        ("temperature", temperature, endpoint.temperature_range),
        ("top_p", top_p, endpoint.top_p_range),
    ):
        if value is not None and _outside(value, bounds):
            return (
                f"{name}={value:g} is outside [{bounds[0]:g}, {bounds[1]:g}], the range "
                f"{endpoint.config_id} accepts ({name}_range in its panel entry)"
            )
    if max_tokens is not None and max_tokens < 1:
        return f"max_tokens={max_tokens} for {endpoint.config_id}: it must be at least 1"
    return None


def check_sampling(
    endpoint: EndpointConfig, *, temperature: float | None = None, top_p: float | None = None
) -> None:
    """Raise a one-line ConfigError if the run's sampling values are outside the endpoint's."""
    problem = sampling_problem(endpoint, temperature=temperature, top_p=top_p)
    if problem is not None:
        raise ConfigError(problem)


class SamplingOutOfRange(ValueError):
    """A study built a request the endpoint does not accept (a bug: config was checked)."""


def check_request(endpoint: EndpointConfig, request: ChatRequest) -> None:
    problem = sampling_problem(
        endpoint,
        temperature=request.temperature,
        top_p=request.top_p,
        max_tokens=request.max_tokens,
    )
    if problem is not None:
        raise SamplingOutOfRange(f"{request.purpose} request: {problem}")
