"""Sweeps against real bytes (issue 31, section 5): `+panel=replay` and `endpoint.record`.

The replay sweep's `requests` table must hold, for every configuration, exactly the tokens,
estimate and billed cost of the recordings its server handed out. The expected values are
computed here from the recording files themselves (json.loads and the documented usage
fields), never through the code under test. Which recordings a configuration received is
fixed by the documented order (path order, cycling per provider) and the server's count of
what it served (the manifest's `sim_counters.served`): the first ones went to the probes, the
rest to the sweep.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
import yaml
from aiohttp import web

from pipeline.commands.query import run_query
from pipeline.endpoints.loop_thread import LoopThread
from pipeline.endpoints.recording import load_recordings
from pipeline.endpoints.replay import ReplayServer, served_models
from tests.endpoints.recordings import recording, write
from tests.reliability.conftest import SWEEP_TIMEOUT_S
from tests.reliability.harness import SweepHarness, files_containing

pytestmark = [pytest.mark.slow, pytest.mark.ray]

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "data" / "provider-replies"
PANEL = yaml.safe_load((ROOT / "conf" / "panel" / "replay.yaml").read_text())
SMALLEST = ["arms=[m]", "repeats=1", "scenario=small", "probe.samples=1", "progress=false"]
KEY = "sk-or-v1-PLANTED-KEY-123"
KEY_VAR = "FOLDSWEEP_PLANTED_KEY"


def handwritten(root: Path) -> Path:
    """Stand-ins in the shipped families' dialects, used only while data/provider-replies is
    empty (the real recordings are the better test data)."""
    bodies = {
        "openrouter": {
            "prompt_tokens": 900,
            "completion_tokens": 40,
            "cost": 0.000123,
            "prompt_tokens_details": {"cached_tokens": 512},
        },
        "openai": {
            "prompt_tokens": 700,
            "completion_tokens": 30,
            "prompt_tokens_details": {"cached_tokens": 0},
        },
        "deepseek": {
            "prompt_tokens": 600,
            "completion_tokens": 20,
            "prompt_cache_hit_tokens": 128,
            "prompt_cache_miss_tokens": 472,
        },
    }
    for provider, usage in bodies.items():
        for i in range(2):
            text = {
                "choices": [
                    {
                        "message": {"role": "assistant", "content": f"reply {i}"},
                        "finish_reason": "stop",
                        "index": 0,
                    }
                ],
                "usage": {**usage, "completion_tokens": usage["completion_tokens"] + i},
            }
            write(root, f"{provider}/{i}.json", recording(provider, body=json.dumps(text)))
    return root


def recordings_dir(tmp_path: Path) -> tuple[Path, list[str]]:
    if any(SHIPPED.rglob("*.json")):
        return SHIPPED, []
    root = handwritten(tmp_path / "recordings")
    return root, [f"replay.dir={root}"]


def served_files(root: Path) -> dict[str, list[tuple[str, dict[str, Any]]]]:
    """provider -> its 2xx recordings (relative name, document), in path order."""
    out: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    for path in sorted(root.glob("*/*.json"), key=lambda p: p.relative_to(root).as_posix()):
        doc = json.loads(path.read_text(encoding="utf-8"))
        if 200 <= doc["response"]["status"] < 300:
            out.setdefault(doc["provider"], []).append((path.relative_to(root).as_posix(), doc))
    return out


def _count(usage: dict[str, Any], key: str) -> int | None:
    value = usage.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def expected_bill(body_text: str, prices: dict[str, float]) -> tuple[Any, ...] | None:
    """(prompt, completion, cached, cost at the panel's prices, billed) of a reply, by the
    dialects pipeline/endpoints/usage.py documents (OpenAI/OpenRouter, DeepSeek, Mistral,
    Together, Anthropic) and its cost and billing rules; None when the reply does not report
    both token counts."""
    try:
        usage = json.loads(body_text).get("usage")
    except (ValueError, AttributeError):
        return None
    if not isinstance(usage, dict):
        return None
    details = usage.get("prompt_tokens_details")
    details = details if isinstance(details, dict) else {}
    hit, miss = _count(usage, "prompt_cache_hit_tokens"), _count(usage, "prompt_cache_miss_tokens")
    reads, creates = (
        _count(usage, "cache_read_input_tokens"),
        _count(usage, "cache_creation_input_tokens"),
    )
    prompt = _count(usage, "prompt_tokens")
    if prompt is None and hit is not None and miss is not None:
        prompt = hit + miss
    if prompt is None and _count(usage, "input_tokens") is not None:
        prompt = _count(usage, "input_tokens") + (reads or 0) + (creates or 0)  # type: ignore[operator]
    completion = _count(usage, "completion_tokens")
    if completion is None:
        completion = _count(usage, "output_tokens")
    if prompt is None or completion is None:
        return None
    cached_fields = (
        _count(details, "cached_tokens"),
        hit,
        reads,
        _count(usage, "num_cached_tokens"),  # Mistral
        _count(usage, "cached_tokens"),  # Together behind the Hugging Face router
    )
    cached = next((v for v in cached_fields if v is not None), 0)
    writes = next((v for v in (_count(details, "cache_write_tokens"), creates) if v is not None), 0)
    cached = min(cached, prompt) if prompt else cached
    uncached = max(0, prompt - cached - writes)
    cached_price = prices.get("cached_input_per_mtok", prices["input_per_mtok"])
    write_price = prices.get("cache_write_per_mtok", prices["input_per_mtok"])
    cost = (
        uncached * prices["input_per_mtok"]
        + cached * cached_price
        + writes * write_price
        + completion * prices["output_per_mtok"]
    ) / 1e6
    billed = _usd(usage.get("cost"))
    if billed is not None and usage.get("is_byok") is True:  # plus what the own key paid
        billed += _usd((usage.get("cost_details") or {}).get("upstream_inference_cost")) or 0.0
    return prompt, completion, cached, round(cost, 15), billed


def _usd(value: Any) -> float | None:
    return None if value is None or isinstance(value, bool) else float(value)


def test_replay_sweep_reproduces_every_served_recordings_tokens_and_costs(
    tmp_path: Path,
) -> None:
    root, extra = recordings_dir(tmp_path)
    harness = SweepHarness()
    try:
        result = harness.run(
            ["+panel=replay", *SMALLEST, "cache.scope=off", f"out_dir={tmp_path / 'runs'}", *extra],
            timeout_s=SWEEP_TIMEOUT_S,
        )
    finally:
        harness.close()
    assert result.returncode == 0, result.stderr[-3000:]
    assert "SIMULATED run (replay)" in result.stderr
    run_dir = result.run_dir
    assert run_dir is not None
    rows = run_query(run_dir, "select simulated from rows")
    assert rows.height > 0 and rows["simulated"].all()
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["config"]["panel"]["kind"] == "replay" and manifest["extra"]["simulated"]
    served = manifest["sim_counters"]["served"]
    requests = run_query(
        run_dir,
        "select config_id, prompt_tokens, completion_tokens, cached_tokens, cost_usd, "
        "billed_usd, usage_reported from requests where kind = 'chat'",
    )
    prices = {
        c["provider"]: c.get("prices", {"input_per_mtok": 0, "output_per_mtok": 0})
        for c in PANEL["configs"]
    }
    reproduced = 0
    for provider, files in served_files(root).items():
        config_id = f"replay-{provider}"
        total = sum(served.get(name, 0) for name, _ in files)
        # the documented order: request i of the configuration got file i mod n
        assert [served.get(name, 0) for name, _ in files] == [
            len(range(j, total, len(files))) for j in range(len(files))
        ], provider
        mine = requests.filter(requests["config_id"] == config_id)
        probes = total - mine.height
        assert probes >= 1, f"{provider}: the probe's request was not served by the replay"
        got = [files[i % len(files)][1]["response"]["body"] for i in range(probes, total)]
        want = [expected_bill(body, prices.get(provider, {})) for body in got]
        reported = mine.filter(mine["usage_reported"])
        assert reported.height == sum(w is not None for w in want), provider
        table = Counter(
            (
                r["prompt_tokens"],
                r["completion_tokens"],
                r["cached_tokens"],
                round(r["cost_usd"], 15),
                r["billed_usd"],
            )
            for r in reported.iter_rows(named=True)
        )
        assert table == Counter(w for w in want if w is not None), provider
        if any(prices.get(provider, {}).values()):  # a priced family has a non-zero estimate
            assert all(w[3] > 0 for w in want if w is not None), provider
        reproduced += reported.height
    assert reproduced > 0
    print(f"replay sweep: {reproduced} requests reproduced their recording exactly")


class EchoServer:
    """A provider that echoes the Authorization header back in its reply (content and a
    field of its own): a leak test needs the key to come back on the wire."""

    def __init__(self) -> None:
        self.seen: list[str] = []
        self.loop = LoopThread("echo-server")
        self.runner: web.AppRunner | None = None
        self.base_url = ""

    async def _chat(self, request: web.Request) -> web.Response:
        sent = request.headers.get("Authorization", "")
        self.seen.append(sent)
        model = (await request.json())["model"]
        body = {
            "id": "echo",
            "object": "chat.completion",
            "model": model,
            "echo": sent,
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": f"You sent {sent}."},
                }
            ],
            "usage": {"prompt_tokens": 50, "completion_tokens": 5, "total_tokens": 55},
        }
        return web.json_response(body, headers={"x-echo-authorization": sent})

    async def _start(self) -> str:
        app = web.Application(client_max_size=64 * 2**20)
        app.router.add_post("/v1/chat/completions", self._chat)
        self.runner = web.AppRunner(app, access_log=None)
        await self.runner.setup()
        await web.TCPSite(self.runner, "127.0.0.1", 0).start()
        return f"http://127.0.0.1:{self.runner.addresses[0][1]}/v1"

    async def _stop(self) -> None:
        if self.runner is not None:
            await self.runner.cleanup()

    def __enter__(self) -> EchoServer:
        self.base_url = self.loop.call(self._start(), 30)
        return self

    def __exit__(self, *exc: object) -> None:
        self.loop.call(self._stop(), 30)
        self.loop.close()


@pytest.fixture
def echo() -> Iterator[EchoServer]:
    with EchoServer() as server:
        yield server


def test_endpoint_record_writes_servable_recordings_and_the_key_nowhere(
    tmp_path: Path, echo: EchoServer
) -> None:
    record = tmp_path / "recorded"
    harness = SweepHarness(extra_env={KEY_VAR: KEY})
    try:
        result = harness.run(
            [
                "+panel=endpoint",
                f"endpoint.base_url={echo.base_url}",
                "endpoint.model=vendor/echo",
                f"endpoint.api_key_env={KEY_VAR}",
                f"endpoint.record={record}",
                *SMALLEST,
                f"out_dir={tmp_path / 'runs'}",
            ],
            timeout_s=SWEEP_TIMEOUT_S,
        )
        assert result.returncode == 0, result.stderr[-3000:]
        assert result.run_dir is not None
        assert echo.seen and set(echo.seen) == {f"Bearer {KEY}"}  # the key did go out
        needle = KEY.encode()
        assert files_containing(record, needle) == []
        assert files_containing(tmp_path, needle) == []
        assert files_containing(harness.ray_tmp, needle) == []
        assert KEY not in result.stdout + result.stderr
        for part in result.run_dir.rglob("*.parquet"):  # compressed: read the cells too
            assert KEY not in json.dumps(pq.read_table(part).to_pylist(), default=str), part
    finally:
        harness.close()
    recordings = load_recordings(record)
    assert len(recordings) == len(echo.seen)  # probes and sweep: every chat exchange
    assert {r.model for r in recordings} == {"vendor/echo"}
    assert all(json.loads(r.body)["echo"] == "Bearer ***" for r in recordings)
    assert all("x-echo-authorization" not in r.headers for r in recordings)
    first = recordings[0]
    server = ReplayServer(served_models(recordings))
    loop = LoopThread("replay-roundtrip")
    try:
        url = loop.call(server.start(), 30)
        replayed = loop.call(_post(url, "vendor/echo"), 30)
    finally:
        loop.call(server.stop(), 30)
        loop.close()
    assert replayed == (first.status, first.body.encode())


async def _post(url: str, model: str) -> tuple[int, bytes]:
    import aiohttp

    async with (
        aiohttp.ClientSession() as session,
        session.post(f"{url}/chat/completions", json={"model": model, "messages": []}) as reply,
    ):
        return reply.status, await reply.read()
