"""The canonical transcript every importer produces and the replay reads.

Chat-Completions-shaped messages, because that is what a harness that resends visible history
sends: system / user / assistant turns, assistant tool calls (name + arguments), and tool
results (`role="tool"`, with the id and name of the call they answer). Timestamps and provider
usage are kept where the corpus recorded them (None otherwise), so cache TTLs and the token
estimator's error can use them. Pure values: importers do the I/O.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal, Protocol

Role = Literal["system", "user", "assistant", "tool"]


@dataclass(frozen=True)
class ToolCall:
    """One tool call an assistant turn asked for."""

    id: str
    name: str  # the tool name the policies match (importers map shell-like actions to one)
    arguments: str  # the arguments as sent: JSON text, or the raw command string


@dataclass(frozen=True)
class RecordedUsage:
    """Provider usage a corpus recorded for the request that produced an assistant turn."""

    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_tokens: int | None = None
    cost_usd: float | None = None


@dataclass(frozen=True)
class Message:
    role: Role
    content: str | None
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None  # tool results: the call they answer
    name: str | None = None  # tool results: the tool's name
    timestamp: float | None = None  # seconds since the epoch, where recorded
    usage: RecordedUsage | None = None  # assistant turns, where recorded

    @property
    def is_tool_output(self) -> bool:
        return self.role == "tool"

    @cached_property
    def size_bytes(self) -> int:
        """UTF-8 bytes of the content (asked for on every request that shows it: cached)."""
        content = self.content or ""
        # ASCII (a flag the string carries) is a byte a character: no copy to count it
        return len(content) if content.isascii() else len(content.encode("utf-8"))


@dataclass(frozen=True)
class Transcript:
    """One agent session in canonical form."""

    id: str  # unique within a corpus run: "<corpus>/<file stem>[/<index>]"
    corpus: str  # swe-agent | mini-swe-agent | openhands | tau-bench | jsonl
    source: str  # the file it came from, relative to the data root
    messages: tuple[Message, ...]
    meta: Mapping[str, Any] = field(default_factory=dict)

    @property
    def tool_outputs(self) -> tuple[Message, ...]:
        return tuple(m for m in self.messages if m.is_tool_output)

    @property
    def requests(self) -> int:
        """Requests the harness sent: one per assistant turn."""
        return sum(m.role == "assistant" for m in self.messages)


class Corpus(Protocol):
    """Transcripts a replay iterates, as often as it needs: a tuple, or an index of files
    read one at a time (pipeline/studies/toolout.py), so no process holds the corpus."""

    def __len__(self) -> int: ...

    def __iter__(self) -> Iterator[Transcript]: ...


class TranscriptError(ValueError):
    """A malformed transcript: names the file, the record and the problem in one line."""

    def __init__(self, source: str, record: str, problem: str) -> None:
        super().__init__(f"{source}: {record}: {problem}")
        self.source = source
        self.record = record
        self.problem = problem
