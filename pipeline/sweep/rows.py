"""Trajectory result -> table records (rows, checks, folds). Pure: no I/O, no Ray.

Token totals sum the fold requests and the recall request; `prompt_tokens` is None when the
endpoint reported none for any request (a partial sum would read as a measurement).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from pipeline.carrier.trajectory import TrajectoryError, TrajectoryResult
from pipeline.carrier.validity import Validity, ValidityInputs, decide
from pipeline.config.schema import EndpointConfig

Record = dict[str, Any]


class SpecLike(Protocol):
    @property
    def run_id(self) -> str: ...
    @property
    def config_id(self) -> str: ...
    @property
    def arm(self) -> str: ...
    @property
    def execution_group(self) -> int: ...
    @property
    def repeat(self) -> int: ...
    @property
    def attempt(self) -> int: ...
    @property
    def schedule_position(self) -> int: ...
    @property
    def row_id(self) -> str: ...


@dataclass(frozen=True)
class RowContext:
    """What a row records about where it ran, besides the spec."""

    endpoint: EndpointConfig
    publication_date: str | None
    scenario: str
    fixture_sha256: str
    system_prompt_sha256: str
    declared_capacity_chars: int | None
    seed: int | None
    simulated: bool


@dataclass(frozen=True)
class TrajectoryRecords:
    row: Record
    checks: list[Record]
    folds: list[Record]


def _sum_reported(values: Sequence[int | None]) -> int | None:
    return None if any(v is None for v in values) else sum(v or 0 for v in values)


def validity_of(result: TrajectoryResult) -> Validity:
    error = result.error
    return decide(
        ValidityInputs(
            error_kind=error.kind if error else None,
            error_retryable=error.retryable if error else False,
            catch_up=result.catch_up,
            graded=result.grade is not None,
        )
    )


def _endpoint_columns(ctx: RowContext) -> Record:
    ep = ctx.endpoint
    return {
        "model": ep.model,
        "provider": ep.provider,
        "quantization": ep.quantization,
        "family": ep.family,
        "publication_date": ctx.publication_date,
        "context_length": ep.context_length,
        "price_input_per_mtok": ep.prices.input_per_mtok,
        "price_output_per_mtok": ep.prices.output_per_mtok,
    }


def build_records(
    spec: SpecLike,
    ctx: RowContext,
    result: TrajectoryResult,
    started_at: datetime,
    finished_at: datetime,
) -> TrajectoryRecords:
    """Every column of the rows table for one attempt, plus its checks and folds."""
    validity = validity_of(result)
    folds = result.folds
    grade = result.grade
    carrier = result.final_carrier
    capacity = ctx.declared_capacity_chars
    last = folds[-1] if folds else None
    recall_prompt, recall_completion, recall_cached = result.recall_usage
    has_recall = result.answer_text is not None
    prompt_parts = [f.prompt_tokens for f in folds] + ([recall_prompt] if has_recall else [])
    completion_parts = [f.completion_tokens for f in folds] + (
        [recall_completion] if has_recall else []
    )
    row: Record = {
        "run_id": spec.run_id,
        "row_id": spec.row_id,
        "config_id": spec.config_id,
        **_endpoint_columns(ctx),
        "arm": spec.arm,
        "execution_group": spec.execution_group,
        "repeat": spec.repeat,
        "attempt": spec.attempt,
        "schedule_position": spec.schedule_position,
        "scenario": ctx.scenario,
        "fixture_sha256": ctx.fixture_sha256,
        "system_prompt_sha256": ctx.system_prompt_sha256,
        "seed": ctx.seed,
        "simulated": ctx.simulated or result.simulated,
        "schema_adapted": result.schema_adapted,
        "valid": validity.valid,
        "invalid_reason": validity.invalid_reason,
        "retryable": validity.retryable,
        "recall": grade.recall if grade else None,
        "checks_passed": grade.checks_passed if grade else None,
        "checks_total": grade.checks_total if grade else None,
        "carrier_chars": len(carrier),
        "declared_capacity_chars": capacity,
        "fill": (len(carrier) / capacity) if capacity else None,
        "headings_carried": last.headings_carried if last else 0,
        "parse_failures": sum(f.parse_failed for f in folds),
        "folds": len(folds),
        "folds_clipped": sum(f.clipped for f in folds),
        "folds_length_stop": sum(f.finish_reason == "length" for f in folds),
        "prompt_tokens_est": sum(f.prompt_tokens_est for f in folds)
        + result.recall_prompt_tokens_est,
        "prompt_tokens": _sum_reported(prompt_parts),
        "completion_tokens": _sum_reported(completion_parts),
        "cached_tokens": sum(f.cached_tokens for f in folds) + recall_cached,
        "cost_usd": result.cost_usd,
        "requests": result.requests,
        "answer_text": result.answer_text,
        "final_carrier": carrier,
        "abstains": grade.abstains if grade else None,
        "error_detail": result.error.detail if result.error else None,
        "started_at": started_at,
        "finished_at": finished_at,
    }
    checks = [
        {
            "run_id": spec.run_id,
            "row_id": spec.row_id,
            "label": c.label,
            "kind": c.kind,
            "expected": c.expected,
            "answered": c.answered,
            "passed": c.passed,
            "present_in_carrier": c.present_in_carrier,
            "outcome": c.outcome,
            "stock_signature": c.stock_signature,
        }
        for c in (grade.checks if grade else ())
    ]
    fold_records = [
        {
            "run_id": spec.run_id,
            "row_id": spec.row_id,
            "fold_index": f.fold_index,
            "chunks": ",".join(str(i) for i in f.chunks),
            "finish_reason": f.finish_reason,
            "prompt_tokens_est": f.prompt_tokens_est,
            "prompt_tokens": f.prompt_tokens,
            "completion_tokens": f.completion_tokens,
            "cached_tokens": f.cached_tokens,
            "reply_chars": f.reply_chars,
            "carried_chars": f.carried_chars,
            "headings_carried": f.headings_carried,
            "parse_failed": f.parse_failed,
            "clipped": f.clipped,
            "usable": f.usable,
            "carried_text": f.carried_text,
        }
        for f in folds
    ]
    return TrajectoryRecords(row=row, checks=checks, folds=fold_records)


def lost_worker_row(
    spec: SpecLike, ctx: RowContext, detail: str, at: datetime
) -> TrajectoryRecords:
    """The row of an attempt whose worker died mid-flight: infrastructure, retryable."""
    result = TrajectoryResult(
        arm=spec.arm,
        folds=(),
        final_carrier="",
        answer_text=None,
        grade=None,
        catch_up=False,
        error=TrajectoryError("worker_lost", True, detail),
        requests=0,
        cost_usd=0.0,
        schema_adapted=False,
    )
    return build_records(spec, ctx, result, started_at=at, finished_at=at)
