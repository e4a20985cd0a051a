"""The legend every report gives of its arms (or policies): each arm the run planned and what
it is, so a table that names an arm by its letter can be read without the config files.

The descriptions are handed down by the study's definition (its `describe`), never looked up
here; an arm the definition does not describe says so rather than being left out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pipeline.config.descriptions import NO_DESCRIPTION


def legend_section(
    title: str, noun: str, arms: Sequence[str], descriptions: Mapping[str, str] | None
) -> list[str]:
    """`## TITLE` and a two-column table (NOUN, description) of `arms`, in their order; no
    section when the report was drawn without descriptions or the run planned no arm."""
    if descriptions is None or not arms:
        return []
    lines = [f"## {title}", "", f"| {noun} | description |", "|---|---|"]
    for arm in arms:
        text = descriptions.get(arm, NO_DESCRIPTION).replace("|", "/")
        lines.append(f"| `{arm}` | {text} |")
    return [*lines, ""]
