"""Fidelity and compression of one summary of one trace, as a flat record for a Parquet row.

`score(trace, summary, count_tokens=None)` returns a `Record` (a flat dict of scalars):
- `compression_chars` = trace characters / summary characters (higher is shorter), and
  `compression_tokens` the same in tokens when a token-count callable is given; both are None
  for an empty summary (an undefined ratio, not infinity, so means stay finite) and the row
  says `empty_summary`.
- Per kind (path, line_ref, identifier, number): `facts_<kind>` distinct facts in the trace,
  `retained_<kind>` of them present in the summary, `retention_<kind>` their ratio (None when
  the trace has none of that kind: nothing to retain is not perfect retention);
  `summary_facts_<kind>` distinct facts in the summary, `supported_<kind>` of them present in
  the trace, `precision_<kind>` their ratio (None when the summary has none) and
  `invented_<kind>` the rest: facts the summary states that the trace did not contain.
- Totals over kinds: `retention` and `precision` pool the counts (micro averages), so a trace
  with many paths weighs paths accordingly; `invented` is the total count.
"Present" is the shared rule of matching.py; duplicates count once on both sides.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence

from pipeline.traces.compression.facts import KINDS, Fact, extract
from pipeline.traces.compression.items import TraceItem
from pipeline.traces.compression.matching import split

Scalar = str | int | float | bool | None
Record = dict[str, Scalar]

_ITEM_COLUMNS = ("item_id", "band", "source", "synthetic", "trace_chars", "summary_chars")
_SIZE_COLUMNS = ("empty_summary", "compression_chars", "trace_tokens", "summary_tokens")
_PER_KIND = ("facts", "retained", "summary_facts", "supported", "retention", "precision")
_TOTALS = (
    *("facts_total", "retained_total", "retention"),
    *("summary_facts_total", "supported_total", "precision", "invented"),
)
# Every key of a `score` record, in order: the table's columns (for docs/tables.md).
COLUMNS: tuple[str, ...] = (
    *_ITEM_COLUMNS,
    *_SIZE_COLUMNS,
    "compression_tokens",
    "summary_sha256",
    *(f"{name}_{kind}" for kind in KINDS for name in (*_PER_KIND, "invented")),
    *_TOTALS,
)


def ratio(numerator: int, denominator: int) -> float | None:
    return numerator / denominator if denominator else None


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _fidelity(
    trace: str, summary: str, trace_facts: Sequence[Fact], summary_facts: Sequence[Fact]
) -> Record:
    kept = set(split(trace_facts, summary, summary_facts).present)
    supported = set(split(summary_facts, trace, trace_facts).present)
    record: Record = {}
    totals = {"facts": 0, "retained": 0, "summary_facts": 0, "supported": 0}
    for kind in KINDS:
        counts = {
            "facts": sum(1 for f in trace_facts if f.kind == kind),
            "retained": sum(1 for f in kept if f.kind == kind),
            "summary_facts": sum(1 for f in summary_facts if f.kind == kind),
            "supported": sum(1 for f in supported if f.kind == kind),
        }
        for name, value in counts.items():
            record[f"{name}_{kind}"] = value
            totals[name] += value
        record[f"retention_{kind}"] = ratio(counts["retained"], counts["facts"])
        record[f"precision_{kind}"] = ratio(counts["supported"], counts["summary_facts"])
        record[f"invented_{kind}"] = counts["summary_facts"] - counts["supported"]
    record["facts_total"] = totals["facts"]
    record["retained_total"] = totals["retained"]
    record["retention"] = ratio(totals["retained"], totals["facts"])
    record["summary_facts_total"] = totals["summary_facts"]
    record["supported_total"] = totals["supported"]
    record["precision"] = ratio(totals["supported"], totals["summary_facts"])
    record["invented"] = totals["summary_facts"] - totals["supported"]
    return record


def score(
    trace: TraceItem,
    summary: str,
    count_tokens: Callable[[str], int] | None = None,
    trace_facts: Sequence[Fact] | None = None,
) -> Record:
    """The record of one summary (`trace_facts`: `extract(trace.text)` if already known)."""
    known = extract(trace.text) if trace_facts is None else tuple(trace_facts)
    record: Record = {
        "item_id": trace.id,
        "band": trace.band,
        "source": trace.source,
        "synthetic": trace.synthetic,
        "trace_chars": len(trace.text),
        "summary_chars": len(summary),
        "empty_summary": not summary.strip(),
        "compression_chars": None if not summary.strip() else len(trace.text) / len(summary),
        "trace_tokens": None,
        "summary_tokens": None,
        "compression_tokens": None,
        "summary_sha256": sha256(summary),
    }
    if count_tokens is not None:
        trace_tokens, summary_tokens = count_tokens(trace.text), count_tokens(summary)
        record["trace_tokens"] = trace_tokens
        record["summary_tokens"] = summary_tokens
        if summary.strip() and summary_tokens:
            record["compression_tokens"] = trace_tokens / summary_tokens
    record.update(_fidelity(trace.text, summary, known, extract(summary)))
    return record
