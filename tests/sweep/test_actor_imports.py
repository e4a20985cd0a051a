"""Issue 13 (memory): an EndpointWorker process imports what running attempts needs and not
the driver's store, plan or coordinator (Polars alone is ~45 MB of RSS in each of them).
That the engine's row columns are the store's shared ones is tests/sweep/test_rows.py's."""

from __future__ import annotations

import subprocess
import sys

ACTOR_MODULE = "pipeline.sweep.endpoint_actor"
DRIVER_ONLY = ("polars", "pipeline.store", "pipeline.sweep.coordinator", "pipeline.sweep.plan")


def test_the_actor_module_loads_no_driver_only_module() -> None:
    code = (
        f"import sys, {ACTOR_MODULE}, pipeline.carrier.study, pipeline.toolout.study\n"
        f"print(','.join(m for m in {DRIVER_ONLY!r} if m in sys.modules))\n"
    )
    found = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert found == ""


def test_the_actor_class_is_defined_in_the_light_module() -> None:
    from pipeline.sweep.actors import EndpointWorker

    # Ray pickles the class by reference: its actor processes import this module.
    assert EndpointWorker.__ray_metadata__.modified_class.__module__ == ACTOR_MODULE
