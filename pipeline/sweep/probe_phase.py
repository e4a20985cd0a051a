"""The probe phase at panel scale: an estimate said before it starts, a window of
configurations probed at once, and a stop honoured between replies (issue 32 §9).

Why: a 10,000-configuration panel was still probing after 3 minutes (7,645 requests, 2.96 GB,
no plan), with every probe call submitted to Ray at once, replies collected in panel order
behind the slowest, and SIGTERM ignored until the last one; the run dir was then left with no
plan. Here:

- **Estimate first.** Before the first probe request, one line on stderr: configurations,
  requests (each shape once when its first sample is `ok`, up to `probe.samples` times), and
  a duration. The duration is the larger of the endpoints' own bounds (requests over each
  endpoint's or limit group's `rpm`) and the waves the window allows (a configuration's shapes
  are sent one after another, at `NOMINAL_REQUEST_S` each where nothing tells better: a
  stated guess, never a measured figure).
- **A window.** At most `PROBE_WINDOW` configurations are probed at once; the next starts
  when one finishes. Ray's object refs, the actors' requests in flight and the replies not yet
  read are bounded by the window, not by the panel.
- **A stop.** The driver waits on the window with a short timeout and asks `should_stop`
  between waits; a stop raises `PlanStopped` (the session is closed `failed`: a run dir that
  never got a plan cannot be resumed).

Verdicts are handed back in panel order, as before, whatever order they finished in.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pipeline.config.schema import EndpointConfig
from pipeline.sweep.plan_bounds import PlanStopped

PROBE_WINDOW = 64  # configurations probed at once
NOMINAL_REQUEST_S = 2.0  # a probe request's time where no limit says more (a guess)
WAIT_S = 0.5  # the longest a stop waits to be seen


@dataclass(frozen=True)
class ProbeEstimate:
    """What the probe phase is expected to send and take."""

    configs: int
    requests_min: int  # every shape ok at its first sample
    requests_max: int  # every shape sampled `samples` times
    seconds: float
    rate_bound: bool  # the duration is set by rate limits, not by the window's waves

    def line(self) -> str:
        why = (
            "at the endpoints' rate limits"
            if self.rate_bound
            else (f"{PROBE_WINDOW} configurations at a time, ~{NOMINAL_REQUEST_S:g} s a request")
        )
        span = (
            f"{self.requests_min:,}"
            if self.requests_min == self.requests_max
            else f"{self.requests_min:,} to {self.requests_max:,}"
        )
        return (
            f"probing {self.configs:,} configuration{'' if self.configs == 1 else 's'}: "
            f"{span} requests, about {_duration(self.seconds)} ({why})"
        )


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{max(1, math.ceil(seconds))} s"
    if seconds < 5400:
        return f"{math.ceil(seconds / 60)} min"
    return f"{seconds / 3600:.1f} h"


def estimate_probing(
    shapes: Mapping[str, tuple[EndpointConfig, int]], samples: int, window: int = PROBE_WINDOW
) -> ProbeEstimate:
    """`shapes`: config_id -> (its endpoint, the shapes probed on it)."""
    low = sum(n for _, n in shapes.values())
    rate_s = 0.0
    by_group: dict[str, tuple[float, int]] = {}
    for endpoint, n in shapes.values():
        limits = endpoint.limits
        if limits.rpm:
            rate_s = max(rate_s, n * 60.0 / limits.rpm)
        if limits.group is not None and limits.group.rpm:
            rpm, sent = by_group.get(limits.group.name, (limits.group.rpm, 0))
            by_group[limits.group.name] = (rpm, sent + n)
    for rpm, sent in by_group.values():
        rate_s = max(rate_s, sent * 60.0 / rpm)
    longest = max((n for _, n in shapes.values()), default=0)
    waves_s = math.ceil(len(shapes) / max(1, window)) * longest * NOMINAL_REQUEST_S
    return ProbeEstimate(len(shapes), low, low * samples, max(rate_s, waves_s), rate_s > waves_s)


def collect_probes(
    config_ids: Sequence[str],
    submit: Callable[[str], Any],
    *,
    should_stop: Callable[[], bool] | None = None,
    window: int = PROBE_WINDOW,
) -> dict[str, Any]:
    """config_id -> what its probe call returned, at most `window` calls in flight.

    `submit(config_id)` starts one configuration's probe and returns its Ray object ref.
    A stop asked for between waits raises PlanStopped (calls in flight are left to Ray's
    shutdown)."""
    import ray

    results: dict[str, Any] = {}
    queue = iter(config_ids)
    pending: dict[Any, str] = {}
    while True:
        if should_stop is not None and should_stop():
            raise PlanStopped("a stop was asked for while the panel was probed")
        while len(pending) < window:
            config_id = next(queue, None)
            if config_id is None:
                break
            pending[submit(config_id)] = config_id
        if not pending:
            return {cid: results[cid] for cid in config_ids}
        ready, _ = ray.wait(list(pending), num_returns=1, timeout=WAIT_S)
        for ref in ready:
            results[pending.pop(ref)] = ray.get(ref)
