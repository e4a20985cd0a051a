"""Token usage and cost from a reply's `usage` object, across the cached-token dialects.

Normalised meaning (pipeline.chat.messages.Usage):
    prompt_tokens       every input token, cached or not (None if not reported)
    completion_tokens   output tokens including any reasoning tokens (None if not reported)
    cached_tokens       input tokens read from the provider's prompt cache (part of prompt;
                        None only without a usage object, 0 when usage names no cache read)
    cache_write_tokens  input tokens written to the cache (part of prompt; None if not named)
    reasoning_tokens    completion_tokens_details.reasoning_tokens (part of completion)

Dialects:
    OpenAI / OpenRouter  prompt_tokens, completion_tokens, prompt_tokens_details.cached_tokens
                         (+ prompt_tokens_details.cache_write_tokens on OpenRouter)
    DeepSeek             prompt_cache_hit_tokens / prompt_cache_miss_tokens
    Mistral              usage.num_cached_tokens (one Mistral reply; another of the same
                         host uses prompt_tokens_details.cached_tokens)
    Together (HF router) usage.cached_tokens at the top level
    Anthropic            input_tokens EXCLUDES cache reads and writes, so
                         prompt = input_tokens + cache_read_input_tokens
                                  + cache_creation_input_tokens
    llama-cpp-python     prompt_tokens, completion_tokens only (cached = 0)
    OpenRouter money     `cache_discount` (USD saved by the cache; negative on Anthropic
                         writes), in the body or its usage: `cache_discount_usd`;
                         `usage.cost`, what it charged in USD: `billed_usd` (on a
                         bring-your-own-key route, `usage.is_byok`, OpenRouter's cost is its
                         fee, often 0, and the upstream bills the user's own key
                         `cost_details.upstream_inference_cost`: the two are added)

Overlapping cache counts (data/provider-replies/openrouter/gemini-cache-read-and-write-
overlap.json): OpenRouter routed to Gemini reports 2,161 cached AND 2,161 cache-write tokens
on a 2,168-token prompt. Its `usage.cost` is reproduced exactly only when both are priced in
full and the input price applies to prompt - max(cached, writes) = 7 tokens. So when reads and
writes together exceed the prompt, they are the same tokens (`Usage.overlapping`), and
otherwise disjoint parts of the prompt (Anthropic's replies, which also reproduce exactly).

A field that is absent, null, negative, boolean or not a number counts as not reported: usage is
bookkeeping, and a quirky provider field must not turn a good answer into a fault.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, TypeGuard

from pipeline.chat.messages import ChatResponse, Usage
from pipeline.config.schema import Prices

PER_MILLION = 1_000_000.0
UPPER_BYTES_PER_TOKEN = 3  # an upper estimate: tokenizers average 3.5-4.5 bytes of English


def _is_mapping(value: object) -> TypeGuard[Mapping[str, Any]]:
    """`isinstance(value, Mapping)`, with a JSON object (a dict) answered before the ABC's
    check: a reply's usage is read about ten times per request."""
    return type(value) is dict or isinstance(value, Mapping)


def _counts(mapping: Mapping[str, Any] | None) -> dict[str, int]:
    """Every usable count in `mapping`, read in one pass: a reply's usage has a handful of
    keys, and its dialects are told apart by which of a dozen names it carries."""
    if mapping is None:
        return {}
    found: dict[str, int] = {}
    for key, value in mapping.items():
        if type(value) is int:  # what JSON gives; bool is a subclass, never this type
            if value >= 0:
                found[key] = value
        elif (
            type(value) is not bool
            and isinstance(value, (int, float))
            and math.isfinite(value)
            and value >= 0
        ):
            found[key] = int(value)
    return found


def _first(*values: int | None) -> int | None:
    for value in values:
        if value is not None:
            return value
    return None


def parse_usage(body_usage: Mapping[str, Any] | None) -> Usage:
    """Normalise one `usage` object (any dialect above) into a Usage."""
    if not _is_mapping(body_usage):
        return Usage(cached_tokens=None)
    details = body_usage.get("prompt_tokens_details")
    input_part = _counts(details if _is_mapping(details) else None)
    output_details = body_usage.get("completion_tokens_details")
    output_part = _counts(output_details if _is_mapping(output_details) else None)
    top = _counts(body_usage)

    cache_read = top.get("cache_read_input_tokens")
    cache_creation = top.get("cache_creation_input_tokens")
    cached = _first(
        input_part.get("cached_tokens"),
        top.get("prompt_cache_hit_tokens"),
        cache_read,
        top.get("num_cached_tokens"),
        top.get("cached_tokens"),
    )
    writes = _first(input_part.get("cache_write_tokens"), cache_creation)

    prompt = top.get("prompt_tokens")
    if prompt is None:
        hit, miss = top.get("prompt_cache_hit_tokens"), top.get("prompt_cache_miss_tokens")
        if hit is not None and miss is not None:
            prompt = hit + miss
    if prompt is None:
        anthropic_input = top.get("input_tokens")
        if anthropic_input is not None:
            prompt = anthropic_input + (cache_read or 0) + (cache_creation or 0)

    completion = _first(top.get("completion_tokens"), top.get("output_tokens"))
    return Usage(
        prompt_tokens=prompt,
        completion_tokens=completion,
        cached_tokens=cached or 0,
        cache_write_tokens=writes,
        reasoning_tokens=output_part.get("reasoning_tokens"),
    )


def billed_usd(body: Mapping[str, Any]) -> float | None:
    """What the provider says it charged for the reply (OpenRouter's `usage.cost`, USD); None
    when the reply carries no charge. A charge may arrive as a numeric string."""
    usage = body.get("usage")
    if not isinstance(usage, Mapping):
        return None
    charged = _usd(usage.get("cost"))
    if charged is None or usage.get("is_byok") is not True:
        return charged
    details = usage.get("cost_details")
    if not isinstance(details, Mapping):
        return charged
    return charged + (_usd(details.get("upstream_inference_cost")) or 0.0)


def _usd(value: object) -> float | None:
    """A non-negative finite amount, from a number or a numeric string; else None."""
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) and value >= 0 else None


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
    prompt at the input price: prompt - cached - writes, or, where the counts overlap (see the
    module doc), prompt - max(cached, writes); never below 0. Unreported counts cost nothing
    here: the boundary prices a reply without usage at `upper_usage` first.
    """
    prompt = usage.prompt_tokens or 0
    completion = usage.completion_tokens or 0
    cached = usage.cached_tokens or 0
    writes = usage.cache_write_tokens or 0
    if usage.overlapping:
        uncached = max(0, prompt - max(cached, writes))
    else:
        cached = min(cached, prompt) if prompt else cached
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


def spend_of(response: ChatResponse) -> float:
    """What a paid reply cost the user: the provider's own charge, else the priced estimate
    (docs/engine.md, "Spend"). The one home of that rule: the bill, the budget and the
    probes all read it."""
    return response.billed_usd if response.billed_usd is not None else response.cost_usd


def upper_usage(
    usage: Usage, body_bytes: int, reply_text: str, max_tokens: int, *, hit_limit: bool = False
) -> Usage:
    """The counts a reply did not report, at an upper estimate (docs/engine.md, "Spend").

    Prompt: the request body's UTF-8 bytes as sent / 3, rounded up (the body's JSON keys
    and the template's role markers are inside that margin). Completion: the reply text's
    UTF-8 bytes / 3, rounded up, capped at `max_tokens`; `max_tokens` itself when the reply
    stopped at the limit (`hit_limit`: hidden reasoning may have used the rest). A reported
    count is kept as is.
    """
    prompt = usage.prompt_tokens
    if prompt is None:
        prompt = math.ceil(body_bytes / UPPER_BYTES_PER_TOKEN)
    completion = usage.completion_tokens
    if completion is None:
        completion = min(math.ceil(len(reply_text.encode()) / UPPER_BYTES_PER_TOKEN), max_tokens)
        completion = max_tokens if hit_limit else completion
    return Usage(prompt, completion, usage.cached_tokens or 0, usage.cache_write_tokens)
