"""A replay endpoint: an OpenAI-compatible server that answers with recorded provider replies.

`python -m pipeline serve replay DIR` and `+panel=replay` run one `ReplayServer` on
127.0.0.1. It serves:
- POST /v1/chat/completions: the next recording of the request body's `model`, with the
  recorded status, the recorded headers a client reads (`exchange.kept_headers`: content
  type, Retry-After, rate-limit headers) and the recorded body bytes exactly. What was asked
  is not looked at beyond `model`: the replies are real bytes, not answers to these requests.
- GET /v1/models: the served models, in OpenAI's list shape.
A model it does not serve gets 404 `model_not_found`, a body that is not a JSON object with
a string `model` 400, both in OpenAI's error shape.

Order (decision): a model's recordings are taken in the order `load_recordings` gives them
(sorted by path) and cycled: request k of a model gets recording k mod n. `fixed` serves one
recording to every request (`serve replay --order fixed --file NAME`); it alone is served.
Counters say how many times each recording was served (`served`), so a test can tell which
bytes a sweep received. Which recordings a server gets is its caller's choice: `serve
replay` serves every one, `+panel=replay` only the 2xx ones (a recorded 402 would stop the
run; pipeline/sweep/servers.py).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from aiohttp import web

from pipeline.endpoints.exchange import kept_headers
from pipeline.endpoints.recording import Recording

__all__ = ["ORDERS", "ReplayOptions", "ReplayOrder", "ReplayServer", "by_model", "served_models"]

ReplayOrder = Literal["cycle", "fixed"]
ORDERS: tuple[ReplayOrder, ...] = ("cycle", "fixed")
_LOOPBACK = ("127.0.0.1", "localhost", "::1")
MAX_REQUEST_BYTES = 64 * 1024 * 1024  # any study's largest request fits


def by_model(recordings: Sequence[Recording]) -> dict[str, tuple[Recording, ...]]:
    """Recordings grouped by their model, each group in the given (path) order."""
    groups: dict[str, list[Recording]] = {}
    for rec in recordings:
        groups.setdefault(rec.model, []).append(rec)
    return {model: tuple(recs) for model, recs in sorted(groups.items())}


def served_models(
    recordings: Sequence[Recording], order: ReplayOrder = "cycle", file: str | None = None
) -> dict[str, tuple[Recording, ...]]:
    """What a server in `order` serves: every recording by model (cycle), or only `file`
    (fixed), named by its path under the directory or by its file name alone.
    ValueError (its message is one line for the user) when `file` is missing or unknown."""
    if order == "cycle":
        if file is not None:
            raise ValueError("--file goes with --order fixed")
        return by_model(recordings)
    if file is None:
        raise ValueError("--order fixed needs --file NAME (a recording under the directory)")
    found = [r for r in recordings if file in (r.name, r.name.rsplit("/", 1)[-1])]
    if len(found) != 1:
        what = "no recording" if not found else f"{len(found)} recordings"
        raise ValueError(f"--file {file!r}: {what} of that name; give its path under the directory")
    return {found[0].model: (found[0],)}


@dataclass(frozen=True)
class ReplayOptions:
    """Where a replay server listens: loopback only; port 0 picks a free one."""

    host: str = "127.0.0.1"
    port: int = 0

    def __post_init__(self) -> None:
        if self.host not in _LOOPBACK:
            raise ValueError(f"replay endpoints bind to loopback only, not {self.host!r}")


class ReplayServer:
    """Serves `models` (model -> recordings, in serving order) on one base URL."""

    def __init__(
        self,
        models: Mapping[str, Sequence[Recording]],
        options: ReplayOptions | None = None,
    ) -> None:
        empty = sorted(model for model, recs in models.items() if not recs)
        if not models or empty:
            raise ValueError(f"every served model needs at least one recording; none for {empty}")
        self.models = {model: tuple(recs) for model, recs in models.items()}
        self.options = options or ReplayOptions()
        self._next: Counter[str] = Counter()  # per model: the index of its next recording
        self._served: Counter[str] = Counter()  # per recording name
        self._runner: web.AppRunner | None = None
        self.base_url = ""

    async def start(self) -> str:
        """Bind and serve; returns the base URL, e.g. http://127.0.0.1:PORT/v1."""
        app = web.Application(client_max_size=MAX_REQUEST_BYTES)
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_get("/v1/models", self._models)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        await web.TCPSite(self._runner, self.options.host, self.options.port).start()
        port = self._runner.addresses[0][1]
        host = f"[{self.options.host}]" if ":" in self.options.host else self.options.host
        self.base_url = f"http://{host}:{port}/v1"
        return self.base_url

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    def served(self) -> dict[str, int]:
        """How many times each recording (by name) was served."""
        return dict(self._served)

    def next_recording(self, model: str) -> Recording:
        """The recording the next request for `model` gets (and advance the cycle)."""
        recordings = self.models[model]
        index = self._next[model]
        self._next[model] += 1
        recording = recordings[index % len(recordings)]
        self._served[recording.name] += 1
        return recording

    async def _models(self, request: web.Request) -> web.StreamResponse:
        data = [
            {"id": model, "object": "model", "created": 0, "owned_by": "foldsweep-replay"}
            for model in self.models
        ]
        return web.json_response({"object": "list", "data": data})

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        try:
            body = json.loads(await request.read())
        except (ValueError, UnicodeDecodeError):
            return _error(400, "request body is not JSON", "invalid_request_error")
        model = body.get("model") if isinstance(body, dict) else None
        if not isinstance(model, str):
            return _error(400, "request body needs a string model", "invalid_request_error")
        if model not in self.models:
            served = ", ".join(self.models)
            message = f"model {model!r} is not served here; this replay serves {served}"
            return _error(404, message, "model_not_found")
        return replay_response(self.next_recording(model))


def replay_response(recording: Recording) -> web.Response:
    """The recorded status, kept headers and body bytes, as recorded."""
    return web.Response(
        status=recording.status,
        headers=kept_headers(recording.headers),
        body=recording.body.encode("utf-8"),
    )


def _error(status: int, message: str, code: str) -> web.Response:
    """OpenAI's error shape."""
    error = {"message": message, "type": "invalid_request_error", "param": "model", "code": code}
    return web.json_response({"error": error}, status=status)
