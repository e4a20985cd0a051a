"""RayDispatcher's batching, with fake actor handles (no Ray cluster is started)."""

from __future__ import annotations

from typing import Any

from pipeline.sweep.actors import MAX_BATCH, RayDispatcher, batch_size
from pipeline.sweep.plan import TrajectorySpec


class FakeMethod:
    def __init__(self, name: str, calls: list[tuple[str, Any]]) -> None:
        self.name, self.calls = name, calls

    def remote(self, argument: Any) -> object:
        self.calls.append((self.name, argument))
        return object()  # an opaque ref


class FakeWorker:
    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []
        self.run = FakeMethod("run", self.calls)
        self.run_batch = FakeMethod("run_batch", self.calls)


def specs(config_id: str, n: int) -> list[TrajectorySpec]:
    return [TrajectorySpec("run", config_id, "m", "f", "q", 0, r, 0) for r in range(n)]


def test_batch_size_is_a_quarter_of_the_cap_capped_at_max_batch_and_at_least_one() -> None:
    assert batch_size(2) == 1  # local llama.cpp servers: one attempt per call
    assert batch_size(4) == 1
    assert batch_size(8) == 2
    assert batch_size(100) == MAX_BATCH
    assert batch_size(10_000) == MAX_BATCH


def test_submitted_attempts_go_out_at_poll_in_order_batched_per_endpoint() -> None:
    a, b = FakeWorker(), FakeWorker()
    dispatcher = RayDispatcher({"a": a, "b": b}, caps={"a": 12, "b": 4})
    wanted_a, wanted_b = specs("a", 7), specs("b", 2)
    for spec in [*wanted_a, *wanted_b]:
        dispatcher.submit(spec)
    assert a.calls == [] and b.calls == []  # submit only queues
    assert dispatcher.in_flight("a") == 7 and dispatcher.busy()
    dispatcher._send_queued()
    # cap 12 -> batches of 3, in submission order; the last one holds the remainder
    assert [name for name, _ in a.calls] == ["run_batch", "run_batch", "run"]
    sent = [spec for _, arg in a.calls for spec in (arg if isinstance(arg, list) else [arg])]
    assert sent == wanted_a
    # cap 4 -> one attempt per call, through `run`
    assert b.calls == [("run", wanted_b[0]), ("run", wanted_b[1])]
    assert len(dispatcher.refs) == 5
    assert dispatcher.in_flight("a") == 7  # still in flight until their calls report


def test_an_endpoint_without_a_cap_gets_one_attempt_per_call() -> None:
    worker = FakeWorker()
    dispatcher = RayDispatcher({"a": worker})
    for spec in specs("a", 3):
        dispatcher.submit(spec)
    dispatcher._send_queued()
    assert [name for name, _ in worker.calls] == ["run", "run", "run"]


def test_endpoint_groups_keep_panel_order_and_hold_at_most_per_worker_endpoints() -> None:
    from pipeline.sweep.actors import endpoint_groups

    ids = ["a", "b", "c", "d", "e"]
    assert endpoint_groups(ids, 1) == [["a"], ["b"], ["c"], ["d"], ["e"]]  # DESIGN's layout
    assert endpoint_groups(ids, 2) == [["a", "b"], ["c", "d"], ["e"]]
    assert endpoint_groups(ids, 10) == [ids]
