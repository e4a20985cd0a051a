"""Every request of a carrier unit as it was sent, with its reply (issue 35).

A request's messages are not stored: they are rebuilt here with the study's own pure builders
from what the run holds, so they are the bytes the trajectory sent:

- a fold: the arm's system prompt (the arm as the run's manifest configured it), then one user
  message, `fold_message(carrier before, chunk transcript)`: the previous carrier (the carried
  text of the fold before; empty for the first), the chunk(s) of `fixture.json` rendered by
  `render_chunk`, and the fold instruction; a schema arm also sent its `response_format`;
- the final answer: the recall system prompt and `recall_message(final carrier, graded labels)`.

The reply is the fold's `reply_text` (and `reply_refusal`), the recall's `answer_text`. What
cannot be rebuilt is said in place of the message, never guessed: an arm the manifest lacks or
this code cannot build, a chunk the fixture lacks, a refused fixture, a run from before
`reply_text`. A rebuilt system prompt whose SHA-256 differs from the one the row recorded is
shown with that difference stated (the prompt text changed since the run).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from markupsafe import Markup

from pipeline.carrier.arms import Arm, build_arms
from pipeline.carrier.config import carrier_config
from pipeline.carrier.fixture_model import Chunk, Message, ToolCall, render_chunk
from pipeline.carrier.prompts import (
    RECALL_SYSTEM_PROMPT,
    fold_message,
    prompt_sha256,
    recall_message,
)
from pipeline.usererror import UserError
from pipeline.view.highlight import mark


@dataclass(frozen=True)
class SentMessage:
    """One message of a request (or its response_format), as the page shows it."""

    role: str
    content: Markup
    note: str = ""  # why the content is not the message as sent, when it is not


@dataclass(frozen=True)
class Exchange:
    """One request of the unit and its reply."""

    anchor: str
    title: str
    messages: tuple[SentMessage, ...]
    reply: Markup | None  # None: the run holds no reply for it
    reply_chars: int | None
    reply_note: str
    refusal: str | None
    flags: tuple[str, ...]


def tool_call_parts(call: Mapping[str, Any]) -> tuple[str, str]:
    """A tool call's name and arguments text, from either shape a transcript holds: OpenAI's
    `{"function": {"name", "arguments"}}` or the fixture's top-level `name` and `arguments`.
    Arguments that are not a string (an object, as some exporters write them) become JSON."""
    function = call.get("function")
    source = function if isinstance(function, Mapping) else call
    name = source.get("name")
    arguments = source.get("arguments")
    if arguments is not None and not isinstance(arguments, str):
        arguments = json.dumps(arguments, ensure_ascii=False, sort_keys=True)
    return str(name or "?"), arguments or ""


def _tool_call(call: Mapping[str, Any]) -> ToolCall:
    name, arguments = tool_call_parts(call)
    return ToolCall(str(call.get("id") or ""), name, arguments)


def fixture_chunk(raw: Mapping[str, Any]) -> Chunk:
    """A chunk of fixture.json as the study's value: `render_chunk` then gives the text sent."""
    messages = tuple(
        Message(
            str(m.get("role") or ""),
            str(m.get("content") or ""),
            m.get("name"),
            tuple(_tool_call(c) for c in m.get("tool_calls") or []),
            m.get("tool_call_id"),
        )
        for m in raw.get("messages") or []
    )
    return Chunk(int(raw["index"]), messages)


def run_arm(manifest: Mapping[str, Any], name: str) -> tuple[Arm | None, str]:
    """The arm as the run configured it, or None and why it cannot be rebuilt."""
    study = (manifest.get("config") or {}).get("study") or {}
    node = (study.get("arms") or {}).get(name)
    if not isinstance(node, Mapping):
        return None, f"the run's manifest does not configure arm {name!r}"
    try:
        config = carrier_config({**study, "arms": {name: node}})
        return build_arms(config.arms)[name], ""
    except UserError as exc:
        return None, f"arm {name!r} of the run's manifest does not build today: {exc}"


def recall_labels(fixture: Mapping[str, Any]) -> list[str]:
    """The graded labels in recall order: the fixture's `graded` list, else its planted ones."""
    graded = fixture.get("graded")
    if graded is None:
        graded = [f for f in fixture.get("planted") or [] if f.get("graded")]
    return [str(f.get("label")) for f in graded]


class _Builder:
    def __init__(
        self, row: Mapping[str, Any], arm: Arm | None, arm_note: str, marks: Mapping[str, str]
    ) -> None:
        self.row, self.arm, self.arm_note, self.marks = row, arm, arm_note, marks

    def system(self) -> SentMessage:
        arm = self.arm
        if arm is None:
            recorded = self.row.get("system_prompt_sha256")
            return SentMessage("system", Markup(""), f"{self.arm_note}; SHA-256 {recorded}")
        note = ""
        recorded = self.row.get("system_prompt_sha256")
        if recorded and recorded != prompt_sha256(arm.system_prompt):
            note = (
                f"today's text of this prompt; the run sent one with SHA-256 {recorded}, "
                f"not {prompt_sha256(arm.system_prompt)}"
            )
        return SentMessage("system", mark(arm.system_prompt, {}), note)

    def response_format(self) -> tuple[SentMessage, ...]:
        schema = self.arm.schema if self.arm is not None else None
        if schema is None:
            return ()
        body = json.dumps({"name": schema.name, "schema": dict(schema.schema)}, indent=2)
        return (SentMessage("response_format", mark(body, {})),)

    def fold(
        self, fold: Mapping[str, Any], before: str, chunks: Mapping[int, Chunk], refused: str | None
    ) -> Exchange:
        index = int(fold["fold_index"])
        wanted = [int(i) for i in str(fold.get("chunks") or "").split(",") if i.strip().isdigit()]
        missing = [i for i in wanted if i not in chunks]
        transcript = "\n\n".join(render_chunk(chunks[i]) for i in wanted if i in chunks)
        note = ""
        if refused:
            note = f"{refused}: the chunk text is left out"
        elif missing:
            note = f"chunk(s) {', '.join(map(str, missing))} not in the run's fixture"
        user = SentMessage("user", mark(fold_message(before, transcript), self.marks), note)
        reply = fold.get("reply_text")
        flags = tuple(
            flag
            for flag, on in (
                ("unusable", fold.get("usable") is False),
                ("parse failed", bool(fold.get("parse_failed"))),
                ("refusal", bool(fold.get("reply_refusal"))),
                ("length stop", fold.get("finish_reason") == "length"),
            )
            if on
        )
        return Exchange(
            anchor=f"exchange-fold-{index}",
            title=f"Fold {index}: chunks {fold.get('chunks')}",
            messages=(self.system(), user, *self.response_format()),
            reply=None if reply is None else mark(reply, self.marks),
            reply_chars=None if reply is None else len(reply),
            reply_note="" if reply is not None else "not recorded (a run from before reply_text)",
            refusal=fold.get("reply_refusal"),
            flags=flags,
        )

    def recall(self, labels: Sequence[str]) -> Exchange:
        carrier = str(self.row.get("final_carrier") or "")
        answer = self.row.get("answer_text")
        return Exchange(
            anchor="exchange-recall",
            title="Final answer (recall)",
            messages=(
                SentMessage("system", mark(RECALL_SYSTEM_PROMPT, {})),
                SentMessage("user", mark(recall_message(carrier, labels), self.marks)),
            ),
            reply=None if answer is None else mark(answer, self.marks),
            reply_chars=None if answer is None else len(answer),
            reply_note="" if answer is not None else "no answer: the trajectory ended before it",
            refusal=None,
            flags=(),
        )


def unit_exchanges(
    manifest: Mapping[str, Any],
    row: Mapping[str, Any],
    folds: Sequence[Mapping[str, Any]],
    *,
    fixture: Mapping[str, Any] | None,
    refused: str | None,
    marks: Mapping[str, str],
) -> list[Exchange]:
    """Every fold request of the unit in order, then the recall request (when it was made)."""
    arm, arm_note = run_arm(manifest, str(row.get("arm")))
    builder = _Builder(row, arm, arm_note, marks)
    chunks = {int(c["index"]): fixture_chunk(c) for c in (fixture or {}).get("chunks") or []}
    exchanges, before = [], ""
    for fold in folds:
        exchanges.append(builder.fold(fold, before, chunks, refused))
        before = str(fold.get("carried_text") or "")
    if row.get("answer_text") is not None:
        exchanges.append(builder.recall(recall_labels(fixture or {})))
    return exchanges
