"""What each option of a config group is, in one line: `python -m pipeline list`, the studies'
`describe` and the reports' legends read it here.

A file's description is its `description` key; a file without one (the scenarios and panels,
whose schemas have no such key) is described by the first sentence of its leading comment (the
`# @package` line skipped); a file with neither says NO_DESCRIPTION. Its name is its `name` key,
else its stem. A file that is not YAML, or not a mapping, is one line naming it (ConfigError):
the same file would stop a sweep.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import NamedTuple

import yaml

from pipeline.config.load import conf_dir
from pipeline.config.strict import ConfigError

NO_DESCRIPTION = "(no description)"
_SENTENCE_END = re.compile(r"(?<=[.!?])\s")


class Described(NamedTuple):
    """One option of a config group: its name and its one-line description."""

    name: str
    description: str


def leading_comment(text: str) -> str:
    """The first sentence of the comment block a file opens with ('' without one)."""
    words: list[str] = []
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped.startswith("#"):
            break
        body = stripped.lstrip("#").strip()
        if body.startswith("@package"):
            continue
        if not body:
            if words:
                break
            continue
        words.append(body)
    return _SENTENCE_END.split(" ".join(words), maxsplit=1)[0] if words else ""


def describe_file(path: Path) -> Described:
    """The name and description of one config file (see the module doc)."""
    text = path.read_text(encoding="utf-8")
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise ConfigError(f"{path} is not valid YAML{where}; fix it") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path} must be a mapping of keys, not a {type(data).__name__}")
    name = data.get("name")
    stated = data.get("description")
    description = stated.strip() if isinstance(stated, str) and stated.strip() else ""
    return Described(
        name if isinstance(name, str) and name else path.stem,
        " ".join(description.split()) or leading_comment(text) or NO_DESCRIPTION,
    )


def describe_group(group: str) -> list[Described]:
    """Every option of conf/GROUP/ (a nested group such as `toolout/policies` too), by name."""
    folder = conf_dir() / group
    return sorted((describe_file(p) for p in folder.glob("*.yaml")), key=lambda d: d.name)


def descriptions(group: str) -> dict[str, str]:
    """name -> description of every option of conf/GROUP/."""
    return {found.name: found.description for found in describe_group(group)}
