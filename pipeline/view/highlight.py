"""Text with given values marked (planted facts, secrets in a prompt, facts kept), for the
studies' own pages (`pipeline.study.StudyPages`).

Matching is on the raw text (longest value first, so a value inside a longer one is not marked
twice), then every piece is escaped: the marks are the only HTML in the result.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping

from markupsafe import Markup, escape


def mark(text: str | None, values: Mapping[str, str]) -> Markup:
    """`text` escaped, each occurrence of a key of `values` in `<mark class=VALUE>`."""
    if not text:
        return Markup("")
    wanted = sorted((v for v in values if v), key=len, reverse=True)
    if not wanted:
        return Markup(escape(text))
    pattern = re.compile("|".join(re.escape(v) for v in wanted))
    out: list[str] = []
    last = 0
    for match in pattern.finditer(text):
        out.append(str(escape(text[last : match.start()])))
        css = values[match.group()]
        out.append(f'<mark class="{escape(css)}">{escape(match.group())}</mark>')
        last = match.end()
    out.append(str(escape(text[last:])))
    return Markup("".join(out))


def line_diff(before: str, after: str, *, labels: tuple[str, str]) -> Markup:
    """A unified line diff as HTML (`-` lines in `del`, `+` lines in `ins`); empty if equal."""
    lines = list(
        difflib.unified_diff(
            before.splitlines(),
            after.splitlines(),
            fromfile=labels[0],
            tofile=labels[1],
            lineterm="",
        )
    )
    out = []
    for line in lines:
        css = "add" if line.startswith("+") else "del" if line.startswith("-") else "ctx"
        out.append(f'<span class="{css}">{escape(line)}</span>')
    return Markup("\n".join(out))
