"""The documented fact patterns: each kind matches what it names and nothing that merely looks
like it."""

from __future__ import annotations

import pytest

from pipeline.traces.compression.facts import (
    Fact,
    extract,
    identifiers,
    line_refs,
    numbers,
    paths,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("see src/gateway/proxy.mjs for the guard", "src/gateway/proxy.mjs"),
        ("open gateway.mjs first", "gateway.mjs"),
        ("it is in reproduce_bug.py.", "reproduce_bug.py"),
        ("GET /api/status returns 200", "/api/status"),
        ("the log is /var/log/ds4/gateway.log", "/var/log/ds4/gateway.log"),
        ("run ./scripts/run.sh now", "./scripts/run.sh"),
        ("in ../lib/util.ts,", "../lib/util.ts"),
        ("edit ~/.config/app.toml", "~/.config/app.toml"),
        ("the dir src/app/models/ holds it", "src/app/models/"),
        ("cd into /tmp", "/tmp"),
    ],
)
def test_path_pattern_matches(text: str, expected: str) -> None:
    assert paths(text) == [expected]


@pytest.mark.parametrize(
    "text",
    [
        "it is done.",  # a word ending a sentence is not a file name
        "e.g. this, i.e. that, etc.",
        "use and/or as needed",
        "restart the gateway/tunnel/dashboard services",  # words joined by slashes
        "use w/ care",
        "the I/O is slow",
        "throughput was 30 MB/s",
        "version 1.2.3 and 2.5 GB",
        "call http://127.0.0.1:30001/v1/chat/completions",  # a URL, not a path
        "the ratio 3/4 of it",
        "the host api.example.com answered",
    ],
)
def test_path_pattern_rejects(text: str) -> None:
    assert paths(text) == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("the guard at line 913 is missing", ["line 913"]),
        ("Line 913 again", ["line 913"]),
        ("see lines 40-52", ["lines 40-52"]),
        ("see lines 40 – 52", ["lines 40–52"]),
        ("crash at gateway.mjs:1005.", ["gateway.mjs:1005"]),
        ("at ./src/app.py:12:5 it fails", ["./src/app.py:12:5"]),
        ("at /srv/app/main.go:7", ["/srv/app/main.go:7"]),
    ],
)
def test_line_ref_pattern_matches(text: str, expected: list[str]) -> None:
    assert line_refs(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "the pipeline 913 ran",  # 'line' inside another word
        "we are online 5 days",
        "the line is long",
        "meet at 10:30 today",
        "connect to localhost:8080",  # a host and port, not a file
        "open http://example.com/app.py:80",
    ],
)
def test_line_ref_pattern_rejects(text: str) -> None:
    assert line_refs(text) == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("call sendBuffered() first", "sendBuffered"),
        ("the ConnectionPool leaks", "ConnectionPool"),
        ("bufferCandidate is a closure", "bufferCandidate"),
        ("set forward_response to true", "forward_response"),
        ("define __init__ here", "__init__"),
        ("it throws ERR_HTTP_HEADERS_SENT", "ERR_HTTP_HEADERS_SENT"),
        ("the socket gave ECONNRESET", "ECONNRESET"),
        ("tsc says TS2345", "TS2345"),
        ("the `.chat-panel__header` class", ".chat-panel__header"),
        ("style .status-badge--error", ".status-badge--error"),
        ("restart ds4-gateway", "ds4-gateway"),
        ("read ds.file_meta now", "file_meta"),
    ],
)
def test_identifier_pattern_matches(text: str, expected: str) -> None:
    assert identifiers(text) == [expected]


@pytest.mark.parametrize(
    "text",
    [
        "the handler crashed",  # plain English words
        "However, Dataset is a capitalised word",
        "the API and HTTP and ERROR and EVERY",  # acronyms and shouted words
        "a well-known end-to-end test",  # hyphenated prose
        "factor p-1 and q-1",  # arithmetic, not a kebab name
        "open reproduce_bug.py",  # the stem of a path is not counted again
        "it grew to 4 KiB",  # a unit, not a name
        "see https://example.com/max_tokens",
    ],
)
def test_identifier_pattern_rejects(text: str) -> None:
    assert identifiers(text) == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("it takes 30 ms", "30 ms"),
        ("it takes 30ms", "30 ms"),
        ("the heap is 2.5 GB.", "2.5 GB"),
        ("listen on port 30010", "port 30010"),
        ("Port 8080 is taken", "port 8080"),
        ("hit rate 99% now", "99%"),
        ("compressed 4.7x overall", "4.7x"),
        ("read 1,000 rows", "1,000 rows"),
        ("a 16k window", "16k"),
        ("throughput 30 MB/s", "30 MB/s"),
    ],
)
def test_number_pattern_matches(text: str, expected: str) -> None:
    assert numbers(text) == [expected]


@pytest.mark.parametrize(
    "text",
    [
        "there were 30 apples",
        "the answer is 42",
        "version 1.2.3 is out",
        "meet at 10:30",
        "the 3rd attempt",
        "hex 0x1F",
        "in v2 of it",
    ],
)
def test_number_pattern_rejects(text: str) -> None:
    assert numbers(text) == []


def test_extract_lists_each_distinct_fact_once_by_kind_in_first_occurrence_order() -> None:
    text = "Edit gateway.mjs:1005 (sendBuffered), then gateway.mjs again; sendBuffered takes 30 ms."
    assert extract(text) == (
        Fact("path", "gateway.mjs"),
        Fact("line_ref", "gateway.mjs:1005"),
        Fact("identifier", "sendBuffered"),
        Fact("number", "30 ms"),
    )


def test_extract_normalises_whitespace_inside_a_fact() -> None:
    assert Fact("line_ref", "line 913") in extract("at line\n   913 it breaks")
