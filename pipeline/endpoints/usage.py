"""Token usage and cost from a reply's `usage` object, across the cached-token dialects.

Normalised meaning (pipeline.chat.messages.Usage):
    prompt_tokens       every input token, cached or not (None if not reported)
    completion_tokens   output tokens including any reasoning tokens (None if not reported)
    cached_tokens       input tokens read from the provider's prompt cache (part of prompt)
    cache_write_tokens  input tokens written to the cache (part of prompt)

Dialects:
    OpenAI / OpenRouter  prompt_tokens, completion_tokens, prompt_tokens_details.cached_tokens
                         (+ prompt_tokens_details.cache_write_tokens on OpenRouter)
    DeepSeek             prompt_cache_hit_tokens / prompt_cache_miss_tokens
    Anthropic            input_tokens EXCLUDES cache reads and writes, so
                         prompt = input_tokens + cache_read_input_tokens
                                  + cache_creation_input_tokens
    llama-cpp-python     prompt_tokens, completion_tokens only (cached = 0)
    OpenRouter money     `cache_discount` (USD saved by the cache; negative on Anthropic
                         writes), in the body or its usage: `cache_discount_usd`

A field that is absent, null, negative, boolean or not a number counts as not reported: usage is
bookkeeping, and a quirky provider field must not turn a good answer into a fault.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from pipeline.chat.messages import Usage
from pipeline.config.schema import Prices

PER_MILLION = 1_000_000.0


def _count(mapping: Mapping[str, Any] | None, key: str) -> int | None:
    if not isinstance(mapping, Mapping):
        return None
    value = mapping.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if not math.isfinite(value) or value < 0:
        return None
    return int(value)


def _first(*values: int | None) -> int | None:
    return next((v for v in values if v is not None), None)


def parse_usage(body_usage: Mapping[str, Any] | None) -> Usage:
    """Normalise one `usage` object (any dialect above) into a Usage."""
    if not isinstance(body_usage, Mapping):
        return Usage()
    details = body_usage.get("prompt_tokens_details")
    details = details if isinstance(details, Mapping) else None

    cache_read = _count(body_usage, "cache_read_input_tokens")
    cache_creation = _count(body_usage, "cache_creation_input_tokens")
    cached = _first(
        _count(details, "cached_tokens"),
        _count(body_usage, "prompt_cache_hit_tokens"),
        cache_read,
    )
    writes = _first(_count(details, "cache_write_tokens"), cache_creation)

    prompt = _count(body_usage, "prompt_tokens")
    if prompt is None:
        hit, miss = (
            _count(body_usage, "prompt_cache_hit_tokens"),
            _count(body_usage, "prompt_cache_miss_tokens"),
        )
        if hit is not None and miss is not None:
            prompt = hit + miss
    if prompt is None:
        anthropic_input = _count(body_usage, "input_tokens")
        if anthropic_input is not None:
            prompt = anthropic_input + (cache_read or 0) + (cache_creation or 0)

    completion = _first(
        _count(body_usage, "completion_tokens"), _count(body_usage, "output_tokens")
    )
    return Usage(
        prompt_tokens=prompt,
        completion_tokens=completion,
        cached_tokens=cached or 0,
        cache_write_tokens=writes or 0,
    )


def cache_discount_usd(body: Mapping[str, Any]) -> float | None:
    """OpenRouter's `cache_discount` in USD (top level or in `usage`); None if not reported."""
    usage = body.get("usage")
    for where in (body, usage if isinstance(usage, Mapping) else {}):
        value = where.get("cache_discount")
        if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
            return float(value)
    return None


def cost_usd(usage: Usage, prices: Prices) -> float:
    """USD for one reply at the pinned configuration's prices.

    Cached reads are billed at `cached_input_per_mtok` and cache writes at
    `cache_write_per_mtok` (each falling back to the input price when not set); the rest of the
    prompt, prompt - cached - writes (never below 0), at the input price. Unreported counts cost
    nothing: the row's token columns show they were not reported.
    """
    prompt = usage.prompt_tokens or 0
    completion = usage.completion_tokens or 0
    cached = min(usage.cached_tokens, prompt) if prompt else usage.cached_tokens
    writes = usage.cache_write_tokens
    uncached = max(0, prompt - cached - writes)
    cached_price = (
        prices.cached_input_per_mtok
        if prices.cached_input_per_mtok is not None
        else prices.input_per_mtok
    )
    write_price = (
        prices.cache_write_per_mtok
        if prices.cache_write_per_mtok is not None
        else prices.input_per_mtok
    )
    total = (
        uncached * prices.input_per_mtok
        + cached * cached_price
        + writes * write_price
        + completion * prices.output_per_mtok
    )
    return total / PER_MILLION
