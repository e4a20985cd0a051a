"""The trace-quality heuristics (issue 21): each pattern set passes what it names and fails
what it does not."""

from __future__ import annotations

import pytest

from pipeline.traces.scan import is_repetitive, quality

SELF_CORRECTING = [
    "The bug is in parse(). Wait, it is in tokenize().",
    "Actually, the test uses port 30001.",
    "Hmm, that path is wrong.",
    "On second thought I should keep the guard.",
    "Let me re-check the import order.",
    "Let me reconsider: the cache is keyed by body.",
    "I was wrong about the line number.",
    "That's not right; the header was already sent.",
    "I misread the traceback.",
    "It turns out the fixture is stale.",
    "That didn't work, so I try a smaller patch.",
    "No, that file is generated.",
]
NOT_SELF_CORRECTING = [
    "Open gateway.mjs at line 913 and add the guard.",
    "Run the targeted suites, then restart the tunnel.",
    "No tests cover this path yet.",
    "But the server answers 200 on /api/status.",
    "The awaiting state is set before the call.",  # 'wait' only inside a word
]
HEDGED = [
    "Maybe the cache is cold.",
    "This is probably the race.",
    "It might be the proxy.",
    "I think the flag is ignored.",
    "I'm not sure the test is deterministic.",
    "It seems the port is taken.",
    "The lock is likely held by the writer.",
    "Presumably the retry covers it.",
]
NOT_HEDGED = [
    "The port is 30010.",
    "Apply five edits and run node --check.",
    "The mighty refactor landed in 2024.",  # 'might' only inside a word
]


@pytest.mark.parametrize("text", SELF_CORRECTING)
def test_self_correction_patterns_match(text: str) -> None:
    assert quality(text).self_correction


@pytest.mark.parametrize("text", NOT_SELF_CORRECTING)
def test_plain_statements_are_not_self_correction(text: str) -> None:
    assert not quality(text).self_correction


@pytest.mark.parametrize("text", HEDGED)
def test_hedging_patterns_match(text: str) -> None:
    assert quality(text).hedging


@pytest.mark.parametrize("text", NOT_HEDGED)
def test_plain_statements_are_not_hedging(text: str) -> None:
    assert not quality(text).hedging


def test_a_restated_sentence_is_repetition() -> None:
    text = (
        "I need to check the config loader first. Then the tests. "
        "I need to check the config loader first."
    )
    assert is_repetitive(text)


def test_looping_on_a_phrase_is_repetition() -> None:
    assert is_repetitive("let me look at the file again " * 20)


def test_a_path_mentioned_twice_is_not_repetition() -> None:
    text = (
        "Open src/app/gateway.mjs and find sendBuffered. The guard goes before "
        "res.writeHead in src/app/gateway.mjs. Then run the suite for the proxy path."
    )
    assert not is_repetitive(text)


def test_dense_distinct_text_is_not_repetition() -> None:
    words = " ".join(f"w{i}" for i in range(300))
    assert not is_repetitive(words)
