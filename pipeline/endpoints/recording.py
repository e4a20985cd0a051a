"""Recorded provider replies on disk: the format, its validating reader and its writer.

One JSON file per exchange (docs/endpoints.md, "Recordings and replay"):

    {"format": "foldsweep-provider-reply/1",
     "provider": "openrouter", "host": "openrouter.ai", "source": "...", "path": "...",
     "handwritten": false, "model": "...",
     "request": {...the request body, or null},  "request_sha256": "hex",
     "response": {"status": 200, "headers": {"content-type": "..."}, "body": "<raw text>"},
     "expected": {...a hand-written test oracle; nothing here reads it}}

Required: `format`, `provider` and `response`; every other key is optional but typed, and
the provenance keys of data/provider-replies (`interaction`, `why`, `body_reserialised`,
`request_abridged`; its README) are accepted and never served. Request
headers are never part of the format (the Authorization header, and so the key, cannot reach
a recording). `model` is optional and an extension of what the engine writes: the served
model of an exchange whose request body is not kept (`request: null`).

Decisions:
- `load_recordings` refuses a whole directory on its first bad file, with one line naming
  the file and what is wrong: a replayed sweep on a half-read set would silently serve
  other bytes. Other top-level keys (a collection's notes, e.g. `why_recorded_here`) are
  kept out of the way: never read, never served.
  Files are read with `pipeline.user_files.read_bounded` (no FIFO, device or symlink
  leaving the directory; at most RECORDING_MAX_BYTES each) and parsed with
  `loads_json` (no NaN). Only `*.json` files count, except the collection's provenance
  index `SOURCES.json` at the root; they are ordered by their path relative to the
  directory, which is the order `serve replay` cycles through.
- A recording's model is its request's `model`, else its `model` field, else the first
  directory under the root that holds it (`openrouter/x.json` -> `openrouter`).
- `RecordingWriter` writes each exchange to a temporary file and then links it to
  `<dir>/<model-slug>/<seq:06d>-<sha12>.json`; a link never replaces a file, so two writers
  (two sweeps, two actors) on one directory take the next free number instead of
  overwriting. The writer runs inside the client's event loop: each file is a few kB.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pipeline.config.schema import EndpointConfig
from pipeline.endpoints.exchange import Exchange
from pipeline.user_files import MB, NonFiniteNumber, loads_json, read_bounded
from pipeline.usererror import UserError

FORMAT = "foldsweep-provider-reply/1"
RECORDING_MAX_BYTES = 16 * MB  # the chat client's own reply cap: nothing larger was received
WRITER_SOURCE = "endpoint.record"
_OPTIONAL_TEXT = ("host", "source", "path", "model", "request_sha256", "why")
# provenance and oracle keys of data/provider-replies (its README): typed, never served
_OPTIONAL_TYPED: Mapping[str, tuple[type, ...]] = {
    "interaction": (int,),  # the exchange's index in its source cassette
    "body_reserialised": (bool,),  # the body was parsed and re-serialised by the source
    "request_abridged": (list,),  # which request strings were shortened
    "expected": (dict,),  # a hand-written test oracle
}
# a collection's provenance index beside its provider directories, not a recording
INDEX_FILES = frozenset({"SOURCES.json"})
_RESPONSE_KEYS = frozenset({"status", "headers", "body"})
_SHA256 = re.compile(r"[0-9a-f]{64}")


class RecordingError(UserError):
    """A recording file that cannot be served: the message names the file and the problem."""


@dataclass(frozen=True)
class Recording:
    """One validated recording: where it lies, whose it is, and the response to replay."""

    name: str  # its path relative to the recordings directory, with "/" separators
    provider: str
    model: str
    status: int
    headers: Mapping[str, str]
    body: str
    request_sha256: str | None = None
    handwritten: bool = False

    @property
    def ok(self) -> bool:
        """A 2xx reply (what `+panel=replay` serves by default)."""
        return 200 <= self.status < 300


def load_recordings(directory: Path, *, max_bytes: int = RECORDING_MAX_BYTES) -> list[Recording]:
    """Every `*.json` recording under `directory`, validated, ordered by relative path.

    RecordingError (one line) for a missing or empty directory or the first bad file.
    """
    root = Path(directory)
    if not root.is_dir():
        raise RecordingError(f"recordings directory {str(root)!r} is not a directory")
    paths = sorted(
        (p for p in root.rglob("*.json") if p.relative_to(root).as_posix() not in INDEX_FILES),
        key=lambda p: p.relative_to(root).as_posix(),
    )
    if not paths:
        raise RecordingError(f"recordings directory {str(root)!r} holds no *.json recording")
    return [_load_one(root, path, max_bytes) for path in paths]


def _load_one(root: Path, path: Path, max_bytes: int) -> Recording:
    name = path.relative_to(root).as_posix()

    def bad(problem: str) -> RecordingError:
        return RecordingError(f"recording {name!r} in {str(root)!r}: {problem}")

    raw = read_bounded(
        path, max_bytes=max_bytes, cap_name="RECORDING_MAX_BYTES", root=root, what="recording"
    )
    try:
        doc = loads_json(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise bad("not UTF-8 text") from None
    except NonFiniteNumber as exc:
        raise bad(f"not JSON ({exc})") from None
    except RecursionError:
        raise bad("not JSON (nested too deeply)") from None
    except json.JSONDecodeError as exc:
        raise bad(f"not JSON ({exc.msg} at line {exc.lineno})") from None
    problem = _problem(doc)
    if problem is not None:
        raise bad(problem)
    response = doc["response"]
    request = doc.get("request")
    model = request.get("model") if isinstance(request, dict) else None
    if not isinstance(model, str) or not model:
        model = doc.get("model") or name.split("/", 1)[0].removesuffix(".json")
    return Recording(
        name=name,
        provider=doc["provider"],
        model=model,
        status=response["status"],
        headers=dict(response["headers"]),
        body=response["body"],
        request_sha256=doc.get("request_sha256"),
        handwritten=doc.get("handwritten", False),
    )


def _problem(doc: Any) -> str | None:
    """What is wrong with a parsed recording (None if nothing): the first problem found."""
    if not isinstance(doc, dict):
        return "not a JSON object"
    sha = doc.get("request_sha256")
    checks: tuple[tuple[Callable[[], bool], str], ...] = (
        (lambda: doc.get("format") != FORMAT, f"format is {doc.get('format')!r}, not {FORMAT!r}"),
        (
            lambda: not isinstance(doc.get("provider"), str) or not doc["provider"].strip(),
            "provider must be a non-empty string",
        ),
        *(
            (
                lambda key=key: doc.get(key) is not None and not isinstance(doc[key], str),
                f"{key} must be a string",
            )
            for key in _OPTIONAL_TEXT
        ),
        *(
            (
                lambda key=key, kinds=kinds: (
                    doc.get(key) is not None
                    and (
                        (isinstance(doc[key], bool) and bool not in kinds)
                        or not isinstance(doc[key], kinds)
                    )
                ),
                f"{key} must be a {' or '.join(k.__name__ for k in kinds)}",
            )
            for key, kinds in _OPTIONAL_TYPED.items()
        ),
        (
            lambda: sha is not None and not _SHA256.fullmatch(sha),
            "request_sha256 must be 64 lower-case hex digits",
        ),
        (
            lambda: not isinstance(doc.get("handwritten", False), bool),
            "handwritten must be true or false",
        ),
        (
            lambda: doc.get("request") is not None and not isinstance(doc["request"], dict),
            "request must be the request's JSON object or null",
        ),
    )
    failed = next((problem for check, problem in checks if check()), None)
    return failed if failed is not None else _response_problem(doc.get("response"))


def _headers_ok(headers: Any) -> bool:
    """A str -> str mapping with no line break anywhere (a break would inject a header)."""
    return isinstance(headers, dict) and all(
        isinstance(k, str) and isinstance(v, str) and not any(c in "\r\n" for c in k + v)
        for k, v in headers.items()
    )


def _response_problem(response: Any) -> str | None:
    if not isinstance(response, dict):
        return "response must be an object with status, headers and body"
    status = response.get("status")
    checks: tuple[tuple[Callable[[], bool], str], ...] = (
        (
            lambda: set(response) != _RESPONSE_KEYS,
            f"response must have exactly the keys body, headers, status; has {sorted(response)}",
        ),
        (
            lambda: (
                isinstance(status, bool) or not isinstance(status, int) or not 100 <= status <= 599
            ),
            f"response.status must be an integer in 100..599, not {status!r}",
        ),
        (
            lambda: not _headers_ok(response["headers"]),
            "response.headers must map header names to string values, without line breaks",
        ),
        (
            lambda: not isinstance(response["body"], str),
            "response.body must be the raw body as a string",
        ),
    )
    return next((problem for check, problem in checks if check()), None)


def model_slug(model: str) -> str:
    """A directory name for a model id: `openai/gpt-4o-mini` -> `openai-gpt-4o-mini`."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", model).strip("-.")
    return slug or "model"


@dataclass
class RecordingWriter:
    """A `Recorder` (pipeline.endpoints.exchange): each exchange becomes one recording file.

    `provider` and `host` say whose replies these are (`for_endpoint` fills them from an
    endpoint's configuration). Request bodies are not kept (`request: null`): only their
    SHA-256, and the model, which `serve replay` groups by.
    """

    directory: Path
    provider: str
    host: str = ""
    _seq: itertools.count[int] = field(default_factory=itertools.count, repr=False)

    @classmethod
    def for_endpoint(cls, directory: Path | str, endpoint: EndpointConfig) -> RecordingWriter:
        host = urlsplit(endpoint.base_url).hostname or ""
        return cls(Path(directory), endpoint.provider or endpoint.config_id or host, host)

    def __call__(self, exchange: Exchange) -> None:
        doc = {
            "format": FORMAT,
            "provider": self.provider,
            "host": self.host,
            "source": WRITER_SOURCE,
            "handwritten": False,
            "model": exchange.model,
            "request": None,
            "request_sha256": exchange.request_sha256,
            "response": {
                "status": exchange.status,
                "headers": dict(exchange.headers),
                "body": exchange.body,
            },
        }
        folder = self.directory / model_slug(exchange.model)
        folder.mkdir(parents=True, exist_ok=True)
        data = (json.dumps(doc, indent=2, ensure_ascii=False) + "\n").encode()
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".part", dir=folder)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            self._link(Path(tmp), folder, exchange.request_sha256[:12])
        finally:
            os.unlink(tmp)

    def _link(self, tmp: Path, folder: Path, sha12: str) -> Path:
        """Link `tmp` to the next free `<seq:06d>-<sha12>.json` (a link never overwrites)."""
        while True:
            target = folder / f"{next(self._seq):06d}-{sha12}.json"
            try:
                os.link(tmp, target)
            except FileExistsError:
                continue
            return target
