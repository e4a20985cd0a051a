"""The recording format: what `load_recordings` accepts, what it refuses in one line, and
what `RecordingWriter` writes (atomically, never over another file)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from pipeline.config.schema import EndpointConfig
from pipeline.endpoints.exchange import Exchange
from pipeline.endpoints.recording import (
    FORMAT,
    Recording,
    RecordingError,
    RecordingWriter,
    load_recordings,
    model_slug,
)
from pipeline.usererror import UserError
from tests.endpoints.recordings import recording, write

SHA = "ab" * 32


def test_recordings_load_in_path_order_with_their_model(tmp_path: Path) -> None:
    write(tmp_path, "openrouter/b.json", recording(model="vendor/model-b"))
    write(tmp_path, "openrouter/a.json", recording(model="vendor/model-a"))
    write(tmp_path, "deepseek/x.json", recording("deepseek", model=None))  # model from dir
    write(tmp_path, "mine/y.json", {**recording("mine", model=None), "model": "named"})
    write(tmp_path, "notes.txt", "not a recording")
    loaded = load_recordings(tmp_path)
    assert [r.name for r in loaded] == [
        "deepseek/x.json",
        "mine/y.json",
        "openrouter/a.json",
        "openrouter/b.json",
    ]
    assert [r.model for r in loaded] == ["deepseek", "named", "vendor/model-a", "vendor/model-b"]
    assert loaded[2].status == 200 and loaded[2].headers == {"content-type": "application/json"}
    assert loaded[2].handwritten is True


def _over_cap(tmp_path: Path) -> Path:
    return write(tmp_path, "big.json", recording(body="x" * 5000))


def _escaping_symlink(tmp_path: Path) -> Path:
    outside = write(tmp_path.parent / f"{tmp_path.name}-outside", "secret.json", recording())
    link = tmp_path / "link.json"
    link.symlink_to(outside)
    return link


def _bad(**changes: Any) -> dict[str, Any]:
    doc = recording()
    response = dict(doc["response"])
    for key, value in changes.items():
        if key.startswith("response_"):
            response[key.removeprefix("response_")] = value
        else:
            doc[key] = value
    doc["response"] = response
    return doc


HOSTILE: dict[str, tuple[Any, str]] = {
    "not_json": ("{not json", "not JSON"),
    "nan": ('{"format": NaN}', "not JSON"),
    "a_list": ("[1, 2]", "not a JSON object"),
    "wrong_format": (_bad(format="foldsweep-provider-reply/0"), "format is"),
    "status_text": (_bad(response_status="200"), "response.status must be an integer"),
    "status_bool": (_bad(response_status=True), "response.status must be an integer"),
    "status_600": (_bad(response_status=600), "in 100..599"),
    "body_object": (_bad(response_body={"a": 1}), "response.body must be the raw body"),
    "headers_list": (_bad(response_headers=["a"]), "response.headers must map"),
    "header_int": (_bad(response_headers={"retry-after": 3}), "response.headers must map"),
    "header_newline": (_bad(response_headers={"x": "1\r\nset-cookie: a"}), "line breaks"),
    "no_provider": (_bad(provider=""), "provider must be"),
    "request_text": (_bad(request="POST /"), "request must be"),
    "bad_sha": (_bad(request_sha256="xyz"), "request_sha256 must be"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_malformed_recording_is_one_line_naming_the_file(tmp_path: Path, case: str) -> None:
    doc, expected = HOSTILE[case]
    write(tmp_path, "good.json", recording())
    write(tmp_path, f"p/{case}.json", doc)
    with pytest.raises(RecordingError) as caught:
        load_recordings(tmp_path)
    message = str(caught.value)
    assert "\n" not in message
    assert f"p/{case}.json" in message and expected in message


def test_a_file_over_the_cap_is_refused_before_it_is_parsed(tmp_path: Path) -> None:
    _over_cap(tmp_path)
    with pytest.raises(UserError, match=r"big\.json.*over the 4096 bytes cap"):
        load_recordings(tmp_path, max_bytes=4096)


def test_a_symlink_leaving_the_directory_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "recordings"
    root.mkdir()
    _escaping_symlink(root)
    with pytest.raises(UserError, match=r"link\.json.*a symlink that leaves"):
        load_recordings(root)


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.json")
    with pytest.raises(UserError, match="a FIFO, not a regular file"):
        load_recordings(tmp_path)


def test_an_empty_or_missing_directory_is_refused(tmp_path: Path) -> None:
    with pytest.raises(RecordingError, match="holds no"):
        load_recordings(tmp_path)
    with pytest.raises(RecordingError, match="is not a directory"):
        load_recordings(tmp_path / "missing")


def _exchange(body: str = '{"ok": true}', status: int = 200) -> Exchange:
    return Exchange("openai/gpt-4o-mini", SHA, status, {"content-type": "application/json"}, body)


def test_the_writer_writes_numbered_files_that_load_back(tmp_path: Path) -> None:
    endpoint = EndpointConfig(
        "or-1", "openai/gpt-4o-mini", "openai", base_url="https://openrouter.ai/api/v1"
    )
    writer = RecordingWriter.for_endpoint(tmp_path, endpoint)
    writer(_exchange())
    writer(_exchange('{"error": {"code": 429}}', 429))
    files = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file())
    assert files == [
        f"openai-gpt-4o-mini/000000-{SHA[:12]}.json",
        f"openai-gpt-4o-mini/000001-{SHA[:12]}.json",
    ]  # no temporary file is left behind
    doc = json.loads((tmp_path / files[0]).read_text())
    assert doc["format"] == FORMAT and doc["source"] == "endpoint.record"
    assert doc["request"] is None and doc["request_sha256"] == SHA
    assert (doc["provider"], doc["host"]) == ("or-1", "openrouter.ai")
    loaded = load_recordings(tmp_path)
    assert loaded[0] == Recording(
        name=files[0],
        provider="or-1",
        model="openai/gpt-4o-mini",
        status=200,
        headers={"content-type": "application/json"},
        body='{"ok": true}',
        request_sha256=SHA,
    )
    assert loaded[1].status == 429


def test_a_second_writer_never_overwrites_the_first(tmp_path: Path) -> None:
    first, second = RecordingWriter(tmp_path, "p"), RecordingWriter(tmp_path, "p")
    first(_exchange("one"))
    second(_exchange("two"))
    bodies = sorted(r.body for r in load_recordings(tmp_path))
    assert bodies == ["one", "two"]


def test_model_slug_is_a_single_safe_directory_name() -> None:
    assert model_slug("openai/gpt-4o-mini") == "openai-gpt-4o-mini"
    assert model_slug("../../etc") == "etc"
    assert model_slug("///") == "model"
