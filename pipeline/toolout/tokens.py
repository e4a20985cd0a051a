"""Token counts for the replay: a byte estimator by default, a real tokenizer where one is given.

Why bytes: the study compares policies and cache models on the same transcripts, so the count
must be deterministic, offline and the same on every machine; a tokenizer library would add a
dependency and a per-model choice the seed never made (it reported bytes removed, and token
savings only as the provider reported them). The default is `estimate_tokens(text) =
ceil(utf8_bytes / 4)`, estimator id `bytes-q4-v1`: about four bytes per token for English and
code, which over-counts tokens in CJK text and under-counts in dense JSON. It is an estimate;
where a corpus or a live replay has a provider's count, `estimator_error` reports how far off
it was, so every table that rests on it can say by how much.

A real tokenizer plugs in through the `Tokenizer` protocol (no dependency is added; tests use
a double). Changing the estimator changes every estimated count, so it needs a new id.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

ESTIMATOR_ID = "bytes-q4-v1"  # recorded with every estimated count; bump with any change
BYTES_PER_TOKEN = 4


def estimate_tokens(text: str) -> int:
    """ceil(UTF-8 bytes / 4): 0 only for the empty string."""
    return -(-len(text.encode("utf-8")) // BYTES_PER_TOKEN)


@runtime_checkable
class Tokenizer(Protocol):
    """A token counter for one model family (a real tokenizer, or the byte estimator)."""

    @property
    def id(self) -> str:
        """Recorded with the counts it makes, e.g. `bytes-q4-v1` or `tiktoken:o200k_base`."""
        ...

    def count(self, text: str) -> int:
        """Tokens of `text` as the model would see it, without any chat-template overhead."""
        ...


@dataclass(frozen=True)
class ByteEstimator:
    """The default `Tokenizer`: `estimate_tokens` under its id."""

    id: str = ESTIMATOR_ID

    def count(self, text: str) -> int:
        return estimate_tokens(text)


DEFAULT_TOKENIZER = ByteEstimator()


@dataclass(frozen=True)
class EstimatorError:
    """How far an estimate was from a provider's (or a real tokenizer's) count.

    `relative` is (estimated − reported) / reported: positive when the estimate over-counts;
    None when the reported count is 0 (nothing to be relative to).
    """

    estimated: int
    reported: int
    absolute: int
    relative: float | None


def estimator_error(estimated: int, reported: int) -> EstimatorError:
    """The error of one estimate against a real count; negative counts are a bug."""
    if estimated < 0 or reported < 0:
        raise ValueError(f"token counts must be >= 0, got {estimated} and {reported}")
    relative = None if reported == 0 else (estimated - reported) / reported
    return EstimatorError(estimated, reported, estimated - reported, relative)
