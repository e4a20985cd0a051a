"""Issue 32 §18: a budget no longer puts the EndpointWorker's constructor arguments in Ray's
object store.

Ray spills every argument that contains an object ref (an actor handle serializes with one)
to the object store, and for an actor with `max_restarts > 0` its core worker then printed
`core_worker.cc:2465 ... E ... has constructor arguments in the object store` on every
budgeted sweep; a restart after those arguments went out of scope would also fail. The gate
now names the budget actor instead of holding its handle.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator

import pytest
import ray

from pipeline.config.schema import BudgetConfig
from pipeline.sweep import actors
from pipeline.sweep.budget_actor import start_budget

pytestmark = pytest.mark.ray


@pytest.fixture
def local_ray() -> Iterator[None]:
    ray_tmp = tempfile.mkdtemp(prefix="fsb", dir="/tmp")  # short: Ray's unix sockets go there
    assert not ray.is_initialized()
    actors.init_ray("local", num_cpus=1, temp_dir=ray_tmp)
    try:
        yield
    finally:
        ray.shutdown()
        shutil.rmtree(ray_tmp, ignore_errors=True)


@ray.remote(num_cpus=0)
def _admit_twice(gate: object) -> tuple[float | None, float | None]:
    import asyncio

    async def both() -> tuple[float | None, float | None]:
        first = await gate.admit(0.4)  # type: ignore[attr-defined]
        second = await gate.admit(0.4)  # type: ignore[attr-defined]
        return first, second

    return asyncio.run(both())


def test_budget_gate_serializes_without_an_object_ref_and_still_admits(local_ray: None) -> None:
    gate = start_budget(BudgetConfig(usd=0.5), spent_usd=0.0, requests=0)
    context = ray._private.worker.global_worker.get_serialization_context()
    assert context.serialize([gate]).contained_object_refs == []  # inlined, not in the store
    first, second = ray.get(_admit_twice.remote(gate))  # the worker side finds the actor by name
    assert first == pytest.approx(0.4)
    assert second is None  # one ledger: the second 0.4 would pass the $0.50 budget
