"""The concrete facts of a reasoning trace: file paths, line references, identifiers, numbers.

The seed measured "verbatim survival of file paths, identifiers, and numbers"; it did not
publish its patterns, so these are ours (docs/traces.md, "Reasoning traces: compression").
Each kind is extracted independently, so one string may yield facts of two kinds
(`gateway.mjs:1005` is a line reference and contains the path `gateway.mjs`).

- **path**: an absolute path (`/api/status`, `/tmp`), a relative one that starts `./`, `../`
  or `~/`, ends in `/` (`src/app/`) or ends in a known extension (`src/app.py`), or a bare
  file name with a known extension (`gateway.mjs`). `and/or`, `I/O`, `MB/s`,
  `gateway/tunnel/dashboard` (slashes between words), `e.g.` and a word ending a sentence are
  not paths. URLs are not paths, nor is the path inside one.
- **line_ref**: `line 913`, `lines 40-52` (also `Line`, an en dash), or `file.ext:1005`
  (`:col` kept). `pipeline 9`, `10:30` and `host:8080` are not.
- **identifier**: camelCase (`sendBuffered`), CamelCase of two or more humps
  (`ConnectionPool`), snake_case (`forward_response`, `__init__`), SCREAMING_SNAKE
  (`ERR_HTTP_HEADERS_SENT`), listed errno names (`ECONNRESET`), letter-digit codes (`TS2345`),
  CSS classes with a hyphen or underscore (`.chat-panel__header`), and kebab names of five
  characters or more holding a digit (`ds4-gateway`; `p-1` is arithmetic). A plain English
  word, a capitalised word, an acronym and a hyphenated word (`well-known`) are not.
  Identifiers inside paths and URLs are not counted again (the stem `reproduce_bug` of
  `reproduce_bug.py`), nor are units (`KiB`). Not covered: dotted names (`os.path.join`
  gives none) and acronym-led CamelCase (`HTTPServer`).
- **number**: a number with a unit from a fixed list (`30 ms`, `2.5 GB`, `1,000 rows`), an
  attached `%`, `x`, `×` or `k` (`99%`, `4.7x`, `16k`), or a port (`port 30010`). A bare
  number, a version (`1.2.3`), a clock time and a number with a word not in the list
  (`30 apples`) are not.

Normalisation: runs of whitespace become one space; a number and its unit are written with
one space (`30ms` -> `30 ms`; `%` and `x` stay attached); `Line`/`Lines` is lower-cased.
Everything else is kept verbatim, case included.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

FactKind = Literal["path", "line_ref", "identifier", "number"]
KINDS: tuple[FactKind, ...] = ("path", "line_ref", "identifier", "number")


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


# Extensions a bare file name (or a one-slash relative path) must end in to count as a path.
EXTENSIONS = frozenset(
    _words(
        "py pyi ipynb js mjs cjs jsx ts tsx json jsonl yaml yml toml ini cfg conf env lock md rst "
        "txt csv tsv log css scss less html htm vue svelte go rs c h cc cpp hpp java kt kts swift "
        "rb php sh bash zsh ps1 sql proto gradle xml gguf parquet traj jinja j2 pony lua zig"
    )
)

# Units a number must carry to count as a fact (case-sensitive; listed spellings only).
UNITS = _words(
    "ns µs us ms s sec secs seconds second min mins minutes minute h hr hrs hours hour days "
    "B KB MB GB TB PB kB KiB MiB GiB TiB kb mb gb bytes byte bits "
    "Hz kHz MHz GHz px rem fps rps qps req/s MB/s GB/s tok/s "
    "tokens token chars characters lines rows files requests workers threads cores"
)

_UNIT_WORDS = frozenset(UNITS)

_URL = re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s<>\"'`)\]]+")
_TRAIL = ".,;:!?'\")]}"

_SEGMENT = r"[\w.@+-]+"
_PATH = re.compile(rf"(?<![\w/.~@:-])(?:~/|\.\./|\./|/)?{_SEGMENT}(?:/{_SEGMENT})*/?")
_LINE_WORD = re.compile(r"\b[Ll]ines? \d+(?:\s?[-–]\s?\d+)?\b")
_FILE_LINE = re.compile(
    r"(?<![\w/.~-])((?:~/|\.\.?/|/)?(?:[\w.@+-]+/)*[\w@+-]+(?:\.[\w-]+)*\.([A-Za-z0-9]+))"
    r":\d+(?::\d+)?\b"
)

# POSIX / Node errno names: listed, since "any E plus capitals" also takes ERROR and EVERY.
ERRNO_NAMES = frozenset(
    _words(
        "EACCES EADDRINUSE EADDRNOTAVAIL EAGAIN EBADF EBUSY ECONNABORTED ECONNREFUSED ECONNRESET "
        "EEXIST EHOSTUNREACH EINTR EINVAL EIO EISDIR EMFILE ENETUNREACH ENOENT ENOMEM ENOSPC "
        "ENOTDIR ENOTEMPTY ENOTFOUND EPERM EPIPE EROFS ETIMEDOUT"
    )
)

_IDENTIFIER = re.compile(
    r"(?<![\w-])(?:"
    r"__[a-z][a-z0-9]*__"  # __init__
    r"|_{0,2}[a-z][a-z0-9]*(?:_[a-z0-9]+)+_{0,2}"  # snake_case
    r"|[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+"  # SCREAMING_SNAKE, ERR_HTTP_HEADERS_SENT
    r"|[A-Z]{1,4}\d{3,5}"  # letter-digit codes: TS2345, E1101
    r"|E[A-Z]{2,}"  # errno names, kept only when listed (below)
    r"|[a-z][a-z0-9]*(?:[A-Z][a-z0-9]*)+"  # camelCase
    r"|[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+"  # CamelCase, two humps or more
    r"|[a-z][a-z0-9]*(?:-[a-z0-9]+)+"  # kebab: kept only when it holds a digit (below)
    r")(?![\w-])"
    r"|(?<![\w./-])\.[a-z][a-z0-9]*(?:(?:-{1,2}|_{1,2})[a-z0-9]+)+(?![\w-])"  # CSS classes
)

_UNIT_ALTERNATION = "|".join(re.escape(u) for u in sorted(UNITS, key=len, reverse=True))
_NUMBER = re.compile(
    r"(?<![\w.,:/])(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)"
    rf"(?:\s?({_UNIT_ALTERNATION})(?![\w/])|(%|x|×|k)(?!\w))"
    r"|\b[Pp]ort (\d{2,5})\b"
)


@dataclass(frozen=True, order=True)
class Fact:
    """One concrete fact as extracted: its kind and its normalised verbatim text."""

    kind: FactKind
    value: str


def normalise_space(text: str) -> str:
    return re.sub(r"\s+", " ", text)


def _mask(text: str, spans: Iterable[tuple[int, int]]) -> str:
    """The text with the spans blanked out (same length, so positions stay valid)."""
    chars = list(text)
    for start, end in spans:
        chars[start:end] = " " * (end - start)
    return "".join(chars)


def _url_spans(text: str) -> list[tuple[int, int]]:
    return [m.span() for m in _URL.finditer(text)]


def _is_path(value: str) -> bool:
    if not any(c.isalpha() for c in value):
        return False
    if value.startswith(("/", "./", "../", "~/")):
        return len(value) > 1 and not value.startswith("//")
    last = value.rstrip("/").rsplit("/", 1)[-1]
    stem, dot, ext = last.rpartition(".")
    known_ext = bool(dot) and bool(stem.strip(".")) and ext in EXTENSIONS
    is_directory = value.endswith("/") and len(value.rstrip("/")) >= 2
    return is_directory or known_ext


def _path_matches(text: str) -> list[tuple[int, int, str]]:
    out = []
    for match in _PATH.finditer(_mask(text, _url_spans(text))):
        value = match.group(0).rstrip(_TRAIL)
        if value and _is_path(value):
            out.append((match.start(), match.start() + len(value), value))
    return out


def paths(text: str) -> list[str]:
    return [value for _, _, value in _path_matches(text)]


def line_refs(text: str) -> list[str]:
    found: list[tuple[int, str]] = []
    for match in _LINE_WORD.finditer(text):
        word, _, rest = match.group(0).partition(" ")
        found.append((match.start(), f"{word.lower()} {rest.replace(' ', '')}"))
    for match in _FILE_LINE.finditer(_mask(text, _url_spans(text))):
        if match.group(2) in EXTENSIONS:
            found.append((match.start(), match.group(0)))
    return [value for _, value in sorted(found)]


def identifiers(text: str) -> list[str]:
    spans = _url_spans(text) + [(s, e) for s, e, _ in _path_matches(text)]
    spans += [m.span() for m in _NUMBER.finditer(text)]
    out = []
    for match in _IDENTIFIER.finditer(_mask(text, spans)):
        value = match.group(0)
        if value in _UNIT_WORDS:
            continue  # KiB, MiB: a unit, not a name
        is_kebab = "-" in value and not value.startswith(".")
        if is_kebab and (len(value) < 5 or not any(c.isdigit() for c in value)):
            continue  # prose (well-known, end-to-end) or arithmetic (p-1, n-2)
        if value.isalpha() and value.isupper() and value not in ERRNO_NAMES:
            continue  # an acronym or a shouted word, not an errno name
        out.append(value)
    return out


def numbers(text: str) -> list[str]:
    out = []
    for match in _NUMBER.finditer(text):
        number, unit, attached, port = match.groups()
        if port is not None:
            out.append(f"port {port}")
        elif unit is not None:
            out.append(f"{number} {unit}")
        else:
            out.append(f"{number}{attached}")
    return out


_EXTRACTORS = {"path": paths, "line_ref": line_refs, "identifier": identifiers, "number": numbers}


def extract(text: str) -> tuple[Fact, ...]:
    """Every distinct fact of the text, kind by kind, each kind in order of first occurrence."""
    found: list[Fact] = []
    for kind in KINDS:
        seen: set[str] = set()
        for value in _EXTRACTORS[kind](normalise_space(text)):
            if value not in seen:
                seen.add(value)
                found.append(Fact(kind, value))
    return tuple(found)


def by_kind(facts: Iterable[Fact]) -> dict[FactKind, list[str]]:
    grouped: dict[FactKind, list[str]] = {kind: [] for kind in KINDS}
    for fact in facts:
        grouped[fact.kind].append(fact.value)
    return grouped
