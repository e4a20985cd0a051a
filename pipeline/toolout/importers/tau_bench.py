"""tau-bench historical trajectories (`gpt-4o-airline.json`): a JSON array of runs.

Each run `{task_id, trial, reward, info, traj}` is one transcript with id
`tau-bench/<file stem>/task<task_id>-trial<trial>`; its `traj` is OpenAI Chat Completions
messages (assistant `tool_calls`, `role: "tool"` results) read as they are. A malformed run is
reported as `run <i>` (its index in the array) and does not stop the other runs
(`parse_records`); `parse` raises on the first. `reward`, `task_id`, `trial` and
`info.user_cost` go to `meta`. The file records no timestamps or per-request usage.
"""

from __future__ import annotations

from typing import Any

from pipeline.toolout.importers._common import (
    ChatBuilder,
    Parsed,
    chat_message,
    decode_json,
    expect_array,
    expect_object,
    first_error,
    opt_object,
    req_array,
    req_int,
    transcript_id,
)
from pipeline.toolout.transcript import Transcript, TranscriptError

CORPUS = "tau-bench"


def _run(raw: Any, index: int, source: str) -> Transcript:
    record = f"run {index}"
    run = expect_object(raw, source, record)
    task_id = req_int(run, "task_id", source, record)
    trial = req_int(run, "trial", source, record)
    builder = ChatBuilder(source)
    for j, message in enumerate(req_array(run, "traj", source, record)):
        where = f"{record} traj[{j}]"
        builder.add(chat_message(message, source, where), where)
    info = opt_object(run, "info", source, record)
    return Transcript(
        id=transcript_id(CORPUS, source, f"task{task_id}-trial{trial}"),
        corpus=CORPUS,
        source=source,
        messages=tuple(builder.messages),
        meta={
            "task_id": task_id,
            "trial": trial,
            "reward": run.get("reward"),
            "user_cost": info.get("user_cost"),
        },
    )


def parse_records(data: bytes, source: str) -> list[Parsed]:
    """One entry per run, in file order: its transcript or its problem.

    A file that is not JSON or not an array raises: no run can be read from it.
    """
    runs = expect_array(decode_json(data, source), source, "file")
    parsed: list[Parsed] = []
    for i, raw in enumerate(runs):
        try:
            parsed.append(_run(raw, i, source))
        except TranscriptError as error:
            parsed.append(error)
    return parsed


def parse(data: bytes, source: str) -> list[Transcript]:
    """Every run's transcript; the first malformed run raises `TranscriptError`."""
    return first_error(parse_records(data, source))
