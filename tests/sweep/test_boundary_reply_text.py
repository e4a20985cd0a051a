"""Issue 35: a request's record leads to its reply: `key_hash` names the cached reply, and
with no cache (`cache.scope=off`) the record holds the reply text itself."""

from __future__ import annotations

from pathlib import Path

from pipeline.sweep.response_cache import ResponseCache
from tests.endpoints.conftest import user_request
from tests.sweep.boundary_kit import Priced, Renders, boundary


async def test_without_a_cache_the_record_holds_the_reply_text() -> None:
    b = boundary(Priced())
    reply = await b.complete(user_request("fold 1"))
    (record,) = b.records
    assert record["reply_text"] == reply.text == "reply 1" and record["key_hash"] is None


async def test_with_a_cache_the_record_names_the_stored_reply_instead(tmp_path: Path) -> None:
    b = boundary(Priced(), cache_dir=tmp_path)
    reply = await b.complete(user_request("fold 1"))
    (record,) = b.records
    assert record["reply_text"] is None
    entry = ResponseCache(tmp_path).get(record["key_hash"])
    assert entry is not None and entry.reply["text"] == reply.text


async def test_without_a_cache_a_rendering_keeps_its_prompt() -> None:
    b = boundary(Renders())
    prompt = await b.apply_template(user_request("fold 1"))
    assert b.records[0]["reply_text"] == prompt == "<prompt>fold 1</prompt>"
