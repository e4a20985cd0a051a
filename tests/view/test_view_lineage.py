"""Fact lineage in the viewer (issue 35 item 2): the carrier unit page's lineage table and
flagged fold chain, and the overview's facts most often lost, in process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.study_pages import carrier_lost
from pipeline.view import export_html, open_runs, pages
from pipeline.view.links import Links
from tests.view.rundirs import finish_run, full, study_row

LOST_ROW = "cfg-a/j/g0/r0/a0"
KEPT_ROW = "cfg-a/q/g0/r0/a0"
PORT, PATH = "23857", "/srv/x.lock"
FIXTURE = {
    "chunks": [
        {"index": i, "messages": [{"role": "user", "content": text}]}
        for i, text in enumerate(
            [f"the ingress port is {PORT}", f"state path {PATH}", "chatter", "more chatter"]
        )
    ],
    "planted": [
        {"label": "ingress port", "value": PORT, "graded": True, "chunk": 0},
        {"label": "state path", "value": PATH, "graded": True, "chunk": 1},
    ],
}


Record = dict[str, object]


def _unit(
    row_id: str, arm: str, carried: list[str], repeat: int = 0
) -> tuple[Record, list[Record], list[Record]]:
    row = study_row(
        "carrier",
        repeat=repeat,
        run_id="run-l",
        row_id=row_id,
        config_id="cfg-a",
        model="m",
        arm=arm,
        simulated=True,
        recall=0.5,
        checks_passed=1,
        checks_total=2,
        final_carrier=carried[-1],
        answer_text=f"ingress port: 11111\nstate path: {PATH}",
    )
    folds = [
        {
            "run_id": "run-l",
            "row_id": row_id,
            "fold_index": i,
            "chunks": str(i),
            "usable": True,
            "finish_reason": "stop",
            "carried_text": text,
        }
        for i, text in enumerate(carried)
    ]
    check: Record = {"run_id": "run-l", "row_id": row_id}
    checks: list[Record] = [
        {**check, "label": "ingress port", "kind": "port", "expected": PORT},
        {**check, "label": "state path", "kind": "path", "expected": PATH},
    ]
    checks[0] |= {"answered": "11111", "passed": False, "outcome": "fabrication"}
    checks[1] |= {"answered": PATH, "passed": True, "outcome": "passed"}
    for c in checks:
        c["present_in_carrier"] = str(c["expected"]) in carried[-1]
    return row, folds, checks


def lineage_run(run_dir: Path, *, repeats: int = 1) -> Path:
    """Units of four folds: in arm j the ingress port is held at folds 0 and 1 and lost at
    fold 2; in arm q both values are kept to the end; `repeats` units of each arm."""
    from pipeline import studies
    from pipeline.store import write_batch

    layout = studies.layout(studies.definition("carrier"))
    both = f"ingress port: {PORT}\nstate path: {PATH}"
    units = [
        unit
        for r in range(repeats)
        for unit in (
            _unit(
                LOST_ROW.replace("/r0/", f"/r{r}/"),
                "j",
                [f"ingress port: {PORT}", both, f"state path: {PATH}", PATH],
                r,
            ),
            _unit(
                KEPT_ROW.replace("/r0/", f"/r{r}/"),
                "q",
                [f"ingress port: {PORT}", both, both, both],
                r,
            ),
        )
    ]
    run_dir.mkdir(parents=True, exist_ok=True)
    for n, (row, folds, checks) in enumerate(units):
        write_batch(
            run_dir,
            part_name=f"p{n}",
            rows=[row],
            children={
                "folds": full(layout, "folds", folds),
                "checks": full(layout, "checks", checks),
            },
            layout=layout,
        )
    (run_dir / "fixture.json").write_text(json.dumps(FIXTURE), encoding="utf-8")
    finish_run(run_dir, "run-l", "carrier")
    return run_dir


def _row(html: str, label: str) -> str:
    start = html.index(f'<tr class="lineage-row" data-label="{label}"')
    return html[start : html.index("</tr>", start)]


def test_the_lineage_row_of_a_value_lost_at_fold_2_says_fold_2(tmp_path: Path) -> None:
    (run,) = open_runs([lineage_run(tmp_path / "run")])
    html = str(pages.unit(run, Links(), LOST_ROW, {}).content)
    port = _row(html, "ingress port")
    assert 'data-first-lost="2"' in port and '<td class="first-lost fail">fold 2</td>' in port
    cells = [
        '<span class="lineage-cell lineage-present" title="fold 0: present">0✓</span>',
        '<span class="lineage-cell lineage-present" title="fold 1: present">1✓</span>',
        '<span class="lineage-cell lineage-lost" title="fold 2: lost">2✗</span>',
        '<span class="lineage-cell lineage-lost" title="fold 3: lost">3✗</span>',
    ]
    assert "".join(cells) in port
    assert "<td>false</td>" in port and "fabrication" in port
    path = _row(html, "state path")
    assert "lineage-absent" in path and "lineage-lost" not in path and ">kept<" in path


def test_the_fold_that_lost_a_value_is_flagged_with_its_count_and_names(
    tmp_path: Path,
) -> None:
    (run,) = open_runs([lineage_run(tmp_path / "run")])
    html = str(pages.unit(run, Links(), LOST_ROW, {}).content)
    assert '<div class="fold" id="fold-2" data-lost="1">' in html
    assert (
        '<span class="flag lineage-lost" title="first lost here: ingress port (23857)">'
        "✗ lost 1</span>"
    ) in html
    assert html.count("data-lost=") == 1


def test_the_overview_counts_facts_first_lost_per_arm_and_fold(tmp_path: Path) -> None:
    (run,) = open_runs([lineage_run(tmp_path / "run")])
    lost = carrier_lost.facts_most_often_lost(run)
    assert lost.note is None and not lost.capped and lost.read == lost.valid == 2
    by_arm = {a.arm: a for a in lost.arms}
    assert by_arm["j"].by_fold == {2: 1} and by_arm["j"].top == [("ingress port", "port", 1)]
    assert by_arm["q"].lost == 0 and by_arm["q"].values == 2
    html = str(pages.overview(run, Links()).content)
    assert '<table id="facts-lost-table"' in html and "<th>fold 2</th>" in html
    row = html[html.index('<tr data-arm="j">') :]
    assert '<td class="num lineage-lost-count" data-fold="2">1</td>' in row
    assert "ingress port" in row[: row.index("</tr>")]


def test_the_overview_says_when_it_capped_the_units_it_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(carrier_lost, "MAX_UNITS", 2)
    (run,) = open_runs([lineage_run(tmp_path / "run", repeats=2)])
    lost = carrier_lost.facts_most_often_lost(run)
    assert lost.capped and lost.read == 2 and lost.valid == 4
    html = str(pages.overview(run, Links()).content)
    assert "over 2 valid unit(s)" in html
    assert "capped: at most 1 unit(s) of each arm, the first by row id, of 4 valid units" in html


def test_a_run_whose_folds_hold_no_carried_text_says_so_in_one_line(tmp_path: Path) -> None:
    from pipeline import studies
    from pipeline.store import write_batch

    layout = studies.layout(studies.definition("carrier"))
    row, folds, checks = _unit(LOST_ROW, "j", ["", ""])
    for fold in folds:
        fold["carried_text"] = None
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    write_batch(
        run_dir,
        part_name="p0",
        rows=[row],
        children={"folds": full(layout, "folds", folds), "checks": full(layout, "checks", checks)},
        layout=layout,
    )
    finish_run(run_dir, "run-l", "carrier")
    (run,) = open_runs([run_dir])
    html = str(pages.overview(run, Links()).content)
    assert '<p class="lineage-note">No fact lineage: the valid units' in html
    assert "facts-lost-table" not in html


def test_the_export_shows_the_lineage_and_the_facts_lost(tmp_path: Path) -> None:
    (run,) = open_runs([lineage_run(tmp_path / "run")])
    html = export_html(run)
    assert 'id="facts-lost-table"' in html and 'data-first-lost="2"' in html
