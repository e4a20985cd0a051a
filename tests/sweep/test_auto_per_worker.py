"""Issue 13 (memory): by default there are no more EndpointWorker processes than CPUs; with
CPUs enough, one endpoint per worker (DESIGN's layout)."""

from __future__ import annotations

import pytest

from pipeline.config import load
from pipeline.sweep.actors import auto_per_worker, endpoint_groups


@pytest.mark.parametrize(
    ("endpoints", "cpus", "per_worker", "processes"),
    [
        (10, 2.0, 5, 2),  # the memory benchmark's panel on a 2-core machine
        (10, 16.0, 1, 10),  # CPUs enough: DESIGN's one endpoint per worker
        (5, 2.0, 3, 2),
        (1, 2.0, 1, 1),
        (3, 0.0, 3, 1),  # a cluster reporting no CPU still gets one worker
    ],
)
def test_auto_grouping_keeps_actor_processes_at_most_the_cpus(
    endpoints: int, cpus: float, per_worker: int, processes: int
) -> None:
    assert auto_per_worker(endpoints, cpus) == per_worker
    ids = [f"e{i}" for i in range(endpoints)]
    assert len(endpoint_groups(ids, per_worker)) == processes


def test_the_default_is_auto_and_a_number_still_pins_it() -> None:
    assert load(["+panel=sim"]).ray.endpoints_per_worker is None
    assert load(["+panel=sim", "ray.endpoints_per_worker=1"]).ray.endpoints_per_worker == 1
