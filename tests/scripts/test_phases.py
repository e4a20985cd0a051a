"""The request path's phase attribution (scripts/_phases.py) from a py-spy raw profile."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))

from _phases import LOOP, TRANSFER, classify

GO = "child.<locals>.go (bench_request_path.py:160)"
RUN = "Runner.run (asyncio/runners.py:118)"
STACKS = [
    # aiohttp beneath the client's send: the HTTP send, not aiohttp's own phase
    f"{RUN};_send (pipeline/endpoints/client.py:330);_request (aiohttp/client.py:600) 50",
    # a library frame above the innermost project frame does not move it
    f"{RUN};grade (pipeline/carrier/grade.py:240);match (re/__init__.py:10) 20",
    f"{RUN};data_received (aiohttp/client_proto.py:316) 30",  # no project frame
    "<module> (bench_request_path.py:343);_find_and_load (<frozen importlib>:1) 99",
    f"{GO} 10",  # pickling, in C, under the bench's own coroutine
    f"{GO};Sink.flush (pipeline/sweep/sink.py:183);conform (pipeline/store/parts.py:96) 40",
]


def test_samples_go_to_the_innermost_project_frame_and_start_up_is_left_out(
    tmp_path: Path,
) -> None:
    raw = tmp_path / "profile.txt"
    raw.write_text("\n".join(STACKS) + "\n")
    found = classify(raw)
    assert found.startup == 99
    assert found.phases["HTTP: send and receive (aiohttp beneath)"] == 50
    assert found.phases["protocol: grade"] == 20
    assert found.phases[LOOP] == 30
    assert found.phases[TRANSFER] == 10
    assert found.phases["sink"] == 40
    # the worker's shares leave the phases callgrind counts apart
    assert found.worker_total() == 100
    assert set(found.functions) == {
        "pipeline/endpoints/client.py:_send",
        "pipeline/carrier/grade.py:grade",
        "(event loop)",
    }
