"""The corpus description the report opens with: is there anything here to compact?

`describe(transcripts)` counts transcripts, requests (assistant turns) and tool outputs by size
band, and the share of message bytes that is tool output. Decisions the issue leaves open:
- bytes are UTF-8 bytes of message content plus each tool call's arguments (the command a
  SWE-agent step sends lives there); tool-call ids, names and JSON framing are not counted;
- bands are half-open `[low, high)`, edges configurable (default 2,000 / 10,000 / 100,000 B,
  the first being the forced-exact floor: outputs under 2,000 B are never compacted);
- `near_no_op` is true when fewer than 5% of tool outputs reach the eligibility floor
  (2,000 B), or when there are none: every policy leaves such a corpus almost unchanged, which
  the report says where it is true (tau-bench: 34 of 1,164 outputs, 2.9%).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import pairwise

from pipeline.toolout.transcript import Message, Transcript

DEFAULT_BAND_EDGES: tuple[int, ...] = (2_000, 10_000, 100_000)
ELIGIBLE_BYTES = 2_000  # outputs under this stay exact whatever the policy (issue 11)
NEAR_NO_OP_SHARE = 0.05


@dataclass(frozen=True)
class SizeBand:
    """Tool outputs of `low <= bytes < high` (no upper edge: `high is None`)."""

    low: int
    high: int | None
    outputs: int
    bytes: int

    @property
    def label(self) -> str:
        if self.low == 0 and self.high is not None:
            return f"<{self.high:,} B"
        if self.high is None:
            return f"≥{self.low:,} B"
        return f"{self.low:,}–{self.high:,} B"


@dataclass(frozen=True)
class CorpusDescription:
    corpora: tuple[str, ...]  # the corpus names of the transcripts described, sorted
    transcripts: int
    requests: int
    tool_outputs: int
    bands: tuple[SizeBand, ...]
    message_bytes: int
    tool_output_bytes: int
    eligible_outputs: int  # tool outputs of at least `eligible_bytes`
    eligible_bytes: int
    near_no_op: bool

    @property
    def tool_output_share(self) -> float:
        """Share of all message bytes that is tool output (0 for an empty corpus)."""
        return self.tool_output_bytes / self.message_bytes if self.message_bytes else 0.0

    @property
    def eligible_share(self) -> float:
        return self.eligible_outputs / self.tool_outputs if self.tool_outputs else 0.0

    def summary(self) -> str:
        """One line for the report."""
        name = ", ".join(self.corpora) or "empty corpus"
        bands = "; ".join(f"{b.label}: {b.outputs:,}" for b in self.bands)
        line = (
            f"{name}: {self.transcripts:,} transcripts, {self.requests:,} requests, "
            f"{self.tool_outputs:,} tool outputs ({bands}); tool output is "
            f"{self.tool_output_share:.1%} of message bytes"
        )
        if self.near_no_op:
            line += (
                f"; near no-op corpus: {self.eligible_share:.1%} of tool outputs reach "
                f"{self.eligible_bytes:,} B"
            )
        return line


def message_bytes(message: Message) -> int:
    """Content plus tool-call arguments, in UTF-8 bytes."""
    return message.size_bytes + sum(len(c.arguments.encode("utf-8")) for c in message.tool_calls)


def _check_edges(edges: Sequence[int]) -> None:
    if not edges or edges[0] <= 0 or any(b <= a for a, b in pairwise(edges)):
        raise ValueError(f"band edges must be positive and strictly increasing, got {edges!r}")


def describe(
    transcripts: Iterable[Transcript],
    *,
    band_edges: Sequence[int] = DEFAULT_BAND_EDGES,
    eligible_bytes: int = ELIGIBLE_BYTES,
    near_no_op_share: float = NEAR_NO_OP_SHARE,
) -> CorpusDescription:
    """Describe a set of transcripts (usually one corpus); pure."""
    _check_edges(band_edges)
    lows = (0, *band_edges)
    highs: tuple[int | None, ...] = (*band_edges, None)
    counts = [0] * len(lows)
    sizes = [0] * len(lows)
    corpora: set[str] = set()
    n_transcripts = requests = outputs = total = tool_total = eligible = 0
    for transcript in transcripts:
        n_transcripts += 1
        corpora.add(transcript.corpus)
        requests += transcript.requests
        for message in transcript.messages:
            total += message_bytes(message)
            if not message.is_tool_output:
                continue
            size = message.size_bytes
            outputs += 1
            tool_total += size
            eligible += size >= eligible_bytes
            band = sum(size >= edge for edge in band_edges)
            counts[band] += 1
            sizes[band] += size
    share = eligible / outputs if outputs else 0.0
    return CorpusDescription(
        corpora=tuple(sorted(corpora)),
        transcripts=n_transcripts,
        requests=requests,
        tool_outputs=outputs,
        bands=tuple(
            SizeBand(low, high, n, b)
            for low, high, n, b in zip(lows, highs, counts, sizes, strict=True)
        ),
        message_bytes=total,
        tool_output_bytes=tool_total,
        eligible_outputs=eligible,
        eligible_bytes=eligible_bytes,
        near_no_op=share < near_no_op_share,
    )


def describe_by_corpus(
    transcripts: Iterable[Transcript],
    *,
    band_edges: Sequence[int] = DEFAULT_BAND_EDGES,
    eligible_bytes: int = ELIGIBLE_BYTES,
    near_no_op_share: float = NEAR_NO_OP_SHARE,
) -> dict[str, CorpusDescription]:
    """One description per corpus name, in name order."""
    groups: dict[str, list[Transcript]] = {}
    for transcript in transcripts:
        groups.setdefault(transcript.corpus, []).append(transcript)
    return {
        name: describe(
            groups[name],
            band_edges=band_edges,
            eligible_bytes=eligible_bytes,
            near_no_op_share=near_no_op_share,
        )
        for name in sorted(groups)
    }
