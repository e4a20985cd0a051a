"""RayDispatcher's batching and live counters, with fake actor handles and a fake `ray.wait` /
`ray.get` (no Ray cluster is started)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from pipeline.study import UnitSpec
from pipeline.sweep.actors import MAX_BATCH, RayDispatcher, batch_size
from pipeline.sweep.progress import EndpointLive, LiveCounts
from pipeline.sweep.rows import UnitRecords
from tests.sweep.rowfactory import records_for


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


def specs(config_id: str, n: int) -> list[UnitSpec]:
    return [UnitSpec("run", config_id, "m", "f", "q", 0, r, 0) for r in range(n)]


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


class Ref:
    """A fake object ref: ready once the test gives it a value."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.ready = False
        self.value: Any = None

    def resolve(self, value: Any) -> None:
        self.ready, self.value = True, value


class FakeRay:
    """`ray.wait` / `ray.get` over `Ref`s, for RayDispatcher.poll without a cluster."""

    def wait(self, refs: list[Ref], num_returns: int, timeout: float) -> tuple[list[Ref], list]:
        ready = [r for r in refs if r.ready][:num_returns]
        return ready, [r for r in refs if r not in ready]

    def get(self, ref: Ref) -> Any:
        if isinstance(ref.value, BaseException):
            raise ref.value
        return ref.value


class LiveWorker:
    """An actor handle whose calls return `Ref`s the test resolves."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, Ref]] = []
        for name in ("run", "run_batch", "live", "pid"):
            setattr(self, name, self._method(name))

    def _method(self, name: str) -> Any:
        worker = self

        class Method:
            def remote(self, *args: Any) -> Ref:
                ref = Ref(name)
                worker.sent.append((name, ref))
                return ref

        return Method()

    def refs(self, name: str) -> list[Ref]:
        return [ref for sent, ref in self.sent if sent == name]


@pytest.fixture
def fake_ray(monkeypatch: pytest.MonkeyPatch) -> None:
    from pipeline.sweep import actors

    monkeypatch.setattr(actors, "ray", FakeRay())


def live_of(*row_ids: str) -> EndpointLive:
    return EndpointLive(3, {row_id: LiveCounts(sent=2, completed=1, steps=1) for row_id in row_ids})


def row(spec: UnitSpec) -> UnitRecords:
    return records_for(spec, valid=True)


def test_live_counters_are_asked_for_per_actor_at_most_every_few_seconds(fake_ray: None) -> None:
    worker = LiveWorker()
    shared, idle = LiveWorker(), LiveWorker()
    dispatcher = RayDispatcher({"a": worker, "b": shared, "c": shared, "d": idle})
    for spec in [*specs("a", 1), *specs("b", 1), *specs("c", 1)]:
        dispatcher.submit(spec)
    dispatcher.poll(0.0)
    assert dispatcher.live() == {}  # never blocks: the replies come with a later poll
    assert len(worker.refs("live")) == 1
    assert len(shared.refs("live")) == 1  # one call for both endpoints of an actor
    assert idle.refs("live") == []  # nothing in flight there
    dispatcher.live()
    assert len(worker.refs("live")) == 1  # not due again yet
    worker.refs("live")[0].resolve({"a": live_of("a/q/g0/r0/a0")})
    dispatcher.poll(0.0)
    assert list(dispatcher.live_view["a"].attempts) == ["a/q/g0/r0/a0"]
    dispatcher.live_due = 0.0
    dispatcher.live()
    assert len(worker.refs("live")) == 2  # answered, and due again
    assert len(shared.refs("live")) == 1  # its first call is still outstanding


def test_a_collected_attempt_leaves_the_live_view_even_from_an_older_snapshot(
    fake_ray: None,
) -> None:
    worker = LiveWorker()
    dispatcher = RayDispatcher({"a": worker})
    first, second = specs("a", 2)
    dispatcher.submit(first)
    dispatcher.submit(second)
    dispatcher.poll(0.0)
    dispatcher.live()
    run_first, run_second = worker.refs("run")
    # The actor took its snapshot before `first` returned, but the driver collects `first`
    # before the snapshot arrives: the snapshot must not count it again.
    run_first.resolve(row(first))
    assert [c.spec for c in dispatcher.poll(0.0)] == [first]
    worker.refs("live")[0].resolve({"a": live_of(first.row_id, second.row_id)})
    assert dispatcher.poll(0.0) == []
    assert list(dispatcher.live_view["a"].attempts) == [second.row_id]
    # A row collected after its snapshot arrived leaves the view at once.
    run_second.resolve(row(second))
    assert [c.spec for c in dispatcher.poll(0.0)] == [second]
    assert dispatcher.live_view["a"].attempts == {}
    assert not dispatcher.busy()  # a live() call is never work the sweep waits for


def test_a_lost_actor_drops_its_live_view_and_is_not_asked_while_restarting(
    fake_ray: None,
) -> None:
    from ray.exceptions import RayActorError

    worker = LiveWorker()
    dispatcher = RayDispatcher({"a": worker})
    (spec,) = specs("a", 1)
    dispatcher.submit(spec)
    dispatcher.poll(0.0)
    dispatcher.live()
    worker.refs("live")[0].resolve({"a": live_of(spec.row_id)})
    dispatcher.poll(0.0)
    assert spec.row_id in dispatcher.live_view["a"].attempts
    dispatcher.live_due = 0.0
    dispatcher.live()
    worker.refs("live")[1].resolve(RayActorError())
    worker.refs("run")[0].resolve(RayActorError())
    (lost,) = dispatcher.poll(0.0)
    assert lost.records is None and "a" not in dispatcher.live_view
    dispatcher.submit(replace(spec, attempt=1))
    dispatcher.live_due = 0.0
    dispatcher.live()
    assert len(worker.refs("live")) == 2  # restarting: not asked until it answers a ping
