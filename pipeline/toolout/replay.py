"""Fixed-transcript replay: every request a harness would send, with a policy applied.

A harness that resends visible history sends one request before each assistant turn: all
messages before that turn. The replay rebuilds those requests in order and asks the policy, for
every tool output visible in a request, which text it shows (`Policy.render`). Decisions:

- Request k holds every message before the k-th assistant message; its output tokens are the
  assistant turn's (recorded usage where the corpus has it, else the estimate of its text and
  tool-call arguments).
- A tool output's rendering is asked for on every request that shows it; a policy keeps a
  compacted output's bytes identical on later requests (its contract), and the replay counts a
  changed text on a later request as a new transformation (a rewrite), an unchanged compacted
  text as a cache reuse.
- The intent a policy may rank by is the text of the assistant turn that made the call plus
  the call's arguments (the seed's intent plugin asked the model for a reason per call; a
  transcript has only what the model wrote).
- Messages are blocks of the request (one per message), the unit the cache models account in;
  tool-call arguments are part of the assistant block's text.
Pure: no I/O.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple, overload

from pipeline.toolout.policies.base import (
    NEVER,
    OutputRef,
    OutputView,
    Policy,
    Recheck,
    Rendering,
)
from pipeline.toolout.tokens import BYTES_PER_TOKEN, estimate_tokens
from pipeline.toolout.transcript import Message, Transcript

Estimate = Callable[[str], int]


class Position:
    """Where the output being rendered sits, for an economic gate that prices its rewrite.

    The replay updates it before every `Policy.render` call (a model-mode gate reads it); it is
    the one mutable value of a replay and belongs to that replay alone.
    """

    def __init__(self) -> None:
        self.position_tokens = 0  # tokens of the request before the output, as sent
        self.cached_prefix_tokens = 0  # tokens the previous request sent (the cached prefix)
        self.later_requests = 0  # requests the transcript still sends after this one


class Block(NamedTuple):
    """One message of a request, as sent (a tuple: one is built per new or rewritten block).

    `key` (the cache's match key: role and text, as accounting.CacheBlock.of's) and
    `size_bytes` (UTF-8) are computed once, by `block()`: every later request reads them.
    """

    role: str
    text: str
    tokens: int
    output_index: int | None  # which tool output this block shows, if any
    key: tuple[str, str]
    size_bytes: int


def block(role: str, text: str, tokens: int, output_index: int | None = None) -> Block:
    """A `Block` with its key and UTF-8 size filled in."""
    size = len(text) if text.isascii() else len(text.encode("utf-8"))  # utf8_len, inline
    return Block(role, text, tokens, output_index, (role, text), size)


# A named tuple's own constructor is a Python function over `tuple.__new__`; the replay's
# loop calls `tuple.__new__` itself (half the cost, for each new block and Applied).
_tuple = tuple.__new__


class Applied(NamedTuple):
    """What the policy did to one visible tool output on one request."""

    output_index: int
    tool_name: str
    rendering: Rendering
    original_bytes: int
    position_tokens: int  # tokens of the request before this output, as sent
    new: bool  # a new transformation (first compacted form, or a changed one): a rewrite
    reuse: bool  # the same compacted bytes as on the previous request: a cache reuse


@dataclass(slots=True)
class ReplayedRequest:
    """One request as sent, with running totals (the replay keeps them, nothing re-sums).

    `applied` holds the outputs the policy was asked about on this request: every output on
    its first exposure, and later only where the policy's `recheck` said its text could change
    (every visible output when the replay runs with `recheck=False`). Every other visible
    output shows the same text as on the previous request, so it is counted in
    `outputs_changed` (and as a reuse) but has no `Applied` of its own.

    A value nothing mutates after the replay returns it; not frozen because a frozen
    dataclass's `__init__` costs five times a slotted one's, once per request.
    """

    index: int
    timestamp: float | None
    output_tokens: int
    applied: tuple[Applied, ...]
    input_tokens: int
    input_bytes: int
    outputs_visible: int
    outputs_changed: int  # visible outputs whose shown text differs from their content
    outputs_new: int  # of those, the ones whose text changed on this request (rewrites)
    removed_bytes: int  # original minus shown bytes over every visible output
    unchanged_blocks: int  # leading blocks identical to the previous request's
    output_block: Block | None  # this request's assistant turn as the next request carries it
    block_count: int
    # The request's blocks are slots[:block_count] of a list shared with the requests before
    # and after it, until a rewrite (the replay copies the list before it changes a slot).
    slots: Sequence[Block] = field(repr=False, compare=False)

    @property
    def blocks(self) -> tuple[Block, ...]:
        return tuple(self.slots[: self.block_count])

    @property
    def outputs_reused(self) -> int:
        return self.outputs_changed - self.outputs_new


class _Refs:
    """The transcript's outputs as `OutputRef`s, built on first use: only a policy that counts
    or sizes its peers (Anthropic's clear_at_least) reads them."""

    __slots__ = ("_built", "_outputs")

    def __init__(self, outputs: Sequence[_Output]) -> None:
        self._outputs = outputs
        self._built: tuple[OutputRef, ...] | None = None

    def all(self) -> tuple[OutputRef, ...]:
        if self._built is None:
            self._built = tuple(
                OutputRef(o.ordinal, o.message.name or "", o.message.size_bytes)
                for o in self._outputs
            )
        return self._built


class _Visible(Sequence[OutputRef]):
    """The first `count` of a transcript's outputs (`OutputView.visible_outputs`), without
    copying them: one per request (a tuple slice per request was O(history))."""

    __slots__ = ("_count", "_refs")

    def __init__(self, refs: _Refs, count: int) -> None:
        self._refs = refs
        self._count = count

    def __len__(self) -> int:
        return self._count

    @overload
    def __getitem__(self, index: int) -> OutputRef: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[OutputRef, ...]: ...

    def __getitem__(self, index: int | slice) -> OutputRef | tuple[OutputRef, ...]:
        refs = self._refs.all()
        if isinstance(index, slice):
            return refs[: self._count][index]
        return refs[range(self._count)[index]]  # range: the bounds and negative indices

    def __iter__(self) -> Iterator[OutputRef]:
        refs = self._refs.all()
        return (refs[i] for i in range(self._count))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and tuple(self) == tuple(other)

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return repr(tuple(self))


class _Output(NamedTuple):
    ordinal: int  # its index among the transcript's outputs
    message: Message
    position: int  # index of the message in the transcript
    intent: str
    arguments: str


def _message_text(message: Message) -> str:
    """A message's block text: its content, then one line per tool call."""
    calls = message.tool_calls
    if len(calls) == 1:  # the common case, in one format
        call = calls[0]
        return f"{message.content or ''}\n[tool call {call.name}] {call.arguments}"
    return (message.content or "") + "".join(
        f"\n[tool call {call.name}] {call.arguments}" for call in calls
    )


class _PrefixSums:
    """Token sums of the first k blocks under point updates (a Fenwick tree): an output's
    position in the request costs log(blocks), not a walk over the history."""

    def __init__(self, size: int) -> None:
        self.tree = [0] * (size + 1)

    def add(self, slot: int, delta: int) -> None:
        i = slot + 1
        while i < len(self.tree):
            self.tree[i] += delta
            i += i & -i

    def before(self, slot: int) -> int:
        """The sum of slots [0, slot)."""
        total, i = 0, slot
        while i > 0:
            total += self.tree[i]
            i -= i & -i
        return total


class _Positions:
    """Tokens before each slot of the request being built, as sent.

    Slots are appended in order with their first text, so `appended[s]` (the running sum at
    append time) is exact until a slot is rewritten; rewrites are the only point updates and
    go to a Fenwick tree of deltas (`_PrefixSums`), built on the first one. So a new output's
    position is O(1) and a rewritten one's O(log blocks).
    """

    def __init__(self, size: int) -> None:
        self.size = size
        self.appended = [0]
        self.deltas: _PrefixSums | None = None
        self.delta_total = 0

    def append(self, tokens: int) -> None:
        self.appended.append(self.appended[-1] + tokens)

    def rewrite(self, slot: int, delta: int) -> None:
        if self.deltas is None:
            self.deltas = _PrefixSums(self.size)
        self.deltas.add(slot, delta)
        self.delta_total += delta

    def before(self, slot: int) -> int:
        """Tokens of slots [0, slot) as they are now."""
        if self.deltas is None:
            return self.appended[slot]
        if slot == len(self.appended) - 1:  # the next slot to append: every delta is before it
            return self.appended[slot] + self.delta_total
        return self.appended[slot] + self.deltas.before(slot)


def _due_request(
    check: Recheck, output: int, after: int, visible: Sequence[int], request_bytes: Sequence[int]
) -> int:
    """The first request after `after` that `check` asks about (len(visible): never)."""
    last = len(visible)
    due = last
    if check.next_request:
        return after + 1
    if check.request_index is not None:
        due = min(due, max(check.request_index, after + 1))
    if check.later_outputs is not None:
        due = min(due, bisect_left(visible, output + 1 + check.later_outputs, after + 1, last))
    if check.request_bytes is not None:
        due = min(due, bisect_left(request_bytes, check.request_bytes, after + 1, last))
    return due


def replay(  # noqa: PLR0912, PLR0915 - one pass over the transcript, its steps commented
    transcript: Transcript,
    policy: Policy,
    estimate: Estimate,
    where: Position | None = None,
    *,
    recheck: bool = True,
) -> list[ReplayedRequest]:
    """Every request of the transcript under `policy`, in order; `where` is kept up to date.

    Work per request is proportional to what changes: the new messages, the outputs the
    policy is asked about (`Policy.recheck`; a policy without it is asked about every visible
    output on every request, as with `recheck=False`) and a position per asked output (O(1)
    for a new one, log-time for a rewritten one).
    """
    where = where if where is not None else Position()
    messages = transcript.messages
    by_size = estimate is estimate_tokens  # the default estimator: tokens from the UTF-8 size
    ask_again = getattr(policy, "recheck", None) if recheck else None
    # One pass over the messages. Per message: its text, UTF-8 size and tool output index
    # (-1: none); per output: the intent of the call it answers; per request: its transcript
    # position, the outputs visible in it and its uncompacted bytes.
    calls: dict[str, tuple[str, str]] = {}
    outputs: list[_Output] = []
    output_at: list[int] = []
    texts: list[str] = []
    sizes: list[int] = []
    starts: list[int] = []
    visible_counts: list[int] = []
    request_bytes: list[int] = []
    total_bytes = 0
    for position, message in enumerate(messages):
        if message.tool_calls:
            text = _message_text(message)
            size = len(text) if text.isascii() else len(text.encode("utf-8"))  # utf8_len
        else:
            text, size = message.content or "", message.size_bytes
        at_output = -1
        if message.role == "assistant":
            starts.append(position)
            visible_counts.append(len(outputs))
            request_bytes.append(total_bytes)
            for call in message.tool_calls:
                calls[call.id] = (message.content or "", call.arguments)
        elif message.role == "tool":  # is_tool_output, inline
            said, arguments = calls.get(message.tool_call_id or "", ("", ""))
            at_output = len(outputs)
            intent = f"{said}\n{arguments}".strip()
            outputs.append(_tuple(_Output, (at_output, message, position, intent, arguments)))
        output_at.append(at_output)
        texts.append(text)
        sizes.append(size)
        total_bytes += size
    total_requests = len(starts)
    refs = _Refs(outputs)

    slots: list[Block] = []
    positions = _Positions(len(messages))
    appended = positions.appended
    shown: list[Block | None] = [None] * len(outputs)  # output -> its block as last sent
    first_request = [0] * len(outputs)
    changed: set[int] = set()  # outputs whose shown text differs from their content
    due: dict[int, list[int]] = {}  # request -> outputs to ask about again
    input_tokens = input_bytes = removed = 0
    requests: list[ReplayedRequest] = []
    shared = False  # the slots list is referenced by an emitted request (copy before a rewrite)
    statics: list[Block | None] = [None] * len(messages)  # a static message's block, built once
    cached_prefix = 0
    trusted = OutputView.trusted
    for index, position in enumerate(starts):
        previous_count = len(slots)
        unchanged = previous_count
        where.cached_prefix_tokens = cached_prefix
        where.later_requests = total_requests - index - 1
        visible = visible_counts[index]
        visible_refs = _Visible(refs, visible)
        this_bytes = request_bytes[index]
        applied: list[Applied] = []
        new_count = 0
        # The outputs asked about, in output order: earlier ones asked again (every one
        # without `recheck`), then the messages since the previous request in order, each
        # output rendered as its slot is appended (-1: a static message).
        order = output_at[previous_count:position]
        if ask_again is None:
            order = [*range(visible_counts[index - 1] if index else 0), *order]
        else:
            listed = due.pop(index, None)
            if listed:
                order = [*sorted(set(listed)), *order]
        for o in order:
            if o < 0:  # a static message: its block, once built
                p = len(slots)
                static = statics[p]
                if static is None:
                    text, size, role = texts[p], sizes[p], messages[p].role
                    tokens = -(-size // BYTES_PER_TOKEN) if by_size else estimate(text)
                    static = statics[p] = _tuple(
                        Block, (role, text, tokens, None, (role, text), size)
                    )
                slots.append(static)
                appended.append(appended[-1] + static.tokens)  # positions.append, inline
                input_tokens += static.tokens
                input_bytes += static.size_bytes
                continue
            output = outputs[o]
            message = output.message
            slot = output.position
            before = shown[o]
            if before is None:
                first_request[o] = index
            first = first_request[o]
            original = message.size_bytes
            content = message.content or ""
            view = trusted(
                {
                    "tool_name": message.name or "",
                    "arguments": output.arguments,
                    "content": content,
                    "output_index": o,
                    "first_request": first,
                    "request_index": index,
                    "exposures": index - first,
                    "later_outputs": visible - o - 1,
                    "intent": output.intent,
                    "previous": None if before is None else before.text,
                    "request_bytes": this_bytes,
                    "visible_outputs": visible_refs,
                    "size_bytes": original,
                }
            )
            # positions.before(slot); without a rewrite yet, the running sum at append
            at = appended[slot] if positions.deltas is None else positions.before(slot)
            where.position_tokens = at
            rendering = policy.render(view)
            text = rendering.text
            same = before is not None and text == before.text
            changed_now = rendering.changed and not same
            new_count += changed_now
            applied.append(
                _tuple(
                    Applied,
                    (o, view.tool_name, rendering, original, at, changed_now,
                     rendering.changed and same),
                )
            )  # fmt: skip
            if rendering.changed:
                changed.add(o)
            else:
                changed.discard(o)
            if not same:  # a new block: the first exposure, or a rewrite
                if text is content:
                    size = original
                else:  # utf8_len, inline: ASCII (a flag of the string) is a byte a character
                    size = len(text) if text.isascii() else len(text.encode("utf-8"))
                tokens = -(-size // BYTES_PER_TOKEN) if by_size else estimate(text)
                made = shown[o] = _tuple(Block, ("tool", text, tokens, o, ("tool", text), size))
                if before is None:  # first exposure: its slot is the next one
                    slots.append(made)
                    appended.append(appended[-1] + tokens)  # positions.append, inline
                    input_tokens += tokens
                    input_bytes += size
                    removed += original - size
                else:  # a rewrite of a slot an earlier request sent
                    if shared:
                        slots = list(slots)
                        shared = False
                    unchanged = min(unchanged, slot)
                    slots[slot] = made
                    positions.rewrite(slot, tokens - before.tokens)
                    input_tokens += tokens - before.tokens
                    input_bytes += size - before.size_bytes
                    removed += before.size_bytes - size
            if ask_again is not None:
                check: Recheck = ask_again(view, rendering)
                if check is not NEVER:  # the common answer: nothing to schedule
                    later = _due_request(check, o, index, visible_counts, request_bytes)
                    if later < total_requests:
                        due.setdefault(later, []).append(o)
        assistant = messages[position]
        text, size = texts[position], sizes[position]
        usage = assistant.usage
        recorded = usage.completion_tokens if usage is not None else None
        output_block: Block | None = None
        if index + 1 < total_requests:  # the next request carries it: its block, built once
            tokens = -(-size // BYTES_PER_TOKEN) if by_size else estimate(text)
            output_block = statics[position] = _tuple(
                Block, (assistant.role, text, tokens, None, (assistant.role, text), size)
            )
            output_tokens = tokens if recorded is None else recorded
        elif recorded is None:
            output_tokens = -(-size // BYTES_PER_TOKEN) if by_size else estimate(text)
        else:
            output_tokens = recorded
        requests.append(
            ReplayedRequest(
                index,
                assistant.timestamp,
                output_tokens,
                tuple(applied),
                input_tokens,
                input_bytes,
                visible,
                len(changed),
                new_count,
                removed,
                unchanged,
                output_block,
                len(slots),
                slots,
            )
        )
        cached_prefix = input_tokens
        shared = True
    return requests


def removed_bytes(requests: Sequence[ReplayedRequest]) -> int:
    """Bytes the policy removed over all requests (a removed byte counts once per request)."""
    return sum(r.removed_bytes for r in requests)
