"""Identical requests in flight at once are sent once: the later ones wait for the first.

Why: the response cache answers a request whose twin (same key: endpoint, body, repeat,
position) was answered before, but two units of one worker that reach the twin at the same
moment both miss it and both pay. The traces study's hybrid arm sends its wrapped arm's
requests; staggered units made them meet. A waiter reads the cache once the first is done,
and sends for itself only if the first failed (nothing was stored). One registry per worker
process, in its event loop; replies are still shared only through the cache, so every rule of
the cache (pricing again, TTL, the records) is unchanged.
"""

from __future__ import annotations

import asyncio


class InFlight:
    """The keys being fetched now. A key's event is made only when someone waits for it: this
    is on every request's path, and nearly every fetch has no twin."""

    def __init__(self) -> None:
        self._fetching: dict[str, asyncio.Event | None] = {}

    async def wait_for_twin(self, key: str) -> bool:
        """Wait until a fetch of `key` already under way ends; False when there was none."""
        if key not in self._fetching:
            return False
        done = self._fetching[key]
        if done is None:
            done = self._fetching[key] = asyncio.Event()
        await done.wait()
        return True

    def begin(self, key: str) -> bool:
        """Mark `key` as being fetched; False when a twin already is (this one fetches anyway)."""
        if key in self._fetching:
            return False
        self._fetching[key] = None
        return True

    def end(self, key: str, began: bool) -> None:
        """The fetch `begin` marked has ended, however it ended: wake its waiters."""
        if began:
            done = self._fetching.pop(key)
            if done is not None:
                done.set()
