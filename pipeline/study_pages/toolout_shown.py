"""The tool output as the policy left it, beside the original, with a line diff (issue 35).

The tables keep each decision's sizes, not its text (a corpus's compacted text would double
the run). So the page recomputes it: it reads the transcript file the run recorded in
`corpus.json`, checks the file's SHA-256 is still the one the run read, replays the
transcript under the policy's rules (the study's own pure replay) and keeps the result only
if every recomputed decision has the `shown_bytes` the run recorded. Anything else (the file
moved or changed, the rules changed since, the oracle's searched schedule) is one line on the
page instead of a text that might not be what the run sent.

The files read are the run's own corpus, outside the run directory: named by `corpus.json`,
under the recorded `study.transcripts_dir` or the shipped data, read bounded and never through
a symlink out of that root (`pipeline.user_files.read_bounded`).
"""

from __future__ import annotations

import difflib
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.view.runs import Run

DATA_DIR = Path(__file__).resolve().parents[2] / "data"  # the shipped corpus, as the study reads it

MAX_OUTPUTS = 12  # compacted outputs shown per transcript
MAX_CHARS = 4_000  # of each side's text, and of each diff
DIFF_CONTEXT = 1  # unchanged lines around each change


@dataclass(frozen=True)
class DiffLine:
    kind: str  # "same", "del", "ins" or "hunk"
    text: str


@dataclass(frozen=True)
class ShownOutput:
    request_index: int
    output_index: int
    tool_name: str
    mode: str
    original: str  # capped at MAX_CHARS, as `shown`
    shown: str
    original_chars: int  # before the cap
    shown_chars: int
    diff: tuple[DiffLine, ...]
    clipped: bool  # a side or the diff was cut at MAX_CHARS


@dataclass(frozen=True)
class ShownTexts:
    outputs: tuple[ShownOutput, ...] = ()
    why_not: str | None = None  # one line when the texts are not shown
    more: int = 0  # compacted outputs past MAX_OUTPUTS


def line_diff(original: str, shown: str) -> tuple[tuple[DiffLine, ...], bool]:
    """A unified line diff, capped at MAX_CHARS; (lines, clipped)."""
    lines: list[DiffLine] = []
    size = 0
    body = difflib.unified_diff(
        original.splitlines(), shown.splitlines(), lineterm="", n=DIFF_CONTEXT
    )
    for raw in list(body)[2:]:  # past the ---/+++ header
        kind = {"-": "del", "+": "ins", "@": "hunk"}.get(raw[:1], "same")
        text = raw if kind == "hunk" else raw[1:]
        size += len(text)
        if size > MAX_CHARS:
            return tuple(lines), True
        lines.append(DiffLine(kind, text))
    return tuple(lines), False


def _capped(text: str) -> tuple[str, bool]:
    return (text, False) if len(text) <= MAX_CHARS else (text[:MAX_CHARS], True)


class _NotShown(Exception):
    """Why the texts cannot be shown, in one line."""


def shown_texts(
    run: Run, arm: str, transcript_id: str, recorded: Sequence[Mapping[str, Any]]
) -> ShownTexts:
    """The compacted outputs of `transcript_id` under policy `arm`, or why not."""
    from pipeline.toolout.oracle import NAME as ORACLE
    from pipeline.toolout.policies import build_policy
    from pipeline.toolout.replay import replay
    from pipeline.toolout.tokens import estimate_tokens

    if arm == ORACLE:
        why = "the oracle's rewrites come from its schedule search, which the page does not "
        return ShownTexts(why_not=why + "repeat; its sizes are in the table above")
    try:
        transcript, spec = _recorded_transcript(run, arm, transcript_id)
    except _NotShown as exc:
        return ShownTexts(why_not=str(exc))
    return _compare(transcript, replay(transcript, build_policy(spec), estimate_tokens), recorded)


def _recorded_transcript(run: Run, arm: str, transcript_id: str) -> tuple[Any, Any]:
    """The transcript as the run read it, and the policy's rules; _NotShown otherwise."""
    import yaml

    from pipeline.config.load import conf_dir
    from pipeline.config.strict import ConfigError
    from pipeline.toolout.config import toolout_config
    from pipeline.toolout.importers import import_file
    from pipeline.user_files import MB, UnreadableFile, read_bounded

    try:
        if not arm.replace("_", "").replace("-", "").isalnum():  # a name, never a path
            raise _NotShown(f"{arm!r} is not a policy name")
        cfg = toolout_config(run.manifest["config"]["study"])
        spec = yaml.safe_load((conf_dir() / "toolout" / "policies" / f"{arm}.yaml").read_text())
        root = (
            DATA_DIR / "transcripts" if cfg.transcripts_dir is None else Path(cfg.transcripts_dir)
        )
    except (ConfigError, KeyError, TypeError, OSError, yaml.YAMLError) as exc:
        raise _NotShown(f"the policy's rules cannot be read again: {exc}") from None
    corpus = run.json_input("corpus.json").value
    files = corpus.get("files") if isinstance(corpus, dict) else None
    if not isinstance(files, dict):
        raise _NotShown("the run records no corpus.json file list")
    source = _source_of(transcript_id, files)
    if source is None:
        raise _NotShown(f"no file of corpus.json holds {transcript_id}")
    try:
        cap = int(cfg.max_file_mb * MB)
        data = read_bounded(root / source, max_bytes=cap, cap_name="study.max_file_mb", root=root)
    except UnreadableFile as exc:
        raise _NotShown(f"the transcript file {source} cannot be read: {exc.reason}") from None
    if hashlib.sha256(data).hexdigest() != files[source]:
        raise _NotShown(f"the transcript file {source} changed since the run read it")
    corpus_name = "jsonl" if cfg.transcripts_dir is not None else None
    found = [t for t in import_file(data, source, corpus_name).transcripts if t.id == transcript_id]
    if not found:
        raise _NotShown(f"{source} no longer holds {transcript_id}")
    return found[0], spec


def _source_of(transcript_id: str, files: Mapping[str, Any]) -> str | None:
    """The corpus file whose transcripts include `transcript_id` (ids start with the file's
    name without its suffixes); the longest such name wins."""
    names = [s for s in files if transcript_id.startswith(s.split(".", 1)[0])]
    return max(names, key=len) if names else None


def _compare(
    transcript: Any, requests: Sequence[Any], recorded: Sequence[Mapping[str, Any]]
) -> ShownTexts:
    outputs = transcript.tool_outputs
    sizes = {(int(d["request_index"]), int(d["output_index"])): d["shown_bytes"] for d in recorded}
    shown: dict[int, str] = {}
    changed: list[ShownOutput] = []
    for request in requests:
        for a in request.applied:
            if shown.get(a.output_index) == a.rendering.text:
                continue
            shown[a.output_index] = a.rendering.text
            key = (request.index, a.output_index)
            if key in sizes and sizes[key] != len(a.rendering.text.encode("utf-8")):
                return ShownTexts(
                    why_not="replayed with the policy's current rules, request "
                    f"{key[0]} output {key[1]} differs from what the run recorded "
                    "(the rules changed since); not shown"
                )
            if not a.rendering.changed:
                continue
            original, cut_a = _capped(outputs[a.output_index].content)
            text, cut_b = _capped(a.rendering.text)
            diff, cut_c = line_diff(outputs[a.output_index].content, a.rendering.text)
            changed.append(
                ShownOutput(
                    request.index,
                    a.output_index,
                    a.tool_name,
                    str(a.rendering.mode),
                    original,
                    text,
                    len(outputs[a.output_index].content),
                    len(a.rendering.text),
                    diff,
                    cut_a or cut_b or cut_c,
                )
            )
    return ShownTexts(tuple(changed[:MAX_OUTPUTS]), more=max(0, len(changed) - MAX_OUTPUTS))
