"""Chat templates from GGUF metadata: a tiny GGUF built here, and the shipped SmolLM2 weights."""

from __future__ import annotations

import io
import struct
from typing import Any

import pytest

from pipeline.traces.visibility.classify import classify
from pipeline.traces.visibility.gguf import GGUFError, chat_template, chat_templates
from pipeline.traces.visibility.visibility import matrix

TEMPLATE = "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}{% endfor %}"
TENSOR_SENTINEL = b"TENSOR-INFO-AND-DATA-NEVER-READ"


def _string(text: str, order: str) -> bytes:
    raw = text.encode("utf-8")
    return struct.pack(order + "Q", len(raw)) + raw


def _value(kind: int, value: Any, order: str) -> bytes:
    if kind == 8:
        return _string(value, order)
    if kind == 9:
        item_kind, items = value
        body = b"".join(_value(item_kind, item, order) for item in items)
        return struct.pack(order + "IQ", item_kind, len(items)) + body
    fmt = {0: "B", 4: "I", 6: "f", 7: "?", 10: "Q", 12: "d"}[kind]
    return struct.pack(order + fmt, value)


def tiny_gguf(kvs: list[tuple[str, int, Any]], *, version: int = 3, order: str = "<") -> bytes:
    """A GGUF header and KV section, then bytes standing in for tensor info and data."""
    head = b"GGUF" + struct.pack(order + "IQQ", version, 1, len(kvs))
    body = b"".join(
        _string(k, order) + struct.pack(order + "I", t) + _value(t, v, order) for k, t, v in kvs
    )
    return head + body + TENSOR_SENTINEL


KVS: list[tuple[str, int, Any]] = [
    ("general.architecture", 8, "llama"),
    ("general.alignment", 4, 32),
    ("llama.rope.freq_base", 6, 10000.0),
    ("tokenizer.ggml.add_bos_token", 7, True),
    ("tokenizer.ggml.tokens", 9, (8, ["<s>", "</s>", "héllo"])),
    ("tokenizer.ggml.scores", 9, (6, [0.0, 0.5, 1.0])),
    ("tokenizer.ggml.nested", 9, (9, [(0, [1, 2]), (8, ["x"])])),
    ("general.size", 10, 2**40),
    ("general.ratio", 12, 0.25),
    ("tokenizer.chat_template", 8, TEMPLATE),
    ("tokenizer.chat_template.tool_use", 8, "{{ tools | tojson }}"),
]


class CountingReader:
    """A `read(n)` that records how far the parser read."""

    def __init__(self, data: bytes) -> None:
        self.stream = io.BytesIO(data)

    def __call__(self, size: int) -> bytes:
        return self.stream.read(size)


@pytest.mark.parametrize(("version", "order"), [(3, "<"), (2, "<"), (3, ">")])
def test_the_templates_are_read_from_a_tiny_gguf(version: int, order: str) -> None:
    data = tiny_gguf(KVS, version=version, order=order)
    reader = CountingReader(data)
    assert chat_templates(reader) == {"": TEMPLATE, "tool_use": "{{ tools | tojson }}"}
    assert reader.stream.tell() == len(data) - len(TENSOR_SENTINEL), "read past the KV section"


def test_a_file_object_works_and_a_file_without_a_template_gives_none() -> None:
    assert chat_template(io.BytesIO(tiny_gguf(KVS))) == TEMPLATE
    assert chat_template(io.BytesIO(tiny_gguf(KVS[:4]))) is None


def test_not_a_gguf_is_an_error_saying_so() -> None:
    with pytest.raises(GGUFError, match="not a GGUF file"):
        chat_templates(io.BytesIO(b"PK\x03\x04 a zip file"))


def test_a_truncated_gguf_names_the_offset() -> None:
    data = tiny_gguf(KVS)
    with pytest.raises(GGUFError, match=r"truncated at byte \d+"):
        chat_templates(io.BytesIO(data[:60]))


def test_version_1_and_unknown_value_types_are_refused() -> None:
    with pytest.raises(GGUFError, match="version 1 is not supported"):
        chat_templates(io.BytesIO(tiny_gguf(KVS, version=1)))
    bad = b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + _string("k", "<") + struct.pack("<I", 99)
    with pytest.raises(GGUFError, match="value type 99"):
        chat_templates(io.BytesIO(bad))


def test_a_corrupt_string_length_is_refused_before_reading() -> None:
    bad = b"GGUF" + struct.pack("<IQQQ", 3, 0, 1, 1 << 40)
    with pytest.raises(GGUFError, match="corrupt"):
        chat_templates(io.BytesIO(bad))


@pytest.mark.local_model
def test_the_smollm2_gguf_carries_a_chatml_template_that_drops_reasoning() -> None:
    from pipeline.endpoints.local_weights import locate_smollm2

    path = locate_smollm2()
    with path.open("rb") as handle:
        template = chat_template(handle)
        assert handle.tell() < path.stat().st_size // 10, "read into the tensor data"
    assert template is not None
    assert "<|im_start|>" in template
    smollm2 = classify(matrix({"smollm2": template}))["smollm2"]
    assert smollm2.visibility == "never"
    assert smollm2.tool_calls_dropped
    assert {c.error_type for c in smollm2.crashes} == {"TypeError"}  # null content
