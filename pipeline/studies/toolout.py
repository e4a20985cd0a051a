"""The tool-output study's registration and its file inputs.

Reading happens here, before anything starts: the transcripts under data/transcripts/<corpus>/
(or a user's JSONL directory), the policies under conf/toolout/policies/ and the dated cache
models under data/cache-models/. A malformed transcript is one line naming the file, the
record and the problem; the other transcripts still run and the manifest counts the skipped
ones with their reasons. No readable transcript at all is a one-line error.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from pipeline.config.load import conf_dir
from pipeline.config.schema import AnalysisConfig
from pipeline.config.strict import ConfigError
from pipeline.store.layout import Layout, layout_for
from pipeline.study import Column, TableSpec
from pipeline.toolout.config import ToolOutConfig, toolout_config
from pipeline.toolout.importers import detect, import_file
from pipeline.toolout.policies import build_policy
from pipeline.toolout.records import ROW_COLUMNS, TABLES
from pipeline.toolout.study import Skipped, ToolOutStudy
from pipeline.toolout.transcript import Transcript

DATA_DIR = Path(__file__).resolve().parents[2] / "data"
TRANSCRIPT_SUFFIXES = (".traj", ".json", ".jsonl")


def _policy_specs(names: tuple[str, ...]) -> dict[str, dict[str, Any]]:
    folder = conf_dir() / "toolout" / "policies"
    available = sorted(p.stem for p in folder.glob("*.yaml"))
    chosen = names or tuple(available)
    specs: dict[str, dict[str, Any]] = {}
    for name in chosen:
        path = folder / f"{name}.yaml"
        if not path.is_file():
            raise ConfigError(
                f"study.policies: unknown policy {name!r}; available: {', '.join(available)}"
            )
        spec = yaml.safe_load(path.read_text(encoding="utf-8"))
        if not isinstance(spec, dict):
            raise ConfigError(f"{path}: a policy file must be a mapping")
        build_policy(spec)  # a bad policy fails here, in one line, before anything starts
        specs[str(spec.get("name", name))] = spec
    return specs


def _transcript_files(cfg: ToolOutConfig) -> list[tuple[Path, str, str | None]]:
    """(path, source shown in messages, corpus or None to detect) of every transcript file."""
    if cfg.transcripts_dir is not None:
        root = Path(cfg.transcripts_dir)
        if not root.is_dir():
            raise ConfigError(f"study.transcripts_dir {root} is not a directory")
        return [(p, str(p), "jsonl") for p in sorted(root.glob("*.jsonl"))]
    root = DATA_DIR / "transcripts"
    files: list[tuple[Path, str, str | None]] = []
    for corpus in cfg.corpora:
        for path in sorted((root / corpus).rglob("*")):
            source = str(path.relative_to(root))
            if path.suffix in TRANSCRIPT_SUFFIXES and detect(source) is not None:
                files.append((path, source, None))
    return files


def read_corpus(
    cfg: ToolOutConfig,
) -> tuple[list[Transcript], list[Skipped], dict[str, str]]:
    transcripts: list[Transcript] = []
    skipped: list[Skipped] = []
    sources: dict[str, str] = {}
    for path, source, corpus in _transcript_files(cfg):
        data = path.read_bytes()
        sources[source] = hashlib.sha256(data).hexdigest()
        outcome = import_file(data, source, corpus)
        transcripts += outcome.transcripts
        skipped += [Skipped(source, str(error)) for error in outcome.errors]
    if not transcripts:
        where = cfg.transcripts_dir or ", ".join(cfg.corpora)
        raise ConfigError(f"no readable transcript in {where}; see the skipped files above")
    return transcripts, skipped, sources


@dataclass(frozen=True)
class ToolOutDefinition:
    name: str = "toolout"
    row_columns: tuple[Column, ...] = ROW_COLUMNS
    tables: tuple[TableSpec, ...] = TABLES
    default_panel: str | None = "offline"  # priced models, no endpoint
    uses_contrasts: bool = False  # its arms are compared by its own tables, not q_vs_j

    @property
    def layout(self) -> Layout:
        return layout_for(self.row_columns, self.tables)

    def configure(self, node: Mapping[str, Any]) -> ToolOutStudy:
        from jobs.toolout.inputs import load_cache_models

        cfg = toolout_config(node)
        transcripts, skipped, sources = read_corpus(cfg)
        return ToolOutStudy(
            config=cfg,
            transcripts=tuple(transcripts),
            skipped=tuple(skipped),
            sources=sources,
            policies=_policy_specs(cfg.policies),
            cache_models=load_cache_models(),
        )

    def analyze(self, run_dir: Path, analysis: AnalysisConfig) -> Path:
        from jobs.toolout.run_all import analyze

        return analyze(run_dir, analysis, self.layout)

    def report(self, run_dir: Path) -> Path:
        from jobs.toolout.report import render_report

        return render_report(run_dir, self.layout)


DEFINITION = ToolOutDefinition()
