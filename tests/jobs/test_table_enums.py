"""Each enum column docs/tables.md documents lists exactly the values the code writes (issue 13).

The documented values of a column are the backticked tokens of its meaning cell (a cause table:
its first column). The producible values come from the code's own source of them: a Literal,
a constant table, the fixture's value drawer, or, where the values are string literals at the
call sites (event kinds, decision reasons), an AST scan of those call sites.
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from random import Random
from typing import get_args

import pytest
import yaml

from jobs.carrier.thresholds import THRESHOLDS
from pipeline.carrier.fixture_values import draw_facts
from pipeline.carrier.grade import Outcome
from pipeline.toolout.accounting import MISS_CAUSES
from pipeline.toolout.cache_models import parse_cache_model
from pipeline.toolout.economics import Reason as GateReason
from pipeline.toolout.importers import CORPORA
from pipeline.toolout.policies.base import TRANSFORMED, Mode
from pipeline.traces.compression.greedy import ThinkingState
from pipeline.traces.recital import LIVE_RENDERER, OFFLINE_RENDERER
from pipeline.traces.visibility.classify import VISIBILITY_CLASSES
from pipeline.traces.visibility.shapes import STRUCTURES, all_shapes

ROOT = Path(__file__).resolve().parents[2]
TABLES_MD = ROOT / "docs" / "tables.md"
_BACKTICKED = re.compile(r"`([^`]+)`")


def doc_tables() -> dict[str, dict[str, dict[str, str]]]:
    """{### heading: {first header cell: {row's first cell: row's last cell}}} of tables.md."""
    tables: dict[str, dict[str, dict[str, str]]] = {}
    heading, header = "", ""
    for line in TABLES_MD.read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            heading, header = line.lstrip("#").strip(), ""
            continue
        if not line.startswith("|"):
            header = ""
            continue
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
        if set(line) <= set("|-: "):
            continue
        if not header:
            header = cells[0]
            tables.setdefault(heading, {})[header] = {}
            continue
        tables[heading][header][cells[0]] = cells[-1]
    return tables


def documented(heading_start: str, column: str) -> set[str]:
    """The backticked values of `column`'s meaning in the one table under `heading_start`."""
    headings = [h for h in doc_tables() if h.startswith(heading_start)]
    assert len(headings) == 1, f"docs/tables.md: want one heading {heading_start!r}, {headings}"
    rows = doc_tables()[headings[0]].get("column", {})
    assert column in rows, f"docs/tables.md {headings[0]!r}: no row for column {column!r}"
    return set(_BACKTICKED.findall(rows[column]))


def documented_first_column(heading_start: str, header: str) -> set[str]:
    """The first-column values of the table whose first header cell is `header`."""
    for heading, tables in doc_tables().items():
        if heading.startswith(heading_start) and header in tables:
            return set(tables[header])
    raise AssertionError(f"docs/tables.md: no table headed {header!r} under {heading_start!r}")


def _calls(paths: list[Path]) -> Iterator[tuple[Path, ast.Module, ast.Call]]:
    for path in paths:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                yield path, tree, node


def _callee(call: ast.Call) -> str:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


def _strings(node: ast.AST) -> set[str]:
    return {
        n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)
    }


def _assigned_strings(tree: ast.Module, target: ast.expr) -> set[str]:
    """String constants assigned anywhere in the module to the same expression as `target`."""
    wanted = ast.unparse(target)
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(ast.unparse(t) == wanted for t in targets):
                found |= _strings(node.value)
    return found


def event_kinds() -> set[str]:
    """First arguments of every `<sink>.event(kind, ...)` call in the pipeline."""
    kinds: set[str] = set()
    for path, tree, call in _calls(sorted((ROOT / "pipeline").rglob("*.py"))):
        if _callee(call) != "event" or not isinstance(call.func, ast.Attribute) or not call.args:
            continue
        first = call.args[0]
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            kinds.add(first.value)
            continue
        resolved = _assigned_strings(tree, first)
        where = f"{path.relative_to(ROOT)}:{call.lineno}"
        assert resolved, f"events.kind: cannot resolve the kind {ast.unparse(first)} at {where}"
        kinds |= resolved
    return kinds


def decision_reasons() -> set[str]:
    """Every reason a toolout policy can record: exact(view, REASON), the forced-exact layer's
    ForcedExact(REASON, ...), the keyword extractor's (text, REASON) answers, and transformed."""
    paths = sorted((ROOT / "pipeline" / "toolout").rglob("*.py"))
    reasons = {TRANSFORMED}
    for _, _, call in _calls(paths):
        name = _callee(call)
        if name == "exact" and len(call.args) >= 2:
            reasons |= _strings(call.args[1])
        elif name == "ForcedExact" and call.args:
            reasons |= _strings(call.args[0])
    keyword = ast.parse((ROOT / "pipeline/toolout/policies/modes.py").read_text(encoding="utf-8"))
    for node in ast.walk(keyword):
        if isinstance(node, ast.FunctionDef) and node.name == "keyword_extract":
            for ret in ast.walk(node):
                if isinstance(ret, ast.Return) and isinstance(ret.value, ast.Tuple):
                    reasons |= _strings(ret.value.elts[1])
    return reasons - {""}


def checks_kinds() -> set[str]:
    """Kinds of the graded facts the fixture's value drawer plants (what checks rows carry)."""
    return {f.kind for seed in range(5) for f in draw_facts(Random(seed)) if f.graded}


def plan_statuses() -> set[str]:
    """Statuses the engine writes: the plan's `"status": ...` and the session's write-back."""
    statuses: set[str] = set()
    plan = ast.parse((ROOT / "pipeline/sweep/plan.py").read_text(encoding="utf-8"))
    for node in ast.walk(plan):
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                if isinstance(key, ast.Constant) and key.value == "status":
                    statuses |= _strings(value)
    session = ast.parse((ROOT / "pipeline/sweep/session.py").read_text(encoding="utf-8"))
    for node in ast.walk(session):
        if isinstance(node, ast.ListComp) and isinstance(node.elt, ast.IfExp):
            statuses |= _strings(node.elt)
    return statuses


def cache_model_names() -> set[str]:
    return {
        parse_cache_model(yaml.safe_load(p.read_text(encoding="utf-8")), origin=str(p)).name
        for p in sorted((ROOT / "data" / "cache-models").glob("*.yaml"))
    }


def shape_values(column: str) -> set[str]:
    """The values of a shape column over the whole shape matrix (what template_probes holds)."""
    return {str(getattr(shape, column)) for shape in all_shapes()}


def traces_verdicts() -> set[str]:
    from jobs.traces.recital import VERDICTS

    return set(VERDICTS)


def traces_sources() -> set[str]:
    from jobs.traces.matrix import ENDPOINT, SHIPPED, USER

    return {SHIPPED, USER, ENDPOINT}


def _table_name(heading_start: str) -> str:
    return heading_start.split("(", maxsplit=1)[0].strip("` ")


ENUM_COLUMNS: list[tuple[str, str, Callable[[], set[str]]]] = [
    ("plan (", "status", plan_statuses),
    ("checks (", "kind", checks_kinds),
    ("checks (", "outcome", lambda: set(get_args(Outcome))),
    ("events (", "kind", event_kinds),
    ("`threshold_", "threshold", lambda: set(THRESHOLDS)),
    ("rows (toolout", "cache_model", cache_model_names),
    ("turns (", "corpus", lambda: set(CORPORA)),
    ("decisions (", "mode", lambda: set(get_args(Mode))),
    ("decisions (", "reason", decision_reasons),
    ("decisions (", "gate_reason", lambda: set(get_args(GateReason))),
    ("template_probes (", "renderer", lambda: {OFFLINE_RENDERER, LIVE_RENDERER}),
    ("template_probes (", "structure", lambda: set(STRUCTURES)),
    ("template_probes (", "dialect", lambda: shape_values("dialect")),
    ("template_probes (", "content_form", lambda: shape_values("content_form")),
    ("template_probes (", "args_form", lambda: shape_values("args_form")),
    ("template_probes (", "question_in", lambda: shape_values("question_in")),
    ("compressions (", "thinking_state", lambda: set(get_args(ThinkingState))),
    ("`RUN_DIR/analysis/template_classes", "visibility", lambda: set(VISIBILITY_CLASSES)),
    ("`RUN_DIR/analysis/template_classes", "source", traces_sources),
    ("`RUN_DIR/analysis/recital_verdicts", "verdict", traces_verdicts),
]


@pytest.mark.parametrize(
    ("heading", "column", "produce"),
    ENUM_COLUMNS,
    ids=[f"{_table_name(h)}.{c}" for h, c, _ in ENUM_COLUMNS],
)
def test_documented_enum_values_are_the_produced_ones(
    heading: str, column: str, produce: Callable[[], set[str]]
) -> None:
    docs, code = documented(heading, column), produce()
    assert code, f"{heading}{column}: the code source produced no values (test is broken)"
    name = f"docs/tables.md {_table_name(heading)}.{column}"
    assert not code - docs, f"{name}: produced but undocumented: {sorted(code - docs)}"
    assert not docs - code, f"{name}: documented but never produced: {sorted(docs - code)}"


def test_miss_cause_table_lists_every_cause() -> None:
    docs = documented_first_column("Tool-output study tables", "cause")
    assert docs == set(MISS_CAUSES), f"docs/tables.md cause table: {docs ^ set(MISS_CAUSES)}"


def test_a_wrong_doc_value_fails_naming_the_column(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The issue's own example: checks.kind documented as `tag` and `name` fails, naming it."""
    text = TABLES_MD.read_text(encoding="utf-8").replace("`release_tag`", "`tag`")
    old_docs = tmp_path / "tables.md"
    old_docs.write_text(text.replace("`department`", "`name`"), encoding="utf-8")
    monkeypatch.setattr(sys.modules[__name__], "TABLES_MD", old_docs)
    with pytest.raises(AssertionError, match=r"checks\.kind: produced but undocumented"):
        test_documented_enum_values_are_the_produced_ones("checks (", "kind", checks_kinds)
