"""The response cache: content-addressed, whole entries only, a hit is free, odd files miss."""

from __future__ import annotations

import zlib
from dataclasses import replace
from pathlib import Path

import pytest

from pipeline.sweep.response_cache import ResponseCache
from tests.endpoints.conftest import (
    ScriptedServer,
    chat_reply,
    endpoint_config,
    open_test_client,
    user_request,
)
from tests.sweep.boundary_kit import Priced, boundary, spec


def files(root: Path, pattern: str = "*/*.json") -> list[Path]:
    """The cache's entry files (a sync helper: the async tests do no blocking I/O)."""
    return list(root.glob(pattern))


async def test_a_second_session_is_answered_from_the_cache_at_no_cost(tmp_path: Path) -> None:
    first, again = Priced(cost=0.5), Priced(cost=0.5)
    paid = boundary(first, cache_dir=tmp_path)
    reply = await paid.complete(user_request("fold 1"))
    resumed = boundary(again, cache_dir=tmp_path, session=1)
    hit = await resumed.complete(user_request("fold 1"))
    # the same reply, its cost priced again at this endpoint's prices (none: $0; issue 32)
    assert again.sent == [] and hit == replace(reply, cost_usd=0.0)
    bill = resumed.bill.bill()
    assert (bill.cost_usd, bill.spent_usd, bill.cache_hits, bill.paid_requests) == (0, 0, 1, 0)
    record = resumed.records[0]
    assert record["cache_hit"] and record["cost_usd"] == 0.0 and record["spent_usd"] == 0.0
    assert record["key_hash"] == paid.records[0]["key_hash"] and record["session"] == 1


async def test_without_a_cache_every_request_is_paid_again(tmp_path: Path) -> None:
    inner = Priced()
    for _ in range(2):
        await boundary(inner).complete(user_request("fold 1"))
    assert len(inner.sent) == 2 and not files(tmp_path, "*")


def entries(root: Path) -> int:
    return ResponseCache(root).stats().entries


async def test_repeats_seeds_and_positions_never_share_an_entry(tmp_path: Path) -> None:
    inner = Priced()
    await boundary(inner, cache_dir=tmp_path, unit=spec(repeat=0)).complete(user_request())
    await boundary(inner, cache_dir=tmp_path, unit=spec(repeat=1)).complete(user_request())
    await boundary(inner, cache_dir=tmp_path).complete(user_request(seed=1))
    await boundary(inner, cache_dir=tmp_path).complete(user_request(seed=2))
    b = boundary(inner, cache_dir=tmp_path, unit=spec(repeat=5))
    await b.complete(user_request())
    await b.complete(user_request())  # the same body at the next position
    assert len(inner.sent) == 6
    assert entries(tmp_path) == 6


def damage(segment: Path, how: str) -> None:
    data = segment.read_bytes()
    header, _, rest = data.partition(b"\n")
    damaged = {
        "truncated": data[: len(data) - 7],
        "empty": b"",
        "flipped": header + b"\n" + rest[:10] + bytes([rest[10] ^ 1]) + rest[11:],
        "version": data.replace(b"FSC1", b"FSC9", 1),
        "garbage": b"\xff\xfe not a segment\n",
        "not_a_reply": header.rsplit(b" ", 2)[0] + b" 2 %08x\n{}\n" % zlib.crc32(b"{}"),
    }[how]
    segment.write_bytes(damaged)


@pytest.mark.parametrize("how", ["truncated", "empty", "flipped", "version", "garbage",
                                 "not_a_reply"])  # fmt: skip
async def test_a_corrupt_or_truncated_entry_is_a_miss_never_a_crash(
    tmp_path: Path, how: str
) -> None:
    inner = Priced()
    await boundary(inner, cache_dir=tmp_path).complete(user_request())
    (segment,) = files(tmp_path, "seg-*.log")
    damage(segment, how)
    again = boundary(inner, cache_dir=tmp_path)
    await again.complete(user_request())
    assert len(inner.sent) == 2 and not again.records[0]["cache_hit"]
    third = boundary(inner, cache_dir=tmp_path)
    await third.complete(user_request())  # the miss stored a whole entry again
    assert len(inner.sent) == 2 and third.records[0]["cache_hit"]


async def test_an_entry_is_whole_on_disk_before_the_study_sees_the_reply(tmp_path: Path) -> None:
    b = boundary(Priced(), cache_dir=tmp_path)
    await b.complete(user_request())
    # a new reader (as a killed process's resume would be) finds it at once
    assert ResponseCache(tmp_path).get(b.records[0]["key_hash"]) is not None


async def test_a_torn_tail_left_by_a_kill_hides_only_that_record(tmp_path: Path) -> None:
    inner = Priced()
    b = boundary(inner, cache_dir=tmp_path)
    await b.complete(user_request("one"))
    await b.complete(user_request("two"))
    (segment,) = files(tmp_path, "seg-*.log")
    cut(segment, 5)  # the second record's last bytes never reached the file
    cache = ResponseCache(tmp_path)
    assert cache.get(b.records[0]["key_hash"]) is not None
    assert cache.get(b.records[1]["key_hash"]) is None


def cut(path: Path, count: int) -> None:
    path.write_bytes(path.read_bytes()[:-count])


def test_an_expired_shared_entry_is_a_miss_and_prune_removes_it(tmp_path: Path) -> None:
    now = [1000.0]
    cache = ResponseCache(tmp_path, ttl_s=60, clock=lambda: now[0])
    cache.put("ab" + "0" * 30, "chat", {"text": "x"})
    now[0] += 30
    cache.put("cd" + "0" * 30, "chat", {"text": "y"})
    assert cache.get("ab" + "0" * 30) is not None
    now[0] += 40
    assert cache.get("ab" + "0" * 30) is None and cache.get("cd" + "0" * 30) is not None
    assert cache.stats().expired == 1
    cache.close()
    assert cache.prune().expired == 1 and cache.stats().entries == 1
    assert cache.get("cd" + "0" * 30) is not None


async def test_the_key_hashes_the_body_as_sent_over_http(tmp_path: Path) -> None:
    routes = {"/v1/chat/completions": [chat_reply(), chat_reply()]}
    async with ScriptedServer(routes).running() as server:
        ep = endpoint_config(server.base_url, max_output_tokens=40)
        async with open_test_client(ep) as http:
            await boundary(http, endpoint=ep, cache_dir=tmp_path).complete(
                user_request(max_tokens=2400)
            )
            # asking for 3000 is capped to the same 40: the same body, so the same entry
            await boundary(http, endpoint=ep, cache_dir=tmp_path).complete(
                user_request(max_tokens=3000)
            )
            other = endpoint_config(server.base_url, max_output_tokens=41)
            await boundary(http, endpoint=other, cache_dir=tmp_path).complete(
                user_request(max_tokens=3000)
            )
    # a cap of 41 sends another body: another entry, another request
    assert [r.body["max_tokens"] for r in server.received] == [40, 41]
    assert entries(tmp_path) == 2
