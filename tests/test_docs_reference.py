"""The docs are a reference: they say what is true, not how the code got there.

A reader of docs/ or README.md needs the rule, its reason and its measurement, never the story
of which session, branch or helper wrote it. Each pattern below is development talk, chosen so
that the technical words it resembles still pass: a sweep session (one `sweep` invocation on a
run directory), a toolout transcript session, the `requests.session` column, an attempt.
Protocol decisions live in one doc per study, the engine's and the endpoints'; the old one is gone.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
STUDY_DOCS = ("engine.md", "endpoints.md", "carrier.md", "toolout.md", "traces.md")

DEVELOPMENT_TALK: dict[str, str] = {
    r"\b(this|that|the previous|an earlier|the last) session (measured|found|built|added|fixed|"
    r"changed|wrote|tried)\b": "work a development session did",
    r"\bthe session before\b": "a development session",
    r"\bbranch(es)? `": "a development branch",
    r"\bbranch p\d": "a development branch",
    r"\b(on|in) (this|that|the) branch\b": "a development branch",
    r"\bhelpers?\b": "a helper that wrote the code or the doc",
    r"\bthis turn\b": "a development turn",
    r"\bturn \d+ \(issue": "a development turn",
    r"\bfound here, fixed\b": "a fix told as a story",
    r"\bagainst the fixed tree\b": "a fix told as a story",
    r"\bbefore the fix(es)?\b": "a fix told as a story",
    r"\bthe old code\b": "code that is gone",
    r"\brefactor\b": "a change told as a story",
    r"\buntil issue \d+\b": "history instead of the rule",
}


def reference_docs() -> list[Path]:
    return [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]


def development_talk(text: str) -> list[tuple[int, str, str]]:
    """(line number, matched phrase, why it is development talk) for every hit in `text`."""
    hits = []
    for number, line in enumerate(text.splitlines(), start=1):
        for pattern, why in DEVELOPMENT_TALK.items():
            for match in re.finditer(pattern, line, flags=re.IGNORECASE):
                hits.append((number, match.group(0), why))
    return hits


@pytest.mark.parametrize(
    "sentence",
    [
        "This session measured 7 minutes.",
        "The session before found the bug.",
        "Merged from branch `p8b-corpus`.",
        "A helper rewrote the importer.",
        "## Edges, turn 4 (issue 32): inputs",
        "Replayed against the fixed tree.",
        "Until issue 9 the panel ran llama-cpp-python.",
    ],
)
def test_development_talk_is_caught(sentence: str) -> None:
    assert development_talk(sentence)


@pytest.mark.parametrize(
    "sentence",
    [
        "`spent_usd` (what this session paid); a resume is a new sweep session.",
        "| session | int32 | the run's session that made the request |",
        "`sessions` has one row per transcript; a user's JSONL holds one session.",
        "A retryable row is re-run as a new attempt; an earlier attempt stays on record.",
        "The previous request's tokens from the output's position on.",
    ],
)
def test_technical_words_pass(sentence: str) -> None:
    assert not development_talk(sentence)


def test_no_doc_speaks_of_sessions_branches_helpers_or_history() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{number}: {phrase!r} ({why})"
        for path in reference_docs()
        for number, phrase, why in development_talk(path.read_text(encoding="utf-8"))
    ]
    assert not found, "development talk in the reference docs:\n" + "\n".join(found)


def test_the_protocol_is_split_into_the_engine_and_one_doc_per_study() -> None:
    assert not (DOCS / "protocol.md").exists()
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for name in STUDY_DOCS:
        doc = DOCS / name
        assert doc.is_file(), f"docs/{name} is missing"
        assert doc.read_text(encoding="utf-8").startswith("# "), f"docs/{name} has no title"
        assert f"`docs/{name}`" in readme, f"README.md's Docs list does not name docs/{name}"
