"""The cache state of one account() call, updated in time proportional to what changed.

accounting.py states the rules (what hits, what is written, the causes); this module keeps
the state they read: every prefix an earlier request sent (a trie of prefix ids), how many
blocks an earlier request sent through each (`extent`), when each entry was last written or
read (`cached`) and, for `prefix_units`, which prefixes ended an input or an output (`ends`).

Incremental, as the replay is: a request shares its first `unchanged` blocks with the one
before it, so their prefix ids and token positions are kept, not rebuilt. The prefixes of the
last request (the *path*) carry their extent and (where every read refreshes the entry) their
time lazily, as one value for the whole path; a prefix that leaves the path (a rewrite, or a
shorter request) gets its own values written out first. So a request costs work in the new and
changed blocks, plus the scan from the first changed block that the prefix match needs.
Equal to a full rebuild by construction (tests/golden/test_golden_toolout_replay.py pins it).
"""

from __future__ import annotations

import copy
from collections.abc import Hashable, Sequence
from typing import NamedTuple, Protocol

from pipeline.toolout.cache_models import CacheModel


class Keyed(Protocol):
    """A block as the cache sees it: equal keys are equal bytes."""

    @property
    def key(self) -> Hashable: ...  # equal keys: equal role and text

    @property
    def tokens(self) -> int: ...


class Split(NamedTuple):
    """Token positions of one request: [0, hit) read, [hit, write_end) written, rest input.

    A named tuple: one is built per request."""

    hit: int
    write_end: int
    hit_boundary: int  # blocks of the hit prefix (0: no hit)
    ttl_expiry: int
    below_minimum: int
    granularity: int
    rewrite: int
    cold_start: int


# `tuple.__new__` itself: a named tuple's constructor is a Python function around it.
_tuple = tuple.__new__


class Ledger:
    """The cache state of one transcript's requests, in order (its only owner)."""

    def __init__(self, cache_model: CacheModel, min_tokens: int) -> None:
        self.m = cache_model
        self.min_tokens = min_tokens
        self.ids: dict[tuple[int, Hashable], int] = {}  # (parent prefix id, block key) -> prefix id
        self.extent: dict[int, int] = {}  # prefix id -> most blocks a request sent through it
        self.cached: dict[int, float] = {}  # prefix id -> time the entry was last written/read
        self.ends: set[int] = set()  # prefix_units: prefixes that ended an input or an output
        self.pids = [0]  # the current request's prefix ids by depth (0: the empty prefix)
        self.pos = [0]  # its token positions by depth
        # prefix_units: the deepest depth <= d of the current request whose prefix is in `ends`
        # (0: none), kept beside `pids` so the hit's end unit is found without a walk
        self.end_below = [0]
        # The path: depths 0..path_depth hold the last request's prefixes, whose extent is at
        # least path_sent and (lazy_time) whose entry was last used at path_time.
        self.path_depth = -1
        self.path_sent = 0
        self.path_time = 0.0
        automatic = cache_model.kind in ("automatic_prefix", "prefix_units")
        self.lazy_time = automatic and cache_model.refresh_on_read
        # the model's parameters, read on every request
        self.kind = cache_model.kind
        self.units = cache_model.kind == "prefix_units"
        self.ttl = cache_model.ttl_seconds
        self.outputs_end_units = (
            cache_model.kind == "prefix_units" and cache_model.output_cached
        )  # fmt: skip

    def fork(self) -> Ledger:
        """An independent copy of the state (a search prices several futures from one past)."""
        twin = copy.copy(self)
        twin.ids, twin.extent, twin.cached = dict(self.ids), dict(self.extent), dict(self.cached)
        twin.ends = set(self.ends)
        twin.pids, twin.pos, twin.end_below = list(self.pids), list(self.pos), list(self.end_below)
        return twin

    # -- the path's lazy values ---------------------------------------------------------------

    def _leave_path(self, depth: int) -> None:
        """Write out the values of the path's prefixes deeper than `depth`."""
        for d in range(depth + 1, self.path_depth + 1):
            pid = self.pids[d]
            if self.extent.get(pid, -1) < self.path_sent:
                self.extent[pid] = self.path_sent
            if self.lazy_time and d > 0:
                self.cached[pid] = self.path_time
        self.path_depth = min(self.path_depth, depth)

    def _alive(self, pid: int, now: float) -> bool:
        used = self.cached.get(pid)
        ttl = self.m.ttl_seconds
        return used is not None and (ttl is None or now - used <= ttl)

    # -- one request ----------------------------------------------------------------------------

    def bill(  # noqa: PLR0917 - one request: its blocks, what it shares, its time
        self,
        index: int,
        blocks: Sequence[Keyed],
        count: int,
        unchanged: int,
        breakpoints: Sequence[int],
        output_key: Hashable | None,
        now: float,
    ) -> Split:
        """The split of `blocks[:count]`, whose first `unchanged` blocks are the previous
        request's; `breakpoints` are the boundaries (block counts) the request flags."""
        pids, pos, end_below = self.pids, self.pos, self.end_below
        # keep = max(0, min(unchanged, count, len(pids) - 1)), without the builtins' cost
        keep = unchanged if unchanged < count else count
        top = len(pids) - 1
        keep = keep if keep < top else top
        keep = keep if keep > 0 else 0
        if keep < self.path_depth:
            self._leave_path(keep)
        if keep + 1 < len(pids):
            del pids[keep + 1 :]
            del pos[keep + 1 :]
            del end_below[keep + 1 :]
        ids, ends = self.ids, self.ends
        pid, at, below = pids[-1], pos[-1], end_below[-1]
        for i in range(keep, count):
            block = blocks[i]
            tokens = block.tokens
            if tokens < 0:
                raise ValueError(f"request {index}: token counts must be >= 0")
            pid = ids.setdefault((pid, block.key), len(ids) + 1)  # _id, inline
            at += tokens
            if pid in ends:
                below = i + 1
            pids.append(pid)
            pos.append(at)
            end_below.append(below)
        used = self._breakpoints(breakpoints) if self.kind == "explicit_breakpoints" else ()
        split = self._split(count, used, now)
        self._remember(count, used, output_key, now, split)
        return split

    def _split(  # noqa: PLR0912, PLR0915 - accounting.py's rules inline: called per request
        self, blocks: int, breakpoints: Sequence[int], now: float
    ) -> Split:
        pos = self.pos
        total = pos[-1]
        kind = self.kind
        if kind == "none":
            return _tuple(Split, (0, 0, 0, 0, 0, 0, 0, total))
        # leading blocks an earlier request sent in this order (the path's all were; below
        # it, a prefix some request sent through is in `extent`)
        pids, extent_of, path_depth = self.pids, self.extent, self.path_depth
        shared = path_depth if path_depth < blocks else blocks
        shared = shared if shared > 0 else 0
        while shared < blocks and (shared < path_depth or pids[shared + 1] in extent_of):
            shared += 1
        stored = extent_of.get(pids[shared])  # _extent_at, inline
        if shared <= path_depth:
            extent = self.path_sent if stored is None else max(stored, self.path_sent)
        else:
            extent = 0 if stored is None else stored
        # rewrite_end = min(extent, blocks) if extent > shared else shared
        rewrite_end = shared if extent <= shared else extent if extent < blocks else blocks
        rewrite = pos[rewrite_end] - pos[shared]
        cold = total - pos[rewrite_end]

        write_end: int | None = None
        if kind == "explicit_breakpoints":
            boundary, reachable, write_end = self._breakpoint_hits(breakpoints, shared, now)
            hit = pos[boundary]
            below = pos[shared] < self.min_tokens
        else:
            # the deepest depth <= shared whose entry is alive (0: none), a longer alive entry
            # holding every shorter prefix. Below the path's depth every lazy entry has the
            # path's time: alive all, or none; no depth above it is a lazy one.
            lazy_top = path_depth if self.lazy_time else 0
            cached, ttl = self.cached, self.ttl
            alive = 0
            for depth in range(shared, lazy_top if lazy_top > 0 else 0, -1):
                used = cached.get(pids[depth])
                if used is not None and (ttl is None or now - used <= ttl):
                    alive = depth
                    break
            else:  # the deepest lazy depth, at the path's time (depth 0 holds nothing)
                top = shared if shared < lazy_top else lazy_top
                if top > 0 and (ttl is None or now - self.path_time <= ttl):
                    alive = top
            # The automatic hit when the first k blocks are matched and alive, at the alive
            # depth and at the shared one (every shared prefix was cached): the unit grid or
            # the deepest end unit (prefix_units), or the step; nothing below the minimum.
            matched, full = pos[alive], pos[shared]
            if self.units:
                unit, end_below = self.m.unit_tokens, self.end_below
                grid, end = matched - matched % unit, pos[end_below[alive]]
                hit = grid if grid > end else end
                grid, end = full - full % unit, pos[end_below[shared]]
                reachable = grid if grid > end else end
            else:
                step = self.m.step_tokens
                hit, reachable = matched - matched % step, full - full % step
            least = self.min_tokens
            hit = hit if hit >= least and hit > 0 else 0
            reachable = reachable if reachable >= least and reachable > 0 else 0
            boundary = alive if hit else 0
            below = reachable == 0
        if below:
            ttl, below_min, granularity = 0, pos[shared] - hit, 0
        else:
            ttl, below_min, granularity = reachable - hit, 0, pos[shared] - reachable
            if kind == "explicit_breakpoints" and shared < min(extent, blocks):
                # the rewrite moved the match end away from every entry a breakpoint can reach
                rewrite, granularity = rewrite + granularity, 0
        if write_end is None or write_end < hit:
            write_end = hit
        return _tuple(Split, (hit, write_end, boundary, ttl, below_min, granularity, rewrite, cold))

    def _breakpoints(self, flagged: Sequence[int]) -> list[int]:
        """Boundaries (block count) closed by the breakpoints this request uses."""
        most = self.m.max_breakpoints
        if len(flagged) <= most:
            return list(flagged)
        return list(flagged[-1:]) if most == 1 else [flagged[0], *flagged[-(most - 1) :]]

    def _breakpoint_hits(
        self, breakpoints: Sequence[int], shared: int, now: float
    ) -> tuple[int, int, int | None]:
        """(hit boundary, hit tokens had nothing expired, write end) for explicit breakpoints."""
        pids, pos = self.pids, self.pos
        reach: set[int] = set()
        for b in breakpoints:
            reach.update(range(max(1, b - self.m.lookback_blocks), min(b, shared) + 1))
        boundary = reachable = 0
        for i in sorted(reach, reverse=True):
            if pids[i] in self.cached:
                reachable = max(reachable, pos[i])
                if self._alive(pids[i], now):
                    boundary = i
                    break
        eligible = [b for b in breakpoints if pos[b] >= self.min_tokens]
        write_end = pos[max(eligible)] if eligible else None
        return boundary, reachable, write_end

    def _remember(  # noqa: PLR0912 - one branch per cache kind's rule, as accounting.py lists
        self,
        blocks: int,
        breakpoints: Sequence[int],
        output_key: Hashable | None,
        now: float,
        split: Split,
    ) -> None:
        pids, pos = self.pids, self.pos
        kind = self.kind
        sent = blocks
        out_pid: int | None = None
        if self.outputs_end_units and output_key is not None:
            out_pid = self.ids.setdefault((pids[-1], output_key), len(self.ids) + 1)  # _id
            sent = blocks + 1
        if sent < self.path_sent:
            self._leave_path(-1)  # a shorter request: the path's extent cannot be lowered
        if not self.lazy_time and kind in ("automatic_prefix", "prefix_units"):
            for pid in pids[1:]:  # stored; a read refreshes nothing, so only dead ones reset
                if not self._alive(pid, now):
                    self.cached[pid] = now
        self.path_depth, self.path_sent, self.path_time = blocks, sent, now
        if out_pid is not None and self.extent.get(out_pid, -1) < sent:
            self.extent[out_pid] = sent
        if kind == "none":
            return
        if kind == "explicit_breakpoints":
            for b in breakpoints:
                if pos[b] >= self.min_tokens and (
                    self.m.refresh_on_read or not self._alive(pids[b], now)
                ):
                    self.cached[pids[b]] = now
            if split.hit_boundary and self.m.refresh_on_read:
                self.cached[pids[split.hit_boundary]] = now
            return
        if kind == "prefix_units":
            self.ends.add(pids[-1])
            self.end_below[-1] = len(pids) - 1
            if out_pid is not None:
                self.cached[out_pid] = now
                self.ends.add(out_pid)
