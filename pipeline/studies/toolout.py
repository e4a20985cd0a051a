"""The tool-output study's registration and its file inputs.

Reading happens here, before anything starts: the transcripts under data/transcripts/<corpus>/
(or a user's JSONL directory), the policies under conf/toolout/policies/ and the dated cache
models under data/cache-models/. A malformed transcript is one line naming the file, the
record and the problem; the other transcripts still run and the manifest counts the skipped
ones with their reasons. No readable transcript at all is a one-line error.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

from pipeline.config.load import conf_dir
from pipeline.config.schema import AnalysisConfig
from pipeline.config.strict import ConfigError
from pipeline.decision import DecisionOptions, StudyDecision
from pipeline.store.layout import Layout
from pipeline.study import ArmDescriptions, Column, StudyPages, TableSpec
from pipeline.toolout.config import ToolOutConfig, toolout_config
from pipeline.toolout.importers import detect, import_file, within_output_cap
from pipeline.toolout.oracle import NAME as ORACLE
from pipeline.toolout.policies import build_policy
from pipeline.toolout.records import ROW_COLUMNS, TABLES
from pipeline.toolout.shards import plan_shards
from pipeline.toolout.study import Skipped, ToolOutStudy
from pipeline.toolout.transcript import Transcript, TranscriptError
from pipeline.user_files import MB, UnreadableFile, read_bounded
from pipeline.usererror import UserError

DATA_DIR = Path(__file__).resolve().parents[2] / "data"
TRANSCRIPT_SUFFIXES = (".traj", ".json", ".jsonl")
ORACLE_DESCRIPTION = (
    "oracle: knowing the transcript's future, the cheapest schedule of deterministic rewrites"
)


def _policy_specs(names: tuple[str, ...], key: str) -> dict[str, dict[str, Any]]:
    folder = conf_dir() / "toolout" / "policies"
    available = sorted(p.stem for p in folder.glob("*.yaml"))
    chosen = names or tuple(available)
    specs: dict[str, dict[str, Any]] = {}
    for name in chosen:
        path = folder / f"{name}.yaml"
        if not path.is_file():
            raise ConfigError(f"{key}: unknown policy {name!r}; available: {', '.join(available)}")
        spec = yaml.safe_load(path.read_text(encoding="utf-8"))
        if not isinstance(spec, dict):
            raise ConfigError(f"{path}: a policy file must be a mapping")
        build_policy(spec)  # a bad policy fails here, in one line, before anything starts
        specs[str(spec.get("name", name))] = spec
    return specs


def _transcript_root(cfg: ToolOutConfig) -> Path:
    if cfg.transcripts_dir is None:
        return DATA_DIR / "transcripts"
    root = Path(cfg.transcripts_dir)
    if not root.is_dir():
        raise ConfigError(f"study.transcripts_dir {str(root)!r} is not a directory")
    return root


def _transcript_files(cfg: ToolOutConfig) -> list[tuple[Path, str, str | None]]:
    """(path, source shown in messages, corpus or None to detect) of every transcript file.

    A user's file is named relative to `study.transcripts_dir`, so its transcript id is
    `jsonl/<file stem>` (docs/tables.md) and no absolute path reaches a table.
    """
    root = _transcript_root(cfg)
    if cfg.transcripts_dir is not None:
        return [(p, p.relative_to(root).as_posix(), "jsonl") for p in sorted(root.glob("*.jsonl"))]
    files: list[tuple[Path, str, str | None]] = []
    for corpus in cfg.corpora:
        for path in sorted((root / corpus).rglob("*")):
            source = str(path.relative_to(root))
            if path.suffix in TRANSCRIPT_SUFFIXES and detect(source) is not None:
                files.append((path, source, None))
    return files


def _read_transcript_file(path: Path, max_bytes: int, root: Path | None) -> bytes:
    return read_bounded(path, max_bytes=max_bytes, cap_name="study.max_file_mb", root=root)


def _skips(source: str, errors: Sequence[TranscriptError]) -> list[Skipped]:
    """The source is said once, by the warning (a TranscriptError's str repeats it)."""
    return [Skipped(source, f"{error.record}: {error.problem}") for error in errors]


@dataclass(frozen=True)
class CorpusFile:
    """One transcript file of the corpus, by reference: where it is and what it held."""

    path: str  # absolute, read by whichever process replays it
    source: str  # as named in messages and transcript ids
    corpus: str | None  # None: detected from the source
    sha256: str
    transcripts: int
    requests: tuple[int, ...] = ()  # each transcript's requests, for the shards (shards.py)


class CorpusChangedError(UserError):
    """A transcript file changed between the sweep's start and a replay of it."""


@dataclass(frozen=True)
class CorpusFiles:
    """The corpus as an index of its files (picklable and small): what travels to the actors.

    Iterating reads one file at a time, checks it still has the SHA-256 the sweep recorded
    and yields its transcripts, so a process holds one file's transcripts plus this index,
    never the corpus (issue 20). The files are the originals, not copies: on a cluster they
    must be on a filesystem every node sees (docs/cluster.md).
    """

    files: tuple[CorpusFile, ...]
    max_file_bytes: int = 64 * MB  # study.max_file_mb: the same bounds on every read
    max_output_bytes: int = 8 * MB  # study.max_output_mb
    skip: int = 0  # transcripts of the first file before this slice (`between`)
    limit: int | None = None  # transcripts in this slice; None: to the end

    def __len__(self) -> int:
        rest = sum(f.transcripts for f in self.files) - self.skip
        return rest if self.limit is None else min(rest, self.limit)

    def __iter__(self) -> Iterator[Transcript]:
        skip, left = self.skip, len(self)
        for f in self.files:
            if left <= 0:
                return
            data = _read_transcript_file(Path(f.path), self.max_file_bytes, None)
            if hashlib.sha256(data).hexdigest() != f.sha256:
                raise CorpusChangedError(
                    f"transcript file {f.source} changed since the sweep read it; "
                    "restore it or start a new run"
                )
            transcripts = import_file(data, f.source, f.corpus).transcripts
            kept = within_output_cap(transcripts, self.max_output_bytes)[0][skip : skip + left]
            skip, left = 0, left - len(kept)
            yield from kept

    @property
    def requests(self) -> list[int]:
        """Each transcript's requests, in iteration order (what the shards are planned on)."""
        counts = [n for f in self.files for n in f.requests][self.skip :]
        return counts if self.limit is None else counts[: self.limit]

    def between(self, start: int, stop: int) -> CorpusFiles:
        """Transcripts `start` to `stop` (0-based, stop excluded) as an index of only the
        files that hold them: a shard's unit reads those files and no other."""
        start, stop = start + self.skip, min(stop, len(self)) + self.skip  # of this slice
        files: list[CorpusFile] = []
        offset, skip = 0, 0
        for f in self.files:
            if offset + f.transcripts > start and offset < stop:
                if not files:
                    skip = start - offset
                files.append(f)
            offset += f.transcripts
        return replace(self, files=tuple(files), skip=skip, limit=max(0, stop - start))


def read_corpus(
    cfg: ToolOutConfig,
) -> tuple[CorpusFiles, list[Skipped], dict[str, str]]:
    """The corpus index, the skipped files and records, and every file's SHA-256.

    Each file is read and imported once here (so bad files are named before anything
    starts) and then dropped: the driver keeps the index, not the transcripts. Reads are
    bounded (pipeline/user_files.py: regular files only, study.max_file_mb, no symlink out of
    the directory), and a transcript with a message over study.max_output_mb is skipped.
    """
    files: list[CorpusFile] = []
    skipped: list[Skipped] = []
    sources: dict[str, str] = {}
    max_file, max_output = int(cfg.max_file_mb * MB), int(cfg.max_output_mb * MB)
    root, found = _transcript_root(cfg), _transcript_files(cfg)
    for path, source, corpus in found:
        try:
            data = _read_transcript_file(path, max_file, root)
        except UnreadableFile as exc:
            skipped.append(Skipped(source, exc.reason))
            continue
        digest = sources[source] = hashlib.sha256(data).hexdigest()
        outcome = import_file(data, source, corpus)
        kept, too_big = within_output_cap(outcome.transcripts, max_output)
        if kept:
            counts = tuple(t.requests for t in kept)
            files.append(CorpusFile(str(path.resolve()), source, corpus, digest, len(kept), counts))
        skipped += _skips(source, [*outcome.errors, *too_big])
        del data, outcome, kept
    transcripts = CorpusFiles(tuple(files), max_file, max_output)
    if not len(transcripts):
        where = repr(cfg.transcripts_dir) if cfg.transcripts_dir else ", ".join(cfg.corpora)
        if not found:
            kind = "*.jsonl file" if cfg.transcripts_dir else "transcript file"
            raise ConfigError(f"no {kind} in {where}")
        raise ConfigError(
            f"no readable transcript in {where}; see the {len(skipped)} skipped above"
        )
    return transcripts, skipped, sources


@dataclass(frozen=True)
class ToolOutDefinition:
    name: str = "toolout"
    row_columns: tuple[Column, ...] = ROW_COLUMNS
    tables: tuple[TableSpec, ...] = TABLES
    default_panel: str | None = "offline"  # priced models, no endpoint
    uses_contrasts: bool = False  # its arms are compared by its own tables, not q_vs_j

    @property
    def pages(self) -> StudyPages:
        """Its own pages in the viewer, imported only when a viewer asks for them."""
        from pipeline.study_pages.toolout import PAGES

        return PAGES

    def describe(self) -> ArmDescriptions:
        """Every policy under conf/toolout/policies/ and the oracle arm, with what each is."""
        from pipeline.config.descriptions import descriptions

        return ArmDescriptions(
            "policies", {**descriptions("toolout/policies"), ORACLE: ORACLE_DESCRIPTION}
        )

    def configure(self, node: Mapping[str, Any]) -> ToolOutStudy:
        from jobs.toolout.inputs import load_cache_models

        cfg = toolout_config(node)
        transcripts, skipped, sources = read_corpus(cfg)
        return ToolOutStudy(
            config=cfg,
            transcripts=transcripts,
            shards=tuple(
                transcripts.between(start, stop)
                for start, stop in plan_shards(transcripts.requests, cfg.requests_per_unit)
            ),
            skipped=tuple(skipped),
            sources=sources,
            policies=_policy_specs(
                cfg.chosen_policies, "study.live.policies" if cfg.live_default else "study.policies"
            ),
            cache_models=load_cache_models(),
        )

    def analyze(self, run_dir: Path, analysis: AnalysisConfig, layout: Layout) -> None:
        from jobs.toolout.run_all import analyze

        analyze(run_dir, analysis, layout)

    def render(self, run_dir: Path, layout: Layout) -> Path:
        from jobs.toolout.report import render_report

        return render_report(run_dir, layout, self.describe().by_name)

    def decide(self, run_dir: Path, layout: Layout, options: DecisionOptions) -> StudyDecision:
        """What the run says a user should do (`python -m pipeline decide`), from its outputs."""
        from jobs.toolout.decision import decide

        return decide(run_dir, layout, options)


DEFINITION = ToolOutDefinition()
