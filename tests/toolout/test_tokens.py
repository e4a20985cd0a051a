"""The byte estimator, the Tokenizer seam and the estimator's error."""

from __future__ import annotations

import pytest

from pipeline.toolout.tokens import (
    DEFAULT_TOKENIZER,
    ESTIMATOR_ID,
    ByteEstimator,
    Tokenizer,
    estimate_tokens,
    estimator_error,
)


class WhitespaceTokenizer:
    """A test double for a real tokenizer: one token per whitespace-separated word."""

    id = "test:whitespace"

    def count(self, text: str) -> int:
        return len(text.split())


def test_estimate_is_utf8_bytes_over_four_rounded_up() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("a") == 1
    assert estimate_tokens("abcd") == 1
    assert estimate_tokens("abcde") == 2
    assert estimate_tokens("x" * 4000) == 1000


def test_estimate_counts_bytes_not_characters() -> None:
    assert estimate_tokens("é") == 1  # 2 bytes
    assert estimate_tokens("日本語") == 3  # 9 bytes -> ceil(9/4)
    assert estimate_tokens("🙂🙂") == 2  # 8 bytes


def test_default_tokenizer_is_the_byte_estimator_under_its_id() -> None:
    assert ESTIMATOR_ID == "bytes-q4-v1"
    assert DEFAULT_TOKENIZER.id == ESTIMATOR_ID
    assert DEFAULT_TOKENIZER.count("abcdefghi") == estimate_tokens("abcdefghi") == 3
    assert isinstance(ByteEstimator(), Tokenizer)


def test_a_real_tokenizer_plugs_in_through_the_protocol() -> None:
    real = WhitespaceTokenizer()
    assert isinstance(real, Tokenizer)
    text = "grep -rn needle src/ | head"
    error = estimator_error(DEFAULT_TOKENIZER.count(text), real.count(text))
    assert (error.estimated, error.reported) == (7, 6)
    assert error.absolute == 1
    assert error.relative == pytest.approx(1 / 6)


def test_estimator_error_is_signed_and_relative_to_the_real_count() -> None:
    under = estimator_error(80, 100)
    assert (under.absolute, under.relative) == (-20, -0.2)
    over = estimator_error(125, 100)
    assert (over.absolute, over.relative) == (25, 0.25)


def test_estimator_error_against_zero_has_no_relative_error() -> None:
    assert estimator_error(3, 0).relative is None
    assert estimator_error(0, 0).absolute == 0


def test_negative_counts_are_a_bug() -> None:
    with pytest.raises(ValueError, match=">= 0"):
        estimator_error(-1, 5)
