"""The oracle arm: given the transcript's whole future, when to rewrite each output.

It bounds what a policy of the deterministic kind could save: for every eligible tool output
(at least 2,000 bytes and not forced exact: the same safety floor every policy keeps), it picks
the request from which the output shows its deterministic block (head, tail, size, SHA-256,
rerun), or never, to minimise the transcript's cost under the configuration's cache model,
knowing every later request. Decisions:

- The search is coordinate descent: outputs in transcript order, each tried at its first
  exposure and at never, keeping the cheapest; two passes (a second pass can move an output
  once the others are placed). It is a bound in practice, not a proven optimum over all joint
  schedules. Showing the block from a later request instead pays for the exact text until then
  and a rewrite of the cached suffix after, so it can only win on a cache model's rounding;
  trying every later request as well (the search before issue 20) made the search cubic in the
  transcript's length, hours per long transcript, and found the same schedules on the whole
  shipped corpus (docs/toolout.md has the measured differences on generated transcripts).
- The compacted form is the deterministic block, the most a policy can remove while keeping
  evidence of what was there; dropping outputs outright is not an option of the oracle.
Pure: the cost of a schedule is a function handed in by the runner (replay + accounting).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from pipeline.toolout.policies.base import NEVER, OutputView, Recheck, Rendering, compacted, exact
from pipeline.toolout.policies.forced_exact import MIN_ELIGIBLE_BYTES, forced_exact
from pipeline.toolout.policies.modes import DEFAULT_RERUN, deterministic_replacement
from pipeline.toolout.transcript import Transcript

NAME = "oracle"
PASSES = 2
Schedule = Mapping[int, int]  # output index -> first request that shows its compacted form


@dataclass(frozen=True)
class ScheduledPolicy:
    """Shows each scheduled output's deterministic block from its scheduled request on."""

    schedule: Schedule = field(default_factory=dict)
    name: str = NAME
    stable: bool = True  # once compacted, the same block on every later request

    def render(self, view: OutputView) -> Rendering:
        start = self.schedule.get(view.output_index)
        if start is None or view.request_index < start:
            return exact(view, "oracle_keeps", "" if start is None else f"from request {start}")
        text = deterministic_replacement(view.tool_name, view.arguments, view.content, "")
        return compacted(view, text, "deterministic", f"oracle: from request {start}")

    def recheck(self, view: OutputView, rendering: Rendering) -> Recheck:
        start = self.schedule.get(view.output_index)
        if rendering.changed or start is None or view.request_index >= start:
            return NEVER
        return Recheck(request_index=start)


def eligible_outputs(transcript: Transcript) -> list[tuple[int, int]]:
    """(output index, first request that shows it) of every output the oracle may rewrite."""
    found = []
    requests_before = 0
    index = 0
    for message in transcript.messages:
        if message.role == "assistant":
            requests_before += 1
        elif message.is_tool_output:
            big = message.size_bytes >= MIN_ELIGIBLE_BYTES
            if big and forced_exact(message.name or "", message.content or "") is None:
                found.append((index, requests_before))
            index += 1
    return [(o, first) for o, first in found if first < requests_before]


def oracle_schedule(transcript: Transcript, cost: Callable[[Schedule], float]) -> dict[int, int]:
    """The cheapest schedule the coordinate descent finds (see the module docstring)."""
    schedule: dict[int, int] = {}
    best = cost(schedule)
    for _ in range(PASSES):
        moved = False
        for output, first in eligible_outputs(transcript):
            current = schedule.get(output)
            options: list[int | None] = [None, first]
            for option in options:
                if option == current:
                    continue
                trial = {k: v for k, v in schedule.items() if k != output}
                if option is not None:
                    trial[output] = option
                value = cost(trial)
                if value < best - 1e-15:
                    best, schedule, current, moved = value, trial, option, True
        if not moved:
            break
    return schedule


__all__ = ["DEFAULT_RERUN", "NAME", "ScheduledPolicy", "eligible_outputs", "oracle_schedule"]
