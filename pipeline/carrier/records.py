"""A trajectory's result as the carrier study's records: its row columns, checks and folds.

Pure: no I/O. The engine adds the shared columns (key, endpoint, seed, outcome, timestamps);
this module owns the carrier's own ones (docs/tables.md documents each). The row's token and
cost totals are the engine's (the request boundary counts every request); the folds table
keeps each fold request's own reported usage.
"""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.carrier.trajectory import TrajectoryError, TrajectoryResult
from pipeline.carrier.validity import ValidityInputs, decide
from pipeline.study import Column, Record, TableSpec, UnitOutcome, UnitResult
from pipeline.study_validity import infrastructure

ROW_COLUMNS: tuple[Column, ...] = (
    Column("scenario", "string"),
    Column("fixture_sha256", "string"),
    Column("system_prompt_sha256", "string"),
    Column("schema_adapted", "bool"),
    Column("recall", "float64"),
    Column("checks_passed", "int32"),
    Column("checks_total", "int32"),
    Column("carrier_chars", "int64"),
    Column("declared_capacity_chars", "int64"),
    Column("fill", "float64"),
    Column("headings_carried", "int32"),
    Column("parse_failures", "int32"),
    Column("folds", "int32"),
    Column("folds_clipped", "int32"),
    Column("folds_length_stop", "int32"),
    Column("prompt_tokens_est", "int64"),
    Column("answer_text", "string"),
    Column("final_carrier", "string"),
    Column("abstains", "bool"),
)

CHECKS = TableSpec(
    "checks",
    (
        Column("label", "string"),
        Column("kind", "string"),
        Column("expected", "string"),
        Column("answered", "string"),
        Column("passed", "bool"),
        Column("present_in_carrier", "bool"),
        Column("outcome", "string"),  # passed | abstention | fabrication | missing
        Column("stock_signature", "bool"),
    ),
    sort_keys=("row_id", "label"),
)

FOLDS = TableSpec(
    "folds",
    (
        Column("fold_index", "int32"),
        Column("chunks", "string"),  # comma-separated chunk indices folded in this request
        Column("finish_reason", "string"),
        Column("prompt_tokens_est", "int64"),
        Column("prompt_tokens", "int64"),
        Column("completion_tokens", "int64"),
        Column("cached_tokens", "int64"),
        Column("reply_chars", "int64"),
        Column("carried_chars", "int64"),
        Column("headings_carried", "int32"),
        Column("parse_failed", "bool"),
        Column("clipped", "bool"),
        Column("usable", "bool"),
        Column("carried_text", "string"),
        Column("reply_text", "string"),
        Column("reply_refusal", "string"),
    ),
    sort_keys=("row_id", "fold_index"),
    added_later=frozenset({"reply_text", "reply_refusal"}),  # issue 35
)

TABLES = (CHECKS, FOLDS)


@dataclass(frozen=True)
class RowContext:
    """What a carrier row records about its inputs, besides the result."""

    scenario: str
    fixture_sha256: str
    system_prompt_sha256: str
    declared_capacity_chars: int | None


def outcome_of(result: TrajectoryResult) -> UnitOutcome:
    """Validity (carrier/validity.py, THE rule) of one trajectory; the engine bills it."""
    error = result.error
    validity = decide(
        ValidityInputs(
            error_kind=error.kind if error else None,
            error_retryable=error.retryable if error else False,
            catch_up=result.catch_up,
            graded=result.grade is not None,
        )
    )
    return UnitOutcome(
        valid=validity.valid,
        invalid_reason=validity.invalid_reason,
        retryable=validity.retryable,
        error_detail=error.detail if error else None,
    )


def trajectory_records(ctx: RowContext, result: TrajectoryResult) -> UnitResult:
    """The carrier's row columns, checks and folds of one attempt."""
    folds = result.folds
    grade = result.grade
    carrier = result.final_carrier
    capacity = ctx.declared_capacity_chars
    last = folds[-1] if folds else None
    row: Record = {
        "scenario": ctx.scenario,
        "fixture_sha256": ctx.fixture_sha256,
        "system_prompt_sha256": ctx.system_prompt_sha256,
        "schema_adapted": result.schema_adapted,
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
        "answer_text": result.answer_text,
        "final_carrier": carrier,
        "abstains": grade.abstains if grade else None,
    }
    checks = [
        {
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
            "reply_text": f.reply_text,
            "reply_refusal": f.reply_refusal,
        }
        for f in folds
    ]
    return UnitResult(outcome_of(result), row, {CHECKS.name: checks, FOLDS.name: fold_records})


def lost_row(ctx: RowContext, arm: str) -> Record:
    """The row of an attempt whose worker died mid-flight: what any trajectory that ended
    before its first fold records (its inputs, zero counts); the engine adds the outcome."""
    result = TrajectoryResult(
        arm=arm,
        folds=(),
        final_carrier="",
        answer_text=None,
        grade=None,
        catch_up=False,
        error=TrajectoryError(infrastructure("worker_lost"), True, ""),
        schema_adapted=False,
    )
    return trajectory_records(ctx, result).row
