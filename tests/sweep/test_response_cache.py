"""The response cache: content-addressed, whole entries only, a hit is free, odd files miss."""

from __future__ import annotations

from pathlib import Path

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
    assert again.sent == [] and hit == reply
    bill = resumed.bill.bill()
    assert (bill.cost_usd, bill.spent_usd, bill.cache_hits, bill.paid_requests) == (0.5, 0, 1, 0)
    record = resumed.records[0]
    assert record["cache_hit"] and record["cost_usd"] == 0.5 and record["spent_usd"] == 0.0
    assert record["key_hash"] == paid.records[0]["key_hash"] and record["session"] == 1


async def test_without_a_cache_every_request_is_paid_again(tmp_path: Path) -> None:
    inner = Priced()
    for _ in range(2):
        await boundary(inner).complete(user_request("fold 1"))
    assert len(inner.sent) == 2 and not files(tmp_path, "*")


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
    assert len(files(tmp_path)) == 6


def overwrite(path: Path, data: bytes) -> None:
    path.write_bytes(data)


async def test_a_corrupt_or_truncated_entry_is_a_miss_never_a_crash(tmp_path: Path) -> None:
    inner = Priced()
    await boundary(inner, cache_dir=tmp_path).complete(user_request())
    (entry,) = files(tmp_path)
    whole = ResponseCache(tmp_path).path(entry.stem).read_bytes()
    for damaged in (whole[: len(whole) // 2], b"", b"\xff\xfe", b'{"v": 1, "key": 3}',
                    whole.replace(b'"text"', b'"txet"')):  # fmt: skip
        overwrite(entry, damaged)
        await boundary(inner, cache_dir=tmp_path).complete(user_request())
    assert len(inner.sent) == 6
    assert ResponseCache(tmp_path).get(entry.stem) is not None  # the last miss stored it again


async def test_an_entry_is_whole_on_disk_before_the_study_sees_the_reply(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    seen: list[bool] = []

    class StudyLooks(Priced):
        """The caller checks the disk the moment the boundary returns the reply."""

    b = boundary(StudyLooks(), cache_dir=tmp_path)
    await b.complete(user_request())
    seen.append(cache.get(b.records[0]["key_hash"]) is not None)
    assert seen == [True]
    assert not files(tmp_path, "*/.tmp-*")  # written to a temporary name, then renamed


def test_an_expired_shared_entry_is_a_miss_and_prune_removes_it(tmp_path: Path) -> None:
    now = [1000.0]
    cache = ResponseCache(tmp_path, ttl_s=60, clock=lambda: now[0])
    cache.put("ab" + "0" * 30, "chat", {"text": "x"})
    (tmp_path / "ab" / ".tmp-left-by-a-kill").write_bytes(b"{")
    assert cache.get("ab" + "0" * 30) is not None
    now[0] += 61
    assert cache.get("ab" + "0" * 30) is None
    assert cache.stats().expired == 1
    assert cache.prune() == 2 and cache.stats().entries == 0


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
    assert len(files(tmp_path)) == 2
