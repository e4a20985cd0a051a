"""Unique element ids in an exported file: each section's ids carry the section's prefix.

A page is written for the served viewer, where it is the only page of its document, so its
ids (`verdict`, `checks`, `units-table`) are unique there. An export holds many pages, so each
section is rewritten as it is streamed: an id, and every attribute that names one in the same
section (`for`, `data-filter-for`, `data-counter`, an `href="#id"`), gains the section's prefix
(`u12-verdict`). The prefix is the section's anchor and a dash, or else it is named on the
section as `data-ids` (a run's overview and units); the script finds a section's parts by it
(`view.js`, `part`). An `href="#name"` that names a page of the run
(`#chunks`, a study's `RunSection`) is mapped to that page's anchor in the file.

Only tags are rewritten, never the text of a `<script>` (its JSON or code may hold anything);
an attribute inside text cannot match, since the templates escape `"` and `<` in text.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

_SCRIPT = re.compile(r"(<script\b.*?</script>)", re.DOTALL | re.IGNORECASE)
_TAG = re.compile(r"<[A-Za-z][^<>]*>")
_NAMING = re.compile(r'(\s(?:id|for|data-filter-for|data-counter)=")([^"]*)(")')
_ID = re.compile(r'\sid="([^"]*)"')
_HREF = re.compile(r'(\shref="#)([^"?]*)([^"]*")')


def prefixed(html: str, prefix: str, pages: Mapping[str, str] | None = None) -> str:
    """`html` with its ids prefixed by `prefix` and its page links mapped by `pages`
    (`{"chunks": "r1-chunks"}`); unchanged when there is nothing to do."""
    html = str(html)  # never Markup: adding a str to Markup would escape the str
    if not prefix and not pages:
        return html
    pages = pages or {}
    parts = _SCRIPT.split(html)
    ids = {m.group(1) for part in parts[::2] for m in _ID.finditer(part)}

    def href(match: re.Match[str]) -> str:
        name = match.group(2)
        if name in ids:
            return f"{match.group(1)}{prefix}{name}{match.group(3)}"
        if name in pages:
            return f"{match.group(1)}{pages[name]}{match.group(3)}"
        return match.group(0)

    def tag(match: re.Match[str]) -> str:
        text = _NAMING.sub(
            lambda m: f"{m.group(1)}{prefix}{m.group(2)}{m.group(3)}", match.group(0)
        )
        return _HREF.sub(href, text)

    parts[::2] = [_TAG.sub(tag, part) for part in parts[::2]]
    return "".join(parts)
