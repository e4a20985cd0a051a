"""The fold-and-recall state machine over a ChatClient (no aiohttp, no Ray).

One trajectory: fold every chunk into the carrier (delta-only: each fold sends the previous
carrier and the new chunk, nothing re-reads the transcript), then ask for the graded labels.

Decisions (docs/carrier.md):
- Catch-up: a fold with no usable carrier (empty or refused) keeps the previous carrier; the
  next fold takes every pending chunk together, and the row is marked `catch_up` (invalid,
  never retried). If the last fold is unusable, its chunk is never folded; still catch_up.
- The recall turn runs even for a catch-up row, so its answer is kept for audit.
- Infrastructure faults and deterministic rejections end the trajectory where they happen;
  the partial folds are kept and the error is returned as data for the validity rule.
- The recall answer is kept in full (the paper kept 400 characters).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from pipeline.carrier import ledger as ledger_mod
from pipeline.carrier.arms import Arm
from pipeline.carrier.carrier import (
    FoldOutcome,
    apply_carry_cap,
    carrier_from_reply,
    count_headings,
)
from pipeline.carrier.grade import ExpectedFact, Grade, grade
from pipeline.carrier.prompts import RECALL_SYSTEM_PROMPT, fold_message, recall_message
from pipeline.carrier.tokens import estimate_quarters
from pipeline.chat.errors import EndpointError
from pipeline.chat.messages import ChatClient, ChatMessage, ChatRequest, ChatResponse
from pipeline.study_validity import endpoint_failure

RECALL_MAX_TOKENS = 700


class ChunkLike(Protocol):
    @property
    def index(self) -> int: ...


@dataclass(frozen=True)
class FoldRecord:
    """One fold request and what it carried forward."""

    fold_index: int
    chunks: tuple[int, ...]
    finish_reason: str
    prompt_tokens_est: int
    prompt_tokens: int | None
    completion_tokens: int | None
    cached_tokens: int | None  # None: the reply reported no usage
    reply_chars: int
    reply_text: str  # the reply's content as the endpoint returned it, before any parsing
    reply_refusal: str | None  # the API's refusal field, when it gave one
    carried_chars: int
    headings_carried: int
    parse_failed: bool
    clipped: bool
    usable: bool
    carried_text: str
    cost_usd: float


@dataclass(frozen=True)
class TrajectoryError:
    """An endpoint error that ended the trajectory, as data."""

    kind: str
    retryable: bool
    detail: str


@dataclass(frozen=True)
class TrajectoryResult:
    arm: str
    folds: tuple[FoldRecord, ...]
    final_carrier: str
    answer_text: str | None
    grade: Grade | None
    catch_up: bool
    error: TrajectoryError | None
    schema_adapted: bool
    recall_prompt_tokens_est: int = 0


@dataclass(frozen=True)
class TrajectoryInputs:
    """Everything a trajectory needs besides the client: pure values."""

    arm: Arm
    chunks: Sequence[ChunkLike]
    render_chunk: Callable[[Any], str]  # called with items of `chunks`
    chunk_messages: Callable[[Any], list[tuple[str, str]]]
    graded: Sequence[ExpectedFact]
    temperature: float = 0.0
    seed: int | None = None


def _request_tokens(messages: Sequence[ChatMessage], extra_quarters: int = 0) -> int:
    """The estimate of the messages' concatenation plus `extra_quarters` (a schema's size).

    Quarters are additive over concatenation, so the messages are never joined.
    """
    quarters = sum(estimate_quarters(m.content) for m in messages) + extra_quarters
    return -(-quarters // 4)


class _Run:
    """Mutable state of one trajectory; kept private so the API stays a pure function."""

    def __init__(self, inputs: TrajectoryInputs) -> None:
        self.inputs = inputs
        self.arm = inputs.arm
        self.text = ""  # the model-written part of the carrier
        self.ledger = ledger_mod.Ledger()
        self.folds: list[FoldRecord] = []
        self.catch_up = False
        self.schema_adapted = False
        schema = self.arm.schema
        self.schema_quarters = estimate_quarters(str(dict(schema.schema))) if schema else 0

    def carrier(self) -> str:
        rendered = self.ledger.render()
        return f"{self.text}\n\n{rendered}".strip() if rendered else self.text

    async def fold(self, client: ChatClient, index: int, pending: list[ChunkLike]) -> bool:
        inputs, arm = self.inputs, self.arm
        transcript = "\n\n".join(inputs.render_chunk(c) for c in pending)
        messages = (
            ChatMessage("system", arm.system_prompt),
            ChatMessage("user", fold_message(self.carrier(), transcript)),
        )
        request = ChatRequest(
            messages=messages,
            max_tokens=arm.output_tokens,
            temperature=inputs.temperature,
            seed=inputs.seed,
            schema=arm.schema,
            purpose="fold",
        )
        response = await client.complete(request)
        self.schema_adapted = self.schema_adapted or response.schema_adapted
        outcome = carrier_from_reply(arm, response)
        clipped = False
        if outcome.usable:
            self.text, clipped = apply_carry_cap(outcome.carrier, arm.carry_cap_tokens)
            if arm.ledger_budget_chars is not None:
                for chunk in pending:
                    self.ledger = ledger_mod.update(
                        self.ledger, inputs.chunk_messages(chunk), arm.ledger_budget_chars
                    )
        self.folds.append(
            self._record(
                index,
                pending=pending,
                messages=messages,
                response=response,
                outcome=outcome,
                clipped=clipped,
            )
        )
        return outcome.usable

    def _record(
        self,
        index: int,
        *,
        pending: list[ChunkLike],
        messages: tuple[ChatMessage, ...],
        response: ChatResponse,
        outcome: FoldOutcome,
        clipped: bool,
    ) -> FoldRecord:
        carried = self.carrier()
        return FoldRecord(
            fold_index=index,
            chunks=tuple(c.index for c in pending),
            finish_reason=response.finish_reason,
            prompt_tokens_est=_request_tokens(messages, self.schema_quarters),
            prompt_tokens=response.usage.prompt_tokens,
            completion_tokens=response.usage.completion_tokens,
            cached_tokens=response.usage.cached_tokens,
            reply_chars=len(response.text),
            reply_text=response.text,
            reply_refusal=response.refusal,
            carried_chars=len(carried),
            headings_carried=count_headings(carried, self.arm.headings),
            parse_failed=outcome.parse_failed,
            clipped=clipped,
            usable=outcome.usable,
            carried_text=carried,
            cost_usd=response.cost_usd,
        )


async def run_trajectory(client: ChatClient, inputs: TrajectoryInputs) -> TrajectoryResult:
    """Fold every chunk, then recall; endpoint errors end it early and are returned as data."""
    run = _Run(inputs)
    pending: list[ChunkLike] = []
    error: TrajectoryError | None = None
    answer: str | None = None
    recall_est = 0
    try:
        for fold_index, chunk in enumerate(inputs.chunks):
            pending.append(chunk)
            if await run.fold(client, fold_index, pending):
                pending = []
            else:
                run.catch_up = True
        if pending:
            run.catch_up = True
        labels = [g.label for g in inputs.graded]
        messages = (
            ChatMessage("system", RECALL_SYSTEM_PROMPT),
            ChatMessage("user", recall_message(run.carrier(), labels)),
        )
        recall_est = _request_tokens(messages)
        response = await client.complete(
            ChatRequest(
                messages=messages,
                max_tokens=RECALL_MAX_TOKENS,
                temperature=inputs.temperature,
                seed=inputs.seed,
                purpose="recall",
            )
        )
        answer = "" if response.refusal else response.text
    except EndpointError as exc:  # the shared vocabulary names it (pipeline.study_validity)
        failure = endpoint_failure(exc)
        error = TrajectoryError(failure.invalid_reason, failure.retryable, failure.detail)
    final = run.carrier()
    result_grade = grade(inputs.graded, answer, final) if answer is not None else None
    return TrajectoryResult(
        arm=inputs.arm.name,
        folds=tuple(run.folds),
        final_carrier=final,
        answer_text=answer,
        grade=result_grade,
        catch_up=run.catch_up,
        error=error,
        schema_adapted=run.schema_adapted,
        recall_prompt_tokens_est=recall_est,
    )
