"""A tiny reasoning-trace run directory, written through the store as a sweep would write it.

Two configurations: `local-a` serves the Qwen3 template and its server renders it faithfully;
`local-b` serves Kimi-K2's and its "server" renders a variant that keeps all reasoning, so the
two renderers disagree there. Compression units: `naive` keeps no fact, `extractive` every fact.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pipeline import studies
from pipeline.store import write_batch
from pipeline.store.schemas import ROW_KEY, ROW_OUTCOME
from pipeline.traces.compression.arms import finish, load_arm
from pipeline.traces.compression.generator import generate
from pipeline.traces.compression.items import make_item
from pipeline.traces.compression.metrics import score
from pipeline.traces.recital import LIVE_RENDERER, recites
from pipeline.traces.records import ROW_COLUMNS
from pipeline.traces.study import ITEMS_FILE, TEMPLATES_FILE
from pipeline.traces.visibility.render import render
from pipeline.traces.visibility.shapes import all_shapes
from pipeline.traces.visibility.visibility import records_for, shape_body
from tests.traces.templates import KIMI, QWEN3, R2E_PRESERVE, shipped

LAYOUT = studies.layout(studies.definition("traces"))
ALWAYS = (
    "{% for m in messages %}{{ m.role }}: {{ m.content }} {{ m.reasoning_content }}\n{% endfor %}"
)
RUN_ID = "run-test"


def row(config_id: str, arm: str, *, simulated: bool = False, **extra: Any) -> dict[str, Any]:
    names = [n for n, _ in (*ROW_KEY, *ROW_OUTCOME)] + [c.name for c in ROW_COLUMNS]
    record: dict[str, Any] = dict.fromkeys(names)
    record.update(
        run_id=RUN_ID,
        row_id=f"{config_id}/{arm}/g0/r0/a0",
        config_id=config_id,
        model="m",
        arm=arm,
        execution_group=0,
        repeat=0,
        attempt=0,
        schedule_position=0,
        seed=1,
        simulated=simulated,
        valid=True,
        retryable=False,
        requests=0,
    )
    record.update(extra)
    return record


def _head(record: Mapping[str, Any], unit: Mapping[str, Any]) -> dict[str, Any]:
    return {"run_id": RUN_ID, "row_id": unit["row_id"], **record}


def probes(unit: Mapping[str, Any], name: str, live_text: str) -> list[dict[str, Any]]:
    """Offline renders of `name`'s text and "live" renders of `live_text`, every shape."""
    text = shipped()[name]
    records: list[dict[str, Any]] = []
    for shape in all_shapes():
        body = shape_body(shape)
        for renderer, template in (("jinja2-hf", text), (LIVE_RENDERER, live_text)):
            outcome = render(template, body["messages"], tools=body.get("tools"))
            records += records_for(
                name, text, shape, switches={}, body=body, outcome=outcome, renderer=renderer
            )
    return [_head(r, unit) for r in records]


def recitals(unit: Mapping[str, Any], reply: str) -> list[dict[str, Any]]:
    found = []
    for shape in all_shapes()[:3]:
        for secret in shape.secrets:
            found.append(
                _head(
                    {
                        "shape": shape.name,
                        "structure": shape.structure,
                        "dialect": shape.dialect,
                        "content_form": shape.content_form,
                        "args_form": shape.args_form,
                        "question_in": shape.question_in,
                        "secret": secret.token,
                        "secret_field": secret.field,
                        "secret_on_tool_call_turn": secret.on_tool_call_turn,
                        "secret_user_after": secret.user_after,
                        "in_rendered_offline": True,
                        "in_rendered_live": True,
                        "recited": recites(reply, secret.token),
                        "reply_chars": len(reply),
                        "finish_reason": "stop",
                        "prompt_tokens": 10,
                        "error": None,
                    },
                    unit,
                )
            )
    return found


def items() -> list[Any]:
    real = make_item(
        "swe-agent/demo/trajectory[0]",
        "Open src/app.py at line 12: the parse_config call fails with 30 ms latency on port 8080.",
        "swe-agent",
        "demo.traj#trajectory[0]",
    )
    return [real, generate(7, 5000).item]


SENT = {
    "sent_temperature": 0.0,
    "sent_top_p": None,
    "sent_seed": 20260,
    "sent_enable_thinking": False,
    "greedy": True,
    "thinking_state": "off",
    "decoding_problem": None,
    "finish_reason": "stop",
    "prompt_tokens": 100,
    "completion_tokens": 10,
    "repeat_identical": True,
}
NO_REQUEST = dict.fromkeys(SENT)


def compressions(unit: Mapping[str, Any], arm: str) -> list[dict[str, Any]]:
    out = []
    extractive = load_arm(
        {"name": "extractive", "kind": "extractive", "description": "x", "in_seed": False}
    )
    for item in items():
        if arm == "naive":
            summary, sent = "It worked on the bug and then stopped.", SENT
        else:
            summary, sent = finish(extractive, item, None), NO_REQUEST
        tokens = {"token_counter": None, "token_null_reason": "not a local llama-server"}
        out.append(_head({**score(item, summary), **sent, **tokens, "summary": summary}, unit))
    return out


def _inputs(run_dir: Path, names: Sequence[str]) -> None:
    templates = {
        n: {"sha256": hashlib.sha256(shipped()[n].encode()).hexdigest(), "text": shipped()[n]}
        for n in names
    }
    (run_dir / TEMPLATES_FILE).write_text(json.dumps(templates), encoding="utf-8")
    listed = [
        {
            "id": i.id,
            "band": i.band,
            "source": i.source,
            "synthetic": i.synthetic,
            "provenance": i.provenance,
            "chars": len(i.text),
            "text": i.text,
        }
        for i in items()
    ]
    counts = [{"band": "<1k", "available": 1, "taken": 1}]
    payload = {"items": listed, "band_counts": counts}
    (run_dir / ITEMS_FILE).write_text(json.dumps(payload), encoding="utf-8")


def write_run(run_dir: Path, *, simulated: bool = False) -> Path:
    """The run directory: rows, template_probes, recitals, compressions and the inputs."""
    run_dir.mkdir(parents=True, exist_ok=True)
    _inputs(run_dir, (QWEN3, KIMI, R2E_PRESERVE))
    units = [
        ("local-a", QWEN3, shipped()[QWEN3], "no idea"),
        ("local-b", KIMI, ALWAYS, "ZQX-8842 KPL-3107 MVR-5529"),
    ]
    for n, (config_id, name, live, reply) in enumerate(units):
        unit = row(config_id, "visibility", simulated=simulated, part="visibility")
        children = {"template_probes": probes(unit, name, live), "recitals": recitals(unit, reply)}
        write_batch(run_dir, part_name=f"v{n}", rows=[unit], children=children, layout=LAYOUT)
        for arm in ("naive", "extractive"):
            unit = row(config_id, arm, simulated=simulated, part="compression")
            write_batch(
                run_dir,
                part_name=f"c{n}-{arm}",
                rows=[unit],
                children={"compressions": compressions(unit, arm)},
                layout=LAYOUT,
            )
    return run_dir
