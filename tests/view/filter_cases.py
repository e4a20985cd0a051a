"""The units filter's cases, shared by the Python test and the browser test of the export: both
implementations of the grammar (pipeline/view/filter_expr.py, assets/filter_expr.js) must give
these units and these messages over FILTER_UNITS."""

from __future__ import annotations

from pathlib import Path

PLANTED = "PLANTED-XYZ-991"

FILTER_UNITS: list[dict[str, object]] = [
    {
        "config_id": "cfg-a",
        "arm": "j",
        "recall": 0.8,
        "cost_usd": 0.01,
        "prompt_tokens": 300,
        "answer_text": "ingress port: 23857",
        "final_carrier": "## Facts\ningress port: 23857",
    },
    {
        "config_id": "cfg-a",
        "arm": "q",
        "recall": 0.3,
        "cost_usd": 0.02,
        "prompt_tokens": 400,
        "answer_text": "unknown",
        "final_carrier": "## Facts\nnothing kept",
    },
    {
        "config_id": "cfg-b",
        "arm": "j",
        "valid": False,
        "invalid_reason": "catch_up",
        "error_detail": "fold 2: reply empty",
        "prompt_tokens": 500,
    },
    {
        "config_id": "cfg-b",
        "arm": "q",
        "recall": 0.4,
        "cost_usd": 0.03,
        "prompt_tokens": 600,
        "answer_text": "state path: /srv/x.lock",
        "final_carrier": f"## Facts\nstate path /srv/x.lock\nnote {PLANTED} kept",
    },
    {
        "config_id": "cfg-c",
        "arm": "j",
        "recall": 0.25,
        "cost_usd": 0.04,
        "prompt_tokens": 1200,
        "answer_text": "nothing",
        "final_carrier": "## Facts",
    },
    {
        "config_id": "cfg-c",
        "arm": "q",
        "recall": 0.6,
        "cost_usd": 0.05,
        "prompt_tokens": 700,
        "answer_text": "Port 23857 and /srv/x.lock",
        "final_carrier": "## Facts\nport 23857",
    },
]

A_J, A_Q, B_J, B_Q, C_J, C_Q = (f"{u['config_id']}/{u['arm']}/g0/r0/a0" for u in FILTER_UNITS)

CASES: list[tuple[str, set[str]]] = [
    ('recall < 0.5 and arm = "q"', {A_Q, B_Q}),  # the test
    ("recall < 0.5", {A_Q, B_Q, C_J}),  # an empty recall never matches a number
    ('recall >= 0.5 or verdict = "invalid"', {A_J, C_Q, B_J}),
    ("recall != 0.3", {A_J, B_Q, C_J, C_Q}),
    ('recall = "0.3"', {A_Q}),  # as the table shows it
    ('answer_text contains "23857"', {A_J, C_Q}),
    ("answer_text CONTAINS 'port'", {A_J, C_Q}),  # case ignored, single quotes
    ("answer_text contains 23857", {A_J, C_Q}),  # a number's text
    ('(arm = "j" or config_id = "cfg-c") and valid = "true"', {A_J, C_J, C_Q}),
    ('arm = "j" or config_id = "cfg-c" and valid = "true"', {A_J, B_J, C_J, C_Q}),  # and first
    ('config_id > "cfg-b"', {C_J, C_Q}),
    ("prompt_tokens >= 1000", {C_J}),
    ("prompt_tokens<=400", {A_J, A_Q}),
    ('error_detail contains "reply empty"', {B_J}),
    ("repeat = 0", {A_J, A_Q, B_J, B_Q, C_J, C_Q}),
    ("config_id = 1", set()),  # text that is no number never equals one
    ("cost_usd > 2e-2", {B_Q, C_J, C_Q}),
    ("", {A_J, A_Q, B_J, B_Q, C_J, C_Q}),  # no filter
]

ERRORS: list[tuple[str, str]] = [
    ("recall <", "filter: expected a value (a number or a quoted string) at 9, found the end"),
    ("recall < 0.5 and", "filter: expected a column name at 17, found the end"),
    ("foo = 1", 'filter: no column "foo" at 1'),
    ("arm = q", 'filter: expected a value (a number or a quoted string) at 7, found "q"'),
    ('(arm = "q"', 'filter: expected ")" at 11, found the end'),
    ('arm = "q', "filter: unterminated string at 7"),
    ("recall ~ 1", 'filter: unexpected "~" at 8'),
    ('arm = "q" arm = "j"', 'filter: expected "and", "or" or the end at 11, found "arm"'),
    ("recall 0.5", 'filter: expected an operator (= != < <= > >= contains) at 8, found "0.5"'),
    ("and = 1", 'filter: expected a column name at 1, found "and"'),
]


def filter_run(run_dir: Path) -> Path:
    """A finished run of the units above, written through the store."""
    import json

    from pipeline import studies
    from pipeline.store import write_batch
    from tests.view.rundirs import FIXTURE, finish_run, study_row

    layout = studies.layout(studies.definition("carrier"))
    rows = [
        study_row("carrier", run_id="run-f", model="m", simulated=True, **unit)
        for unit in FILTER_UNITS
    ]
    run_dir.mkdir(parents=True, exist_ok=True)
    write_batch(run_dir, part_name="p0", rows=rows, children={}, layout=layout)
    (run_dir / "fixture.json").write_text(json.dumps(FIXTURE), encoding="utf-8")
    finish_run(run_dir, "run-f", "carrier")
    return run_dir
