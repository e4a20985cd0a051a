"""A unit's result -> table records: the shared rows columns around the study's own. Pure.

The engine owns the key, endpoint, seed, outcome and timestamp columns of every row; the
study's runner returns its own columns and its tables' records, to which `run_id` and `row_id`
are added here so that a study never has to know them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from pipeline.config.schema import EndpointConfig
from pipeline.study import Columns, Record, UnitOutcome, UnitResult, UnitSpec
from pipeline.sweep.bill import Bill


@dataclass(frozen=True)
class RowContext:
    """What a row records about where it ran, besides the spec and the study's columns."""

    endpoint: EndpointConfig
    publication_date: str | None
    seed: int | None
    simulated: bool


@dataclass(frozen=True)
class UnitRecords:
    """Everything one attempt adds to the run directory, and its outcome for the coordinator.

    `cut` names why the attempt stopped before its end without a row (`budget_exhausted`):
    its unit is not run, and only its `requests` records (what it sent) are written.
    """

    outcome: UnitOutcome
    row: Record
    tables: Mapping[str, Sequence[Record]]
    bill: Bill = field(default_factory=Bill)
    requests: Sequence[Record] = ()
    cut: str | None = None


def cut_records(
    spec: UnitSpec,
    reason: str,
    bill: Bill,
    requests: Sequence[Record],
    *,
    detail: str | None = None,
) -> UnitRecords:
    """An attempt the engine stopped mid-flight: no row, its requests, its bill; `detail` is
    what the provider said, for a stop it caused (`provider_credits`)."""
    outcome = UnitOutcome(False, reason, retryable=False, error_detail=detail)
    return UnitRecords(outcome, {}, {}, bill, tuple(requests), cut=reason)


def endpoint_columns(ctx: RowContext) -> Record:
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


def unit_records(
    spec: UnitSpec,
    ctx: RowContext,
    result: UnitResult,
    started_at: datetime,
    finished_at: datetime,
    *,
    bill: Bill | None = None,
    requests: Sequence[Record] = (),
) -> UnitRecords:
    """Every column of the rows table for one attempt, plus its study tables' records.

    The bill columns come from the request boundary's `bill`, never from the study."""
    outcome = result.outcome
    bill = bill if bill is not None else Bill()
    shared = {"run_id": spec.run_id, "row_id": spec.row_id}
    engine: Record = {
        **shared,
        "config_id": spec.config_id,
        **endpoint_columns(ctx),
        "arm": spec.arm,
        "execution_group": spec.execution_group,
        "repeat": spec.repeat,
        "attempt": spec.attempt,
        "schedule_position": spec.schedule_position,
        "seed": ctx.seed,
        "simulated": ctx.simulated or bill.simulated,
        "valid": outcome.valid,
        "invalid_reason": outcome.invalid_reason,
        "retryable": outcome.retryable,
        "requests": bill.requests,
        "prompt_tokens": bill.prompt_tokens,
        "completion_tokens": bill.completion_tokens,
        "cached_tokens": bill.cached_tokens,
        "cache_write_tokens": bill.cache_write_tokens,
        "reasoning_tokens": bill.reasoning_tokens,
        "usage_unreported": bill.usage_unreported,
        "cost_usd": bill.cost_usd,
        "billed_usd": bill.billed_usd,
        "spent_usd": bill.spent_usd,
        "cache_hits": bill.cache_hits,
        "error_detail": outcome.error_detail,
        "started_at": started_at,
        "finished_at": finished_at,
    }
    # The engine's columns are exactly the store's shared ones (ROW_KEY, ROW_OUTCOME; the
    # rows schema rejects any other set); checked against this record so that an actor
    # need not import pyarrow for the schema.
    overlap = sorted(set(result.row) & set(engine))
    if overlap:
        raise ValueError(f"a study's row columns may not include shared columns {overlap}")
    row: Record = {**engine, **result.row}
    tables = {name: _keyed(records, shared) for name, records in result.tables.items()}
    return UnitRecords(outcome, row, tables, bill, tuple(requests))


def _keyed(records: Sequence[Record], shared: Record) -> Sequence[Record]:
    """`records` with the shared key columns first: two constant columns of a `Columns`
    (nothing copied per record), a copy of each record otherwise."""
    if isinstance(records, Columns):
        return records.with_leading(shared)
    return [{**shared, **record} for record in records]
