"""The fixture's value objects and its transcript rendering.

A fixture is a synthetic agent session cut into chunks, one chunk per fold, plus the record of
every planted fact. `render_chunk` is the exact text a fold request shows the model, so it is
also what "a value appears in a chunk" and a chunk's token estimate are measured against.
"""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.carrier.tokens import estimate_tokens

ROLES = ("user", "assistant", "tool")
CARRIERS = ("user", "assistant", "tool")  # which kind of message carries a planted fact


@dataclass(frozen=True)
class Fact:
    """One planted fact. Graded facts are asked for by `label` at the recall turn."""

    label: str  # stable, human-readable; the recall turn asks by this label
    value: str  # the exact string planted once in the session (unit word included)
    kind: str  # value shape: port, path, uuid, timestamp, ... (see fixture_values)
    graded: bool
    chunk: int  # index of the chunk whose rendered text contains the value
    carrier: str = ""  # user | assistant | tool; "" when unknown (hand-built facts)


@dataclass(frozen=True)
class ToolCall:
    """A tool call an assistant turn makes; `arguments` is canonical JSON text."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class Message:
    """One turn: operator ("user"), assistant (with tool calls) or tool result ("tool")."""

    role: str
    content: str
    name: str | None = None  # tool name, for role "tool"
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None  # for role "tool": the call it answers


@dataclass(frozen=True)
class Chunk:
    """The messages one fold receives."""

    index: int
    messages: tuple[Message, ...]


@dataclass(frozen=True)
class Fixture:
    """A generated (or loaded) fixture; byte-identical JSON for the same inputs."""

    scenario: str
    seed: int
    version: str
    chunks: tuple[Chunk, ...]
    planted: tuple[Fact, ...]
    graded: tuple[Fact, ...]

    @property
    def graded_facts(self) -> tuple[Fact, ...]:
        """The graded facts, in recall order (the order of `graded`)."""
        return self.graded

    @property
    def distractors(self) -> tuple[Fact, ...]:
        return tuple(f for f in self.planted if not f.graded)


def render_message(message: Message) -> str:
    """One message as transcript text: `[operator] ...`, `[assistant] ...`, `[tool:NAME] ...`."""
    if message.role == "user":
        return f"[operator] {message.content}"
    if message.role == "tool":
        return f"[tool:{message.name or 'tool'}] {message.content}"
    parts = [f"[assistant] {message.content}"] if message.content else ["[assistant]"]
    parts += [f"<tool_call name={c.name}>{c.arguments}</tool_call>" for c in message.tool_calls]
    return "\n".join(parts)


def render_chunk(chunk: Chunk) -> str:
    """The chunk as a plain-text transcript (messages separated by one blank line)."""
    return "\n\n".join(render_message(m) for m in chunk.messages)


def chunk_tokens(chunk: Chunk) -> int:
    """Estimated tokens of the rendered chunk (pipeline.carrier.tokens)."""
    return estimate_tokens(render_chunk(chunk))
