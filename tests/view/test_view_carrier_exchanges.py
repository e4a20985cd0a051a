"""Issue 35: the carrier unit page shows every request of the unit, its messages as sent and
its reply, collapsed by default; the messages it rebuilds are the bytes the trajectory sent."""

from __future__ import annotations

import asyncio
import html
import json
import re
from pathlib import Path
from typing import Any

from markupsafe import escape

from pipeline import studies
from pipeline.carrier.arms import build_arms
from pipeline.carrier.config import carrier_config
from pipeline.carrier.fixture import fixture_from_json, render_chunk
from pipeline.carrier.records import RowContext, trajectory_records
from pipeline.carrier.trajectory import TrajectoryInputs, run_trajectory
from pipeline.chat.messages import ChatRequest, ChatResponse
from pipeline.config import load
from pipeline.store import write_batch
from pipeline.study_pages.carrier_exchanges import unit_exchanges
from pipeline.view import open_runs, pages
from pipeline.view.links import Links
from tests.carrier.scripted import ScriptedClient, text
from tests.view.rundirs import CARRIER_ROW, carrier_run, finish_run, full, study_row
from tests.view.test_view_carrier_tool_calls import small_fixture

ROW = "cfg-a/j/g0/r0/a0"
REFUSAL = "I can't help with that."


def scripted_run(run_dir: Path) -> tuple[Path, list[ChatRequest]]:
    """A one-unit run of arm j over the `small` fixture, written from a real trajectory whose
    second fold is refused (catch-up); returns the run and the requests the trajectory sent."""
    study = load(["arms=[j]", "scenario=small"]).study
    arm = build_arms(carrier_config(study).arms)["j"]
    fixture_bytes = json.dumps(small_fixture()).encode()
    fixture = fixture_from_json(fixture_bytes)
    graded = fixture.graded
    summary = "; ".join(f"{g.label}: {g.value}" for g in graded)
    good = text(json.dumps({"summary": summary}, ensure_ascii=False))
    refused = ChatResponse(text="", finish_reason="stop", refusal=REFUSAL)
    answer = "\n".join(f"{g.label}: {g.value}" for g in graded)
    client = ScriptedClient(folds=[good, refused, good], recall=text(answer))
    inputs = TrajectoryInputs(
        arm=arm,
        chunks=fixture.chunks,
        render_chunk=render_chunk,
        chunk_messages=lambda c: [],
        graded=graded,
    )
    result = asyncio.run(run_trajectory(client, inputs))
    context = RowContext("small", "0" * 64, arm.system_prompt_sha256, 9600)
    records = trajectory_records(context, result)
    layout = studies.layout(studies.definition("carrier"))
    row = study_row("carrier", run_id="run-x", config_id="cfg-a", model="m", arm="j")
    row |= {**records.row, "valid": False, "invalid_reason": "catch_up", "requests": 4}
    run_dir.mkdir(parents=True)
    children = {
        name: full(layout, name, [{"run_id": "run-x", "row_id": ROW, **r} for r in table])
        for name, table in records.tables.items()
    }
    write_batch(run_dir, part_name="p0", rows=[row], children=children, layout=layout)
    (run_dir / "fixture.json").write_bytes(fixture_bytes)
    finish_run(run_dir, "run-x", "carrier")
    manifest = json.loads((run_dir / "manifest.json").read_text())
    manifest["config"]["study"] = study  # as a sweep records its resolved config
    (run_dir / "manifest.json").write_text(json.dumps(manifest))
    return run_dir, client.requests


def exchanges(page: str) -> list[str]:
    return re.findall(r'<details class="fold exchange".*?</details>', page, re.S)


def shown(block: str, role: str) -> str:
    """The text of one message of an exchange, unmarked and unescaped."""
    found = re.search(rf'message-{role}">.*?<div class="text[^"]*">(.*?)</div>', block, re.S)
    assert found, f"no {role} message"
    return html.unescape(re.sub(r"</?mark[^>]*>", "", found.group(1)))


def unit_page(run_dir: Path, row_id: str) -> str:
    (run,) = open_runs([run_dir])
    return str(pages.unit(run, Links(), row_id, {}).content)


def test_every_request_shows_the_messages_it_sent_and_its_reply(tmp_path: Path) -> None:
    run_dir, sent = scripted_run(tmp_path / "run")
    blocks = exchanges(unit_page(run_dir, ROW))
    assert len(blocks) == len(sent) == 4  # three folds, then the recall
    # collapsed by default: no `open` attribute on any of them
    assert all(
        re.match(r'<details class="fold exchange" id="exchange-[a-z0-9-]+">', b) for b in blocks
    )
    for block, request in zip(blocks, sent, strict=True):
        system, user = request.messages
        assert shown(block, "system") == system.content
        assert shown(block, "user") == user.content  # carrier in, chunk, instruction: as sent
    schema = html.unescape(blocks[0].split("message-response_format")[1])
    assert '"name": "carrier_j"' in schema and '"maxLength": 9600' in schema
    assert "message-response_format" not in blocks[3]  # the recall asks for plain text


def test_the_unusable_fold_shows_its_raw_reply_and_the_marks(tmp_path: Path) -> None:
    run_dir, _ = scripted_run(tmp_path / "run")
    blocks = exchanges(unit_page(run_dir, ROW))
    unusable = blocks[1]
    assert '<span class="flag">unusable</span><span class="flag">refusal</span>' in unusable
    assert f'<p class="refused">refusal: {escape(REFUSAL)}</p>' in unusable
    assert "<em>(empty)</em>" in unusable  # the refusal came with no content
    fixture = small_fixture()
    graded = fixture["graded"][0]["value"]
    assert f'<mark class="graded">{escape(graded)}</mark>' in blocks[0]
    assert shown(blocks[0], "reply").startswith('{"summary": ')
    assert shown(blocks[3], "reply").splitlines()[0].endswith(graded)


def test_a_run_without_replies_or_arm_config_says_what_it_cannot_show(tmp_path: Path) -> None:
    page = unit_page(carrier_run(tmp_path / "run"), CARRIER_ROW)
    blocks = exchanges(page)
    assert len(blocks) == 3  # two folds and the recall
    assert "not recorded (a run from before reply_text)" in blocks[0]
    assert "the run&#39;s manifest does not configure arm &#39;j&#39;" in blocks[0]
    assert "[operator] state path /srv/x.lock" in shown(blocks[1], "user")


def test_a_changed_system_prompt_is_shown_with_the_recorded_digest(tmp_path: Path) -> None:
    run_dir, _ = scripted_run(tmp_path / "run")
    page = unit_page(run_dir, ROW)
    assert "the run sent one with SHA-256" not in page
    study: dict[str, Any] = load(["arms=[j]", "scenario=small"]).study
    row = {"arm": "j", "system_prompt_sha256": "f" * 64, "answer_text": None}
    fold = {"fold_index": 0, "chunks": "0", "reply_text": "x", "carried_text": "x"}
    (only,) = unit_exchanges(
        {"config": {"study": study}}, row, [fold], fixture=None, refused=None, marks={}
    )
    assert only.messages[0].note.startswith(
        f"today's text of this prompt; the run sent one with SHA-256 {'f' * 64}"
    )
    assert only.messages[1].note == "chunk(s) 0 not in the run's fixture"
