"""Canonical JSON of a fixture, its SHA-256, and a loader that names what is wrong.

Canonical form: `json.dumps(sort_keys=True, ensure_ascii=False, separators=(",", ":"))`
encoded as UTF-8, so the same fixture is the same bytes (and the same SHA-256) everywhere.
Every message carries all its keys (`name`, `tool_calls`, `tool_call_id` even when empty).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from pipeline.carrier.fixture_model import (
    CARRIERS,
    ROLES,
    Chunk,
    Fact,
    Fixture,
    Message,
    ToolCall,
    render_chunk,
)
from pipeline.usererror import UserError


class FixtureError(UserError):
    """A fixture file is missing, unreadable or malformed; the message names the problem."""


def fixture_dict(fx: Fixture) -> dict[str, Any]:
    return {
        "scenario": fx.scenario,
        "seed": fx.seed,
        "version": fx.version,
        "chunks": [
            {"index": c.index, "messages": [_message_dict(m) for m in c.messages]}
            for c in fx.chunks
        ],
        "planted": [_fact_dict(f, with_graded=True) for f in fx.planted],
        "graded": [_fact_dict(f, with_graded=False) for f in fx.graded],
    }


def fixture_json(fx: Fixture) -> bytes:
    """The canonical bytes of `fx`."""
    text = json.dumps(fixture_dict(fx), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return text.encode("utf-8")


def fixture_sha256(fx: Fixture) -> str:
    """Hex SHA-256 of the canonical bytes; recorded in every row and the manifest."""
    return hashlib.sha256(fixture_json(fx)).hexdigest()


def load_fixture(path: str | Path) -> Fixture:
    """Read and validate a fixture file; raise FixtureError naming the problem."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise FixtureError(f"cannot read fixture {path}: {exc.strerror or exc}") from None
    try:
        return fixture_from_json(data)
    except FixtureError as exc:
        raise FixtureError(f"fixture {path}: {exc}") from None


def fixture_from_json(data: bytes) -> Fixture:
    """Parse canonical (or any equivalent) JSON into a Fixture, validating every field."""
    try:
        raw = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise FixtureError("not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise FixtureError(f"not valid JSON ({exc.msg} at line {exc.lineno})") from None
    top = _obj(raw, "fixture")
    chunks = tuple(_chunk(c, f"chunks[{i}]") for i, c in enumerate(_list(top, "chunks", "")))
    planted = tuple(
        _fact(f, f"planted[{i}]", None) for i, f in enumerate(_list(top, "planted", ""))
    )
    listed = tuple(_fact(f, f"graded[{i}]", True) for i, f in enumerate(_list(top, "graded", "")))
    graded = _resolve_graded(listed, planted)
    fx = Fixture(
        _str(top, "scenario", ""),
        _int(top, "seed", ""),
        _str(top, "version", ""),
        chunks,
        planted,
        graded,
    )
    _check_consistent(fx)
    return fx


def _check_consistent(fx: Fixture) -> None:
    if [c.index for c in fx.chunks] != list(range(len(fx.chunks))):
        raise FixtureError("chunk indexes must be 0, 1, 2, ... in order")
    if sum(f.graded for f in fx.planted) != len(fx.graded):
        raise FixtureError("planted and graded disagree on which facts are graded")
    labels = [f.label for f in fx.planted]
    if len(set(labels)) != len(labels):
        raise FixtureError("planted fact labels are not unique")
    rendered = [render_chunk(c) for c in fx.chunks]
    for fact in fx.planted:
        if not 0 <= fact.chunk < len(rendered) or fact.value not in rendered[fact.chunk]:
            raise FixtureError(f"value of {fact.label!r} does not appear in chunk {fact.chunk}")


def _resolve_graded(listed: tuple[Fact, ...], planted: tuple[Fact, ...]) -> tuple[Fact, ...]:
    """The planted record of each listed graded fact (it also knows the fact's carrier)."""
    by_key = {(f.label, f.value, f.kind, f.chunk): f for f in planted if f.graded}
    resolved = []
    for fact in listed:
        match = by_key.get((fact.label, fact.value, fact.kind, fact.chunk))
        if match is None:
            raise FixtureError(f"graded fact {fact.label!r} is not among the planted facts")
        resolved.append(match)
    return tuple(resolved)


def _message_dict(m: Message) -> dict[str, Any]:
    return {
        "role": m.role,
        "content": m.content,
        "name": m.name,
        "tool_calls": [
            {"id": c.id, "name": c.name, "arguments": c.arguments} for c in m.tool_calls
        ],
        "tool_call_id": m.tool_call_id,
    }


def _fact_dict(f: Fact, *, with_graded: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"label": f.label, "value": f.value, "kind": f.kind, "chunk": f.chunk}
    if with_graded:
        out["graded"] = f.graded
        out["carrier"] = f.carrier
    return out


def _chunk(raw: Any, where: str) -> Chunk:
    obj = _obj(raw, where)
    messages = _list(obj, "messages", where)
    return Chunk(
        _int(obj, "index", where),
        tuple(_message(m, f"{where}.messages[{i}]") for i, m in enumerate(messages)),
    )


def _message(raw: Any, where: str) -> Message:
    obj = _obj(raw, where)
    role = _str(obj, "role", where)
    if role not in ROLES:
        raise FixtureError(f"{where}.role: expected one of {', '.join(ROLES)}, got {role!r}")
    calls: list[ToolCall] = []
    for i, raw_call in enumerate(_list(obj, "tool_calls", where, [])):
        at = f"{where}.tool_calls[{i}]"
        call = _obj(raw_call, at)
        calls.append(
            ToolCall(_str(call, "id", at), _str(call, "name", at), _str(call, "arguments", at))
        )
    return Message(
        role,
        _str(obj, "content", where),
        _opt_str(obj, "name", where),
        tuple(calls),
        _opt_str(obj, "tool_call_id", where),
    )


def _fact(raw: Any, where: str, graded: bool | None) -> Fact:
    obj = _obj(raw, where)
    if graded is None:
        flag = obj.get("graded")
        if not isinstance(flag, bool):
            raise FixtureError(f"{where}.graded: expected true or false")
        graded = flag
    carrier = _opt_str(obj, "carrier", where) or ""
    if carrier and carrier not in CARRIERS:
        raise FixtureError(f"{where}.carrier: expected one of {', '.join(CARRIERS)}")
    return Fact(
        _str(obj, "label", where),
        _str(obj, "value", where),
        _str(obj, "kind", where),
        graded,
        _int(obj, "chunk", where),
        carrier,
    )


def _obj(raw: Any, where: str) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise FixtureError(f"{where}: expected an object")
    return raw


def _list(obj: dict[str, Any], key: str, where: str, default: list[Any] | None = None) -> list[Any]:
    value = obj.get(key, default)
    if not isinstance(value, list):
        raise FixtureError(f"{_at(where, key)}: expected a list")
    return value


def _str(obj: dict[str, Any], key: str, where: str) -> str:
    value = obj.get(key)
    if not isinstance(value, str):
        raise FixtureError(f"{_at(where, key)}: expected a string")
    return value


def _opt_str(obj: dict[str, Any], key: str, where: str) -> str | None:
    value = obj.get(key)
    if value is not None and not isinstance(value, str):
        raise FixtureError(f"{_at(where, key)}: expected a string or null")
    return value


def _int(obj: dict[str, Any], key: str, where: str) -> int:
    value = obj.get(key)
    if not isinstance(value, int) or isinstance(value, bool):
        raise FixtureError(f"{_at(where, key)}: expected an integer")
    return value


def _at(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key
