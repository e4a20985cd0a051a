"""Read the chat templates a GGUF file carries in its metadata, without touching tensor data.

GGUF (versions 2 and 3) starts with the magic `GGUF`, a uint32 version, a uint64 tensor count
and a uint64 metadata count, then that many key-value pairs: a string key, a uint32 value type
and the value. Strings are a uint64 byte length and UTF-8 bytes; arrays are an element type, a
uint64 count and the elements. Tensor descriptions and data follow the KV section; the parse
stops before them.

The parse is pure: it takes a `read(n)` callable (or any object with `.read`) and the caller
opens the file. Decisions:
- Every `tokenizer.chat_template*` key is returned (GGUF names extra templates
  `tokenizer.chat_template.NAME`, e.g. `tool_use`), keyed by the suffix (`""` for the default).
- Array values are skipped, not kept (a vocabulary is tens of thousands of strings); fixed-size
  elements are skipped in one read.
- Byte order: little-endian, or big-endian when the version only makes sense that way.
- Version 1 (32-bit counts, 2023) is refused, as llama.cpp refuses it. A truncated file, an
  unknown value type or an implausible length is a `GGUFError` naming the offset.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Protocol, runtime_checkable

from pipeline.usererror import UserError

MAGIC = b"GGUF"
SUPPORTED_VERSIONS = (2, 3)
TEMPLATE_KEY = "tokenizer.chat_template"
MAX_STRING_BYTES = 1 << 28  # a corrupt length must not become a giant read
MAX_ARRAY_ITEMS = 1 << 32

STRING_TYPE = 8
ARRAY_TYPE = 9
FIXED_FORMATS = {
    0: "B",  # uint8
    1: "b",  # int8
    2: "H",  # uint16
    3: "h",  # int16
    4: "I",  # uint32
    5: "i",  # int32
    6: "f",  # float32
    7: "?",  # bool
    10: "Q",  # uint64
    11: "q",  # int64
    12: "d",  # float64
}

Read = Callable[[int], bytes]


@runtime_checkable
class Readable(Protocol):
    def read(self, size: int = -1, /) -> bytes: ...


class GGUFError(UserError):
    """The file is not a GGUF this parser reads; the message says where and why."""


class _Reader:
    """Counts bytes so errors can name the offset; refuses short reads."""

    def __init__(self, read: Read) -> None:
        self._read = read
        self.offset = 0
        self.order = "<"

    def take(self, size: int) -> bytes:
        data = self._read(size)
        if len(data) != size:
            raise GGUFError(
                f"GGUF truncated at byte {self.offset + len(data)}: wanted {size} bytes more"
            )
        self.offset += size
        return data

    def skip(self, size: int) -> None:
        while size > 0:  # in chunks: a skipped array may be megabytes
            chunk = min(size, 1 << 20)
            self.take(chunk)
            size -= chunk

    def number(self, fmt: str) -> int:
        value: int = struct.unpack(self.order + fmt, self.take(struct.calcsize(fmt)))[0]
        return value

    def string(self) -> str:
        length = self.number("Q")
        if length > MAX_STRING_BYTES:
            raise GGUFError(f"GGUF string of {length} bytes at byte {self.offset}: file is corrupt")
        return self.take(length).decode("utf-8", errors="replace")

    def skip_value(self, value_type: int) -> None:
        if value_type in FIXED_FORMATS:
            self.skip(struct.calcsize(FIXED_FORMATS[value_type]))
        elif value_type == STRING_TYPE:
            self.skip(self.number("Q"))
        elif value_type == ARRAY_TYPE:
            item_type, count = self.number("I"), self.number("Q")
            if count > MAX_ARRAY_ITEMS:
                raise GGUFError(f"GGUF array of {count} items at byte {self.offset}: corrupt")
            if item_type in FIXED_FORMATS:
                self.skip(count * struct.calcsize(FIXED_FORMATS[item_type]))
            else:
                for _ in range(count):
                    self.skip_value(item_type)
        else:
            raise GGUFError(f"GGUF value type {value_type} at byte {self.offset} is unknown")


def _header(reader: _Reader) -> int:
    magic = reader.take(4)
    if magic != MAGIC:
        raise GGUFError(f"not a GGUF file: starts with {magic!r}, not {MAGIC!r}")
    raw = reader.take(4)
    little, big = struct.unpack("<I", raw)[0], struct.unpack(">I", raw)[0]
    if little not in SUPPORTED_VERSIONS and big in SUPPORTED_VERSIONS:
        reader.order = ">"
    version = struct.unpack(reader.order + "I", raw)[0]
    if version not in SUPPORTED_VERSIONS:
        raise GGUFError(f"GGUF version {version} is not supported (only 2 and 3)")
    reader.number("Q")  # tensor count: not needed, tensors are never read
    return reader.number("Q")


def chat_templates(source: Read | Readable) -> dict[str, str]:
    """Every chat template in the GGUF's metadata, keyed by name (`""` for the default one)."""
    read: Read = source.read if isinstance(source, Readable) else source
    reader = _Reader(read)
    templates: dict[str, str] = {}
    for _ in range(_header(reader)):
        key = reader.string()
        value_type = reader.number("I")
        is_template = key == TEMPLATE_KEY or key.startswith(TEMPLATE_KEY + ".")
        if is_template and value_type == STRING_TYPE:
            templates[key[len(TEMPLATE_KEY) + 1 :]] = reader.string()
        else:
            reader.skip_value(value_type)
    return templates


def chat_template(source: Read | Readable) -> str | None:
    """The default chat template (`tokenizer.chat_template`), or None when the file has none."""
    return chat_templates(source).get("")
