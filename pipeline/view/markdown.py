"""The subset of Markdown the reports write, as HTML: headings, pipe tables, lists, images.

The reports (analysis/report.md of every study) are written by our own jobs, so this renders
what they use and nothing more: `#` headings, paragraphs, `-` lists, `|` tables, fenced code,
`![alt](file.png)` images, `**bold**`, `*em*`, `` `code` `` and `<br>` inside table cells.
A cell of a column headed arm or policy whose text is a name in `titles` (its description)
carries it as a tooltip, so a report's per-arm tables read without the legend beside them.
Everything is escaped first; an image's file name is handed to `figure_src`, which the page
layer resolves through the path guard (a name outside the run directory is never linked).
No dependency: a Markdown library would render arbitrary HTML a report never contains.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from markupsafe import Markup, escape

_IMAGE = re.compile(r"!\[([^\]]*)\]\(([^)\s]+)\)")
_CODE = re.compile(r"`([^`]+)`")
_BOLD = re.compile(r"\*\*(.+?)\*\*")
_EM = re.compile(r"(?<![\w*])\*([^*\s][^*]*)\*(?![\w*])")
_NAMED_COLUMN = re.compile(r"\b(arm|policy)\b", re.IGNORECASE)


@dataclass(frozen=True)
class Section:
    """One `## ` section of a report: its title and its body as HTML."""

    title: str
    html: Markup


def inline(text: str, figure_src: Callable[[str], str | None]) -> str:
    out = str(escape(text)).replace("&lt;br&gt;", "<br>")

    def image(match: re.Match[str]) -> str:
        src = figure_src(match.group(2))
        if src is None:
            return f"<em>[figure {match.group(2)} not available]</em>"
        return f'<img class="figure" alt="{match.group(1)}" src="{src}">'

    out = _IMAGE.sub(image, out)
    out = _CODE.sub(r"<code>\1</code>", out)
    out = _BOLD.sub(r"<strong>\1</strong>", out)
    return _EM.sub(r"<em>\1</em>", out)


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def render(
    text: str, figure_src: Callable[[str], str | None], titles: Mapping[str, str] | None = None
) -> Markup:
    """The whole document as HTML."""
    html: list[str] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("```"):
            end = next(
                (j for j in range(i + 1, len(lines)) if lines[j].startswith("```")), len(lines)
            )
            html.append(f"<pre>{escape(chr(10).join(lines[i + 1 : end]))}</pre>")
            i = end + 1
        elif heading := re.match(r"(#{1,6}) (.*)", line):
            level = min(6, len(heading.group(1)) + 1)  # the page owns <h1>
            html.append(f"<h{level}>{inline(heading.group(2), figure_src)}</h{level}>")
            i += 1
        elif line.startswith("|"):
            block = []
            while i < len(lines) and lines[i].startswith("|"):
                block.append(lines[i])
                i += 1
            html.append(_table(block, figure_src, titles or {}))
        elif re.match(r"\s*[-*] ", line):
            items = []
            while i < len(lines) and re.match(r"\s*[-*] ", lines[i]):
                items.append(f"<li>{inline(lines[i].strip()[2:], figure_src)}</li>")
                i += 1
            html.append("<ul>" + "".join(items) + "</ul>")
        elif not line.strip():
            i += 1
        else:
            para = []
            while (
                i < len(lines)
                and lines[i].strip()
                and not re.match(r"(#|\||```|\s*[-*] )", lines[i])
            ):
                para.append(lines[i])
                i += 1
            html.append(f"<p>{inline(' '.join(para), figure_src)}</p>")
    return Markup("\n".join(html))


def _td(
    text: str, named: bool, figure_src: Callable[[str], str | None], titles: Mapping[str, str]
) -> str:
    title = titles.get(text.strip("`").strip()) if named else None
    attribute = f' title="{escape(title)}"' if title else ""
    return f"<td{attribute}>{inline(text, figure_src)}</td>"


def _table(
    block: list[str], figure_src: Callable[[str], str | None], titles: Mapping[str, str]
) -> str:
    rows = [_cells(line) for line in block]
    body = rows[2:] if len(rows) > 1 and set("".join(rows[1])) <= set("-: ") else rows[1:]
    head = "".join(f"<th>{inline(c, figure_src)}</th>" for c in rows[0])
    named = [bool(_NAMED_COLUMN.search(c)) for c in rows[0]]
    cells = "".join(
        "<tr>"
        + "".join(
            _td(c, i < len(named) and named[i], figure_src, titles) for i, c in enumerate(row)
        )
        + "</tr>"
        for row in body
    )
    return f'<table class="report"><thead><tr>{head}</tr></thead><tbody>{cells}</tbody></table>'


def sections(
    text: str, figure_src: Callable[[str], str | None], titles: Mapping[str, str] | None = None
) -> list[Section]:
    """The report split at `## ` headings; what precedes the first one is the `Summary`."""
    parts: list[tuple[str, list[str]]] = [("Summary", [])]
    for line in text.splitlines():
        if line.startswith("## "):
            parts.append((line[3:].strip(), []))
        else:
            parts[-1][1].append(line)
    out = []
    for title, body in parts:
        if not any(line.strip() for line in body):
            continue
        out.append(Section(title, render("\n".join(body), figure_src, titles)))
    return out
