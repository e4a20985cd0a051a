"""The rule modes, to torana-plugins' behaviour: deterministic, keyword, model (exact and
source need no code: they return the output).

- deterministic (sdk `DeterministicToolReplacement`): Torana's `[torana-tool-output v1]`
  block: mode, tool, one-line arguments (at most 512 bytes), original bytes, SHA-256, retained
  and omitted bytes, the rerun instruction (the rule's, or Torana's default), then a 768-byte
  head and a 768-byte tail cut on UTF-8 boundaries (when what follows the head is 768 bytes or
  less it all joins the head). A pure function of (tool, arguments, content, rerun), so its
  bytes are the same on every request. Not applied when the block is not shorter than the
  output (`not_shorter`). Without first_pass it waits for one exact exposure (`first_exposure`).
- keyword (plugin keyword_compactor), only after one exact exposure: more than 50 lines; the
  intent's keywords (lower-cased words of 3+ bytes, stripped of punctuation, stop words
  dropped, duplicates kept as Torana does); lines scored by how many keywords they contain,
  ranked by score then position; the ranked lines first, then ±2 lines of context in rank
  order, at most 200 lines in original order; a join over 8,000 bytes is cut to a head and tail
  with Torana's byte-count notice. Applied only if `worthwhile` (the result is less than half
  the original). The intent is the replay's (the calling turn's text plus the arguments),
  standing in for the intent plugin's captured reason.
- model (plugin compactor), only after one exact exposure: reuse the previous request's
  summary if there was one (never re-asked, so the bytes are stable; no gate on a reuse, since
  a reuse rewrites nothing); else the gate's preflight at 0 candidate bytes, the summariser,
  a summary strictly shorter than the output, and the gate's final check at its size.
"""

from __future__ import annotations

import hashlib
import re
from functools import lru_cache

from pipeline.toolout.policies.base import (
    ModelSummaries,
    OutputView,
    Rendering,
    compacted,
    exact,
    utf8_len,
)

MARKER = "[torana-tool-output v1]"
MARKER_END = "[/torana-tool-output]"
RETAINED_PART_BYTES = 768
MAX_ARGUMENT_BYTES = 512
DEFAULT_RERUN = "Re-run this tool with the original arguments to recover the exact output."

KEYWORD_MIN_LINES = 51  # "more than 50 lines"
CONTEXT_LINES = 2
MAX_KEEP_LINES = 200
MAX_RESULT_BYTES = 8000
MIN_KEYWORD_BYTES = 3
STOP_WORDS = frozenset(
    {
        "the", "a", "an", "is", "are", "in", "of", "to", "for", "and", "or", "that", "this",
        "be", "it", "what", "find", "extract", "look", "from", "with", "specify", "explicitly",
        "critical", "specifically", "information", "output", "tool", "result", "need",
    }
)  # fmt: skip
_KEYWORD_TRIM = ".,;:!?\"'()[]{}"
# Go's strings.Fields splits on Unicode White_Space, which Python's str.split() widens.
_WHITESPACE = re.compile("[\t\n\v\f\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+")


def _fields(text: str) -> list[str]:
    return [w for w in _WHITESPACE.split(text) if w]


def _one_line(text: str) -> str:
    return " ".join(_fields(text))


def _is_rune_start(byte: int) -> bool:
    return byte & 0xC0 != 0x80


def _head(data: bytes, limit: int) -> bytes:
    """The longest prefix of at most `limit` bytes that does not split a UTF-8 character."""
    if limit <= 0:
        return b""
    if len(data) <= limit:
        return data
    end = limit
    while end > 0 and not _is_rune_start(data[end]):
        end -= 1
    return data[:end]


def _tail(data: bytes, limit: int) -> bytes:
    """The longest suffix of at most `limit` bytes that does not split a UTF-8 character."""
    if limit <= 0:
        return b""
    if len(data) <= limit:
        return data
    start = len(data) - limit
    while start < len(data) and not _is_rune_start(data[start]):
        start += 1
    return data[start:]


@lru_cache(maxsize=4096)  # a pure function of its input, asked for on every later request
def deterministic_replacement(tool_name: str, arguments: str, content: str, rerun: str) -> str:
    """Torana's deterministic block for `content`: a pure function of its arguments."""
    data = content.encode("utf-8")
    head = _head(data, RETAINED_PART_BYTES)
    remaining = data[len(head) :]
    tail = b""
    if len(remaining) > RETAINED_PART_BYTES:
        tail = _tail(remaining, RETAINED_PART_BYTES)
    else:
        head += remaining
    retained = len(head) + len(tail)
    args = _one_line(arguments).encode("utf-8")
    if len(args) > MAX_ARGUMENT_BYTES:
        args = _head(args, MAX_ARGUMENT_BYTES) + b"..."
    lines = [
        MARKER,
        "mode: deterministic",
        f"tool: {_one_line(tool_name)}",
        f"tool_arguments: {args.decode('utf-8')}",
        f"original_bytes: {len(data)}",
        f"sha256: {hashlib.sha256(data).hexdigest()}",
        f"retained_bytes: {retained}",
        f"omitted_bytes: {max(0, len(data) - retained)}",
        f"rerun: {_one_line(rerun) if rerun.strip() else DEFAULT_RERUN}",
    ]
    text = "\n".join(lines)
    if head:
        text += "\n--- retained head ---\n" + head.decode("utf-8")
    if tail:
        text += "\n--- retained tail ---\n" + tail.decode("utf-8")
    return text + "\n" + MARKER_END


def worthwhile(original_bytes: int, result_bytes: int) -> bool:
    """A reduction of more than half: the result is strictly smaller than what it removes.

    2,000 -> 1,000 is not worthwhile, 2,001 -> 1,000 is; 10,000 -> 4,999 is, 10,000 -> 5,000 is not.
    """
    return result_bytes < original_bytes - result_bytes


def keywords(intent: str) -> list[str]:
    """The intent's keywords, as Torana's extractKeywords (duplicates kept)."""
    found = []
    for word in _fields(intent.lower()):
        w = word.strip(_KEYWORD_TRIM)
        if utf8_len(w) >= MIN_KEYWORD_BYTES and w not in STOP_WORDS:
            found.append(w)
    return found


def _truncation_notice(removed: int) -> bytes:
    return f"\n\n... [{removed} bytes truncated by Torana] ...\n\n".encode()


def truncate_head_tail(data: bytes, limit: int) -> bytes:
    """At most `limit` bytes, notice included: head, Torana's notice, tail (keyword's cap)."""
    if limit <= 0:
        return b""
    if len(data) <= limit:
        return data
    notice_len = len(_truncation_notice(len(data)))
    if notice_len > limit:
        return _head(data, limit)
    budget = limit - notice_len
    head = _head(data, budget // 2)
    tail = _tail(data, budget - len(head))
    return head + _truncation_notice(len(data) - len(head) - len(tail)) + tail


def _select_lines(lines: list[str], words: list[str]) -> set[int]:
    scored = []
    for i, line in enumerate(lines):
        lower = line.lower()
        score = sum(1 for w in words if w in lower)
        if score:
            scored.append((-score, i))
    scored.sort()
    keep: set[int] = set()
    for _, i in scored:  # the evidence lines first: context never displaces a match
        if len(keep) >= MAX_KEEP_LINES:
            break
        keep.add(i)
    for _, i in scored:
        for j in range(max(0, i - CONTEXT_LINES), min(len(lines), i + CONTEXT_LINES + 1)):
            if len(keep) >= MAX_KEEP_LINES:
                return keep
            keep.add(j)
    return keep


@lru_cache(maxsize=4096)
def keyword_extract(content: str, intent: str) -> tuple[str, str]:
    """(text, reason): the kept lines, or the content with why nothing was kept."""
    words = keywords(intent)
    if not words:
        return content, "no_keywords"
    lines = content.split("\n")
    if len(lines) < KEYWORD_MIN_LINES:
        return content, "too_few_lines"
    keep = _select_lines(lines, words)
    if not keep:
        return content, "no_matches"
    joined = "\n".join(line for i, line in enumerate(lines) if i in keep).encode("utf-8")
    return truncate_head_tail(joined, MAX_RESULT_BYTES).decode("utf-8"), ""


def render_deterministic(view: OutputView, first_pass: bool, rerun: str, rule: str) -> Rendering:
    if view.exposures == 0 and not first_pass:
        return exact(view, "first_exposure", rule)
    text = deterministic_replacement(view.tool_name, view.arguments, view.content, rerun)
    size = len(text) if text.isascii() else len(text.encode("utf-8"))  # utf8_len, inline
    if size >= view.size_bytes:
        return exact(view, "not_shorter", rule)
    return compacted(view, text, "deterministic", rule)


def render_keyword(view: OutputView, rule: str) -> Rendering:
    if view.exposures == 0:
        return exact(view, "first_exposure", rule)
    text, why = keyword_extract(view.content, view.intent)
    if text == view.content:
        return exact(view, why or "unchanged", rule)
    size = utf8_len(text)
    if not worthwhile(view.size_bytes, size):
        return exact(view, "not_worthwhile", f"{rule}: {size} of {view.size_bytes} bytes")
    return compacted(view, text, "keyword", rule)


def render_model(  # noqa: PLR0911 - one return per step of Torana's compactor
    view: OutputView, summaries: ModelSummaries, rule: str
) -> Rendering:
    if view.exposures == 0:
        return exact(view, "first_exposure", rule)
    if view.previous is not None and view.previous != view.content:
        return compacted(view, view.previous, "model", rule)
    if summaries.gate is None:
        return exact(view, "gate_closed", rule)
    approve, why = summaries.gate(view, 0)
    if not approve:
        return exact(view, "preflight_rejected", f"{rule}: {why}")
    if summaries.summarise is None:
        return exact(view, "no_summariser", rule)
    summary = summaries.summarise(view)
    if summary is None:
        return exact(view, "summary_unavailable", rule)
    size = utf8_len(summary)
    if not summary or size >= view.size_bytes:
        return exact(view, "not_shorter", f"{rule}: {size} of {view.size_bytes} bytes")
    approve, why = summaries.gate(view, size)
    if not approve:
        return exact(view, "gate_rejected", f"{rule}: {why}")
    return compacted(view, summary, "model", rule)
