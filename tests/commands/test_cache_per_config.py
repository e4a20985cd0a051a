"""Issue 35 §7: `cache list` per configuration and model, and `cache clear --config ID`.

The entries are written by the request boundary, as a sweep writes them."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.chat.messages import ChatMessage, ChatRequest, ChatResponse, Usage
from pipeline.cli import main
from pipeline.endpoints.usage import cost_usd, upper_usage
from pipeline.endpoints.wire import build_body, encode_body
from pipeline.study import UnitSpec
from pipeline.sweep.boundary import reply_to_json
from pipeline.sweep.response_cache import Origin, ResponseCache
from tests.endpoints.conftest import endpoint_config
from tests.sweep.boundary_kit import boundary
from tests.sweep.test_boundary_money import PRICES, Replies

WITH_USAGE = ChatResponse("ok", "stop", Usage(1000, 10), cost_usd=cost_usd(Usage(1000, 10), PRICES))
BILLED = ChatResponse("billed", "stop", Usage(500, 5), cost_usd=0.2, billed_usd=0.25)
NO_USAGE = ChatResponse("a reply of some length", "stop", Usage(), cost_usd=0.0)


def request(n: int) -> ChatRequest:
    return ChatRequest((ChatMessage("user", f"fold chunk {n} " * 40),), max_tokens=100)


async def pay(cache_dir: Path, config_id: str, model: str, *replies: ChatResponse) -> None:
    """Send one request per reply through the boundary of `config_id`, caching each."""
    endpoint = endpoint_config(config_id=config_id, model=model, prices=PRICES)
    unit = UnitSpec("run", config_id, model, "test", "j", 0, 0, 0)
    edge = boundary(Replies(*replies), endpoint=endpoint, cache_dir=cache_dir, unit=unit)
    for n in range(len(replies)):
        await edge.complete(request(n))
    edge.context.cache.close()  # type: ignore[union-attr]


def run_dir(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    run.mkdir()
    (run / "manifest.json").write_text("{}")
    return run


def upper_cost() -> float:
    """cfg-b's reply without usage, billed as the boundary bills it: an upper estimate."""
    endpoint = endpoint_config(config_id="cfg-b", model="model-b", prices=PRICES)
    body = encode_body(build_body(endpoint, request(0))[0])
    return cost_usd(upper_usage(Usage(), len(body), NO_USAGE.text, 100), PRICES)


def table(out: str) -> dict[str, list[str]]:
    """The per-configuration rows of `cache list`, by their first two cells."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("configuration"))
    rows = {}
    for line in lines[start + 1 :]:
        if line.startswith("USD:"):
            break
        cells = line.replace("unknown configuration", "unknown-configuration").split()
        rows[f"{cells[0]} {cells[1]}"] = cells[2:]
    return rows


def payload_bytes(root: Path, origin: Origin | None) -> int:
    cache = ResponseCache(root)
    return sum(w.length for _k, w, e in cache.entries() if e is not None and e.origin == origin)


async def test_list_gives_entries_bytes_and_billed_usd_per_configuration_and_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = run_dir(tmp_path)
    await pay(run / "cache", "cfg-a", "model-a", WITH_USAGE, BILLED)
    await pay(run / "cache", "cfg-b", "model-b", NO_USAGE)
    assert main(["cache", "list", str(run)]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith(f"{run / 'cache'}: 3 entries in 2 segment(s)")
    rows = table(out)
    a_bytes = payload_bytes(run / "cache", Origin("cfg-a", "model-a"))
    b_bytes = payload_bytes(run / "cache", Origin("cfg-b", "model-b"))
    # billed: the provider's charge where it stated one, else the cost at the prices then
    assert rows["cfg-a model-a"] == ["2", "0", str(a_bytes), f"${WITH_USAGE.cost_usd + 0.25:.4f}"]
    # a reply without usage stands for its upper estimate, never $0, and says so
    assert upper_cost() > 0
    assert rows["cfg-b model-b"] == [
        "1",
        "0",
        str(b_bytes),
        f"${upper_cost():.4f}",
        "1",
        "estimated",
    ]
    assert ResponseCache(run / "cache").stats().bytes == a_bytes + b_bytes
    assert "nothing is priced again" in out


async def test_clear_config_removes_only_that_configurations_entries(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = run_dir(tmp_path)
    await pay(run / "cache", "cfg-a", "model-a", WITH_USAGE, BILLED)
    await pay(run / "cache", "cfg-b", "model-b", NO_USAGE)
    assert main(["cache", "clear", str(run), "--config", "cfg-a"]) == 0
    assert capsys.readouterr().out.strip() == (
        f"removed 2 entries of configuration cfg-a from {run / 'cache'}; kept 1"
    )
    left = [e.origin for _k, _w, e in ResponseCache(run / "cache").entries() if e is not None]
    assert left == [Origin("cfg-b", "model-b")]
    # cfg-b's reply still answers, from the cache: no reply is scripted, a send would fail
    again = boundary(
        Replies(),
        endpoint=endpoint_config(config_id="cfg-b", model="model-b", prices=PRICES),
        cache_dir=run / "cache",
        unit=UnitSpec("run", "cfg-b", "model-b", "test", "j", 0, 0, 0),
    )
    await again.complete(request(0))
    assert again.records[0]["cache_hit"]


async def test_clear_config_and_model_removes_that_pair_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = run_dir(tmp_path)
    await pay(run / "cache", "cfg-a", "model-a", WITH_USAGE)
    await pay(run / "cache", "cfg-a", "model-z", BILLED)
    assert main(["cache", "clear", str(run), "--config", "cfg-a", "--model", "model-z"]) == 0
    assert "removed 1 entry of configuration cfg-a and model model-z" in capsys.readouterr().out
    assert list(table(_listing(run, capsys))) == ["cfg-a model-a"]


def _listing(run: Path, capsys: pytest.CaptureFixture[str]) -> str:
    assert main(["cache", "list", str(run)]) == 0
    return capsys.readouterr().out


async def test_old_format_entries_read_as_unknown_configuration_and_survive_a_clear(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = run_dir(tmp_path)
    old = ResponseCache(run / "cache")
    old.put("ab" + "1" * 30, "chat", reply_to_json(BILLED))  # as before entries named theirs
    old.put("ab" + "2" * 30, "chat", {"text": "not a stored reply"})
    old.close()
    raw = b"".join(p.read_bytes() for p in old.segments())
    assert b"config_id" not in raw  # the old record format, byte for byte
    await pay(run / "cache", "cfg-a", "model-a", WITH_USAGE)
    rows = table(_listing(run, capsys))
    # the old reply still stands for its bill; the one without a bill is counted, not $0
    assert rows["unknown-configuration -"][:1] + rows["unknown-configuration -"][3:] == [
        "2",
        "$0.2500",
        "1",
        "unpriced",
    ]
    assert main(["cache", "clear", str(run), "--config", "cfg-a"]) == 0
    capsys.readouterr()
    assert list(table(_listing(run, capsys))) == ["unknown-configuration -"]
    assert ResponseCache(run / "cache").get("ab" + "1" * 30) is not None


def test_an_unknown_config_is_one_line_naming_those_present(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = run_dir(tmp_path)
    cache = ResponseCache(run / "cache")
    cache.put("ab" + "1" * 30, "chat", reply_to_json(BILLED), origin=Origin("cfg-b", "m"))
    cache.put("ab" + "2" * 30, "chat", reply_to_json(BILLED), origin=Origin("cfg-a", "m"))
    cache.close()
    assert main(["cache", "clear", str(run), "--config", "cfg-x"]) == 2
    err = capsys.readouterr().err
    assert err == (
        f"error: cache clear: no entries of configuration 'cfg-x' in {run / 'cache'}; "
        "configurations: cfg-a, cfg-b\n"
    )
    assert main(["cache", "clear", str(run), "--config", "cfg-a", "--model", "n"]) == 2
    assert "configuration cfg-a's models: m\n" in capsys.readouterr().err
    assert ResponseCache(run / "cache").stats().entries == 2  # nothing removed


def test_a_cache_of_old_entries_only_says_none_name_a_configuration(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = run_dir(tmp_path)
    ResponseCache(run / "cache").put("ab" + "1" * 30, "chat", reply_to_json(BILLED))
    assert main(["cache", "clear", str(run), "--config", "cfg-a"]) == 2
    assert capsys.readouterr().err.endswith("; it holds no entries that name their configuration\n")


def test_config_goes_with_clear_only(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cache", "list", str(run_dir(tmp_path)), "--config", "cfg-a"]) == 2
    assert capsys.readouterr().err == "error: cache: --config and --model go with `clear` only\n"


def test_remove_keeps_expired_entries_and_their_ages(tmp_path: Path) -> None:
    old = ResponseCache(tmp_path, clock=lambda: 1000.0)
    old.put("ab" + "1" * 30, "chat", {"text": "x"}, origin=Origin("cfg-a", "m"))
    old.put("ab" + "2" * 30, "chat", {"text": "y"}, origin=Origin("cfg-b", "m"))
    old.close()
    cache = ResponseCache(tmp_path, ttl_s=10, clock=lambda: 5000.0)
    assert cache.stats().expired == 2
    done = cache.remove(lambda e: e.origin is not None and e.origin.config_id == "cfg-a")
    assert (done.removed, done.kept, done.superseded, done.unreadable) == (1, 1, 0, 0)
    kept = list(ResponseCache(tmp_path).entries())
    assert [(w.created, e.origin if e else None) for _k, w, e in kept] == [
        (1000.0, Origin("cfg-b", "m"))
    ]


def test_prune_keeps_each_entrys_configuration(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    cache.put("ab" + "1" * 30, "chat", {"text": "x"}, origin=Origin("cfg-a", "m"))
    cache.close()
    cache.prune()
    entry = ResponseCache(tmp_path).get("ab" + "1" * 30)
    assert entry is not None and entry.origin == Origin("cfg-a", "m")
