"""The forced-exact layer: outputs no rule may compact, checked before any rule.

To torana-plugin-sdk's `ToolResultMustStayExact` and the compactors' size floor (sdk
tool_policy.go, plugins keyword_compactor and compactor, main.go), in their order:

1. size: fewer than 2,000 UTF-8 bytes (1,999 is not eligible, 2,000 is) -> `below_min_bytes`;
2. tool name -> `forced_exact:tool_name`: a token of the name (split on non-alphanumerics and
   case changes: `apply_patch`, `WriteFile`, `git-diff`, `text_editor`) is one of edit,
   editor, patch, write, diff, replace, delete, remove, error, errors; or, as Torana also
   does, the name's letters and digits run together contain edit, patch, write, diff, replace,
   delete, remove or error (`applypatch`, and also `credit_check`: Torana's substring rule,
   kept as it is);
3. content, case-insensitive -> `forced_exact:error_marker`: `error:`, `fatal:`, `panic:`,
   `traceback (most recent call last):`, `stack trace:`, `command failed`, `error[`, and the
   JSON markers `"is_error": true` and `"status": "error"` with any whitespace around the
   colon. Torana matches only the compact `"is_error":true`; JSON written with spaces is the
   same marker here (a deliberate divergence, docs/toolout.md);
4. non-zero exits -> `forced_exact:nonzero_exit`: `"exit_code": N` or `process exited with
   code N` anywhere (N a positive integer, as Torana's pattern), or a whole line `exit code N` /
   `exit status N` with N != 0;
5. FAIL lines -> `forced_exact:fail_line`: a line (trimmed, any case) that is `fail` or
   `failed`, or starts with `fail ` or `failed ` (Torana's test: `FAIL\\tpkg` and `FAIL: test`
   do not match it).

The evidence (the token, marker or line) goes into `ForcedExact.evidence`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

MIN_ELIGIBLE_BYTES = 2000

NAME_TOKENS = frozenset(
    {"edit", "editor", "patch", "write", "diff", "replace", "delete", "remove", "error", "errors"}
)
NAME_SUBSTRINGS = ("edit", "patch", "write", "diff", "replace", "delete", "remove", "error")
CONTENT_MARKERS = (
    "error:",
    "fatal:",
    "panic:",
    "traceback (most recent call last):",
    "stack trace:",
    "command failed",
    "error[",
)
_JSON_MARKERS = re.compile(r'"is_error"\s*:\s*true|"status"\s*:\s*"error"')
_NONZERO_EXIT = re.compile(r'(?:"exit_code"\s*:\s*|process exited with code\s+)([1-9][0-9]*)')
_EXIT_LINE = re.compile(r"exit (?:code|status) \s*([+-]?[0-9]+)")
# Name tokens: lower-case runs, Capitalised words, ACRONYMS before a capitalised word, digits.
_NAME_TOKEN = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")


@dataclass(frozen=True)
class ForcedExact:
    """Why an output must stay exact, and what in it said so."""

    reason: str  # below_min_bytes | forced_exact:tool_name | :error_marker | :nonzero_exit | ...
    evidence: str


def name_tokens(tool_name: str) -> list[str]:
    """Lower-cased tokens of a tool name, split on non-alphanumerics and case changes."""
    return [t.lower() for t in _NAME_TOKEN.findall(tool_name)]


def _tool_name(tool_name: str) -> str | None:
    for token in name_tokens(tool_name):
        if token in NAME_TOKENS:
            return token
    compact = "".join(c for c in tool_name.lower() if c.isalnum())
    for marker in NAME_SUBSTRINGS:
        if marker in compact:
            return f"{marker} (in {compact})"
    return None


def _error_marker(lower: str) -> str | None:
    for marker in CONTENT_MARKERS:
        if marker in lower:
            return marker
    found = _JSON_MARKERS.search(lower)
    return found.group(0) if found else None


def _nonzero_exit(lower: str, lines: list[str]) -> str | None:
    found = _NONZERO_EXIT.search(lower)
    if found:
        return found.group(0)
    for line in lines:
        whole = _EXIT_LINE.fullmatch(line)
        if whole and int(whole.group(1)) != 0:
            return line
    return None


def _fail_line(lines: list[str]) -> str | None:
    for line in lines:
        if line in ("fail", "failed") or line.startswith(("fail ", "failed ")):
            return line
    return None


@lru_cache(maxsize=4096)  # a replay asks about every visible output on every request
def forced_exact(tool_name: str, content: str) -> ForcedExact | None:
    """The first forced-exact rule the output meets, in Torana's order; None if it is eligible."""
    size = len(content.encode("utf-8"))
    if size < MIN_ELIGIBLE_BYTES:
        return ForcedExact("below_min_bytes", f"{size} bytes")
    token = _tool_name(tool_name)
    if token is not None:
        return ForcedExact("forced_exact:tool_name", token)
    lower = content.lower()
    marker = _error_marker(lower)
    if marker is not None:
        return ForcedExact("forced_exact:error_marker", marker)
    lines = [line.strip() for line in lower.split("\n")]
    exit_evidence = _nonzero_exit(lower, lines)
    if exit_evidence is not None:
        return ForcedExact("forced_exact:nonzero_exit", exit_evidence)
    fail = _fail_line(lines)
    if fail is not None:
        return ForcedExact("forced_exact:fail_line", fail[:80])
    return None
