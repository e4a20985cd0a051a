"""Usage parsing per dialect and cost at the pinned prices."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import pytest

from pipeline.chat.messages import Usage
from pipeline.config.schema import Prices
from pipeline.endpoints.usage import cache_discount_usd, cost_usd, parse_usage


@pytest.mark.parametrize(
    ("dialect", "body", "expected"),
    [
        (
            "llama-cpp-python",
            {"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150},
            Usage(120, 30, 0, None),
        ),
        (
            "openai cached",
            {
                "prompt_tokens": 2000,
                "completion_tokens": 50,
                "prompt_tokens_details": {"cached_tokens": 1536},
            },
            Usage(2000, 50, 1536, None),
        ),
        (
            "openrouter cache write",
            {
                "prompt_tokens": 3000,
                "completion_tokens": 10,
                "prompt_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 2500},
            },
            Usage(3000, 10, 0, 2500),
        ),
        (
            "openai reasoning",
            {
                "prompt_tokens": 30,
                "completion_tokens": 400,
                "completion_tokens_details": {"reasoning_tokens": 384},
            },
            Usage(30, 400, 0, None, 384),
        ),
        (
            "deepseek",
            {
                "prompt_tokens": 900,
                "completion_tokens": 40,
                "prompt_cache_hit_tokens": 640,
                "prompt_cache_miss_tokens": 260,
            },
            Usage(900, 40, 640, None),
        ),
        (
            "deepseek without prompt_tokens",
            {
                "completion_tokens": 40,
                "prompt_cache_hit_tokens": 640,
                "prompt_cache_miss_tokens": 260,
            },
            Usage(900, 40, 640, None),
        ),
        (
            "anthropic (input excludes cache)",
            {
                "input_tokens": 100,
                "output_tokens": 20,
                "cache_read_input_tokens": 800,
                "cache_creation_input_tokens": 300,
            },
            Usage(1200, 20, 800, 300),
        ),
        (
            "openai-compatible proxy with anthropic cache fields",
            {
                "prompt_tokens": 1200,
                "completion_tokens": 20,
                "cache_read_input_tokens": 800,
                "cache_creation_input_tokens": 300,
            },
            Usage(1200, 20, 800, 300),
        ),
        ("absent", None, Usage(cached_tokens=None)),
        ("empty", {}, Usage()),
        (
            "garbage values",
            {
                "prompt_tokens": "12",
                "completion_tokens": True,
                "prompt_tokens_details": {"cached_tokens": -3},
            },
            Usage(),
        ),
        ("float counts", {"prompt_tokens": 12.0, "completion_tokens": 3.0}, Usage(12, 3, 0, None)),
        (
            "non-finite and negative counts",
            {"prompt_tokens": float("nan"), "completion_tokens": float("inf"), "cached_tokens": -1},
            Usage(),
        ),
        (
            "read-only mappings",
            MappingProxyType(
                {
                    "prompt_tokens": 7,
                    "completion_tokens": 2,
                    "prompt_tokens_details": MappingProxyType({"cached_tokens": 4}),
                }
            ),
            Usage(7, 2, 4, None),
        ),
        (
            "null details",
            {"prompt_tokens": 5, "completion_tokens": 1, "prompt_tokens_details": None},
            Usage(5, 1, 0, None),
        ),
    ],
)
def test_parse_usage_normalises_each_dialect(
    dialect: str, body: Mapping[str, Any] | None, expected: Usage
) -> None:
    assert parse_usage(body) == expected, dialect


PRICES = Prices(
    input_per_mtok=1.0, output_per_mtok=4.0, cached_input_per_mtok=0.1, cache_write_per_mtok=1.25
)


@pytest.mark.parametrize(
    ("usage", "prices", "expected"),
    [
        (Usage(1_000_000, 0), PRICES, 1.0),
        (Usage(0, 1_000_000), PRICES, 4.0),
        (Usage(1_000_000, 0, cached_tokens=400_000), PRICES, 0.6 + 0.04),
        (Usage(1_000_000, 0, cache_write_tokens=200_000), PRICES, 0.8 + 0.25),
        (Usage(1_000_000, 500_000, 300_000, 100_000), PRICES, 0.6 + 0.03 + 0.125 + 2.0),
        (Usage(1_000_000, 0, cached_tokens=400_000), Prices(1.0, 4.0), 1.0),
        (Usage(None, None), PRICES, 0.0),
        (Usage(1000, 10), Prices(), 0.0),
    ],
)
def test_cost_bills_uncached_cached_and_written_input_separately(
    usage: Usage, prices: Prices, expected: float
) -> None:
    assert cost_usd(usage, prices) == pytest.approx(expected)


def test_cached_tokens_above_prompt_never_make_cost_negative() -> None:
    assert cost_usd(Usage(100, 0, cached_tokens=500), PRICES) >= 0.0


def test_simulator_fingerprint_marks_a_reply_simulated() -> None:
    from pipeline.config import Prices
    from pipeline.endpoints.wire import SIMULATOR_FINGERPRINT, parse_reply

    body = (
        '{"choices": [{"message": {"content": "x"}, "finish_reason": "stop"}], '
        f'"system_fingerprint": "{SIMULATOR_FINGERPRINT}"}}'
    )
    assert parse_reply(body, Prices()).simulated
    assert not parse_reply(body.replace(SIMULATOR_FINGERPRINT, "fp_abc"), Prices()).simulated


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({"cache_discount": 0.0123}, 0.0123),
        ({"usage": {"prompt_tokens": 3, "cache_discount": -0.002}}, -0.002),
        ({"usage": {"prompt_tokens": 3}}, None),
        ({"cache_discount": "0.1"}, None),
        ({"cache_discount": True}, None),
    ],
)
def test_openrouter_cache_discount_is_read_from_the_body_or_its_usage(
    body: dict[str, Any], expected: float | None
) -> None:
    assert cache_discount_usd(body) == expected
