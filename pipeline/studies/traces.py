"""The reasoning-trace study's registration and its file inputs.

Reading happens here, before anything starts: the shipped chat templates (data/chat-templates/,
for the offline matrix), the summariser arms (conf/traces/arms/), the real reasoning traces
(the `thought` fields of the SWE-agent and OpenHands transcripts under data/transcripts/, the
recorded reasoning under data/reasoning-fixtures/, or a user's JSONL) and the synthetic ones the
generator plants facts in. In the workers, `endpoint_template` reads a local configuration's
template (its `chat_template_file`, else its GGUF's metadata). A malformed file is one line.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from pipeline.config.load import conf_dir
from pipeline.config.schema import AnalysisConfig, EndpointConfig
from pipeline.config.strict import ConfigError
from pipeline.decision import DecisionOptions, StudyDecision
from pipeline.store.layout import Layout
from pipeline.study import ArmDescriptions, Column, StudyPages, TableSpec
from pipeline.traces.compression.arms import Arm, load_arms
from pipeline.traces.compression.bands import stratified_sample
from pipeline.traces.compression.generator import band_lengths, generate
from pipeline.traces.compression.items import (
    TraceItem,
    dedupe,
    from_jsonl,
    from_openhands_jsonl,
    load_real,
    origin_of,
)
from pipeline.traces.config import CompressionConfig, traces_config
from pipeline.traces.recital import EndpointTemplate
from pipeline.traces.records import ROW_COLUMNS, TABLES
from pipeline.traces.runner import VISIBILITY
from pipeline.traces.scan import ScanResult, scan
from pipeline.traces.study import TracesStudy
from pipeline.traces.visibility.reads import reads_messages

DATA_DIR = Path(__file__).resolve().parents[2] / "data"
TEMPLATE_DIR = DATA_DIR / "chat-templates"
VISIBILITY_DESCRIPTION = (
    "template visibility: which stored reasoning each chat template shows the model (part 1)"
)


def shipped_templates() -> dict[str, str]:
    return {p.stem: p.read_text(encoding="utf-8") for p in sorted(TEMPLATE_DIR.glob("*.jinja"))}


def read_template(path: Path, what: str) -> str:
    """A template file's text; a missing or non-UTF-8 file, or a text that reads no
    `messages` (a README, not a chat template; issue 32), is one line naming it."""
    if not path.is_file():
        raise ConfigError(f"{what}: {path} is not a file")
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{what}: {path} is not UTF-8 text (byte {exc.start})") from None
    if not reads_messages(text):
        raise ConfigError(
            f"{what}: {path} is not a chat template: it reads no `messages` "
            "(give a Jinja chat template, e.g. tokenizer_config.json's chat_template)"
        )
    return text


def user_templates(paths: tuple[str, ...]) -> dict[str, str]:
    """`study.templates`: each file's text under its stem; a clash with another name is refused."""
    found: dict[str, str] = {}
    for raw in paths:
        path = Path(raw)
        name = path.stem
        if name in found:
            raise ConfigError(f"study.templates: two files are named {name!r}; rename one")
        found[name] = read_template(path, "study.templates")
    return found


def all_templates(cfg_templates: tuple[str, ...]) -> tuple[dict[str, str], dict[str, str]]:
    """The offline matrix's templates (shipped and the user's) and each one's source label."""
    shipped = shipped_templates()
    user = user_templates(cfg_templates)
    clash = sorted(set(user) & set(shipped))
    if clash:
        raise ConfigError(
            f"study.templates: {clash[0]!r} is the name of a shipped template; rename the file"
        )
    sources = {**{n: "shipped" for n in shipped}, **{n: "user" for n in user}}
    return {**shipped, **user}, sources


def _arms(names: tuple[str, ...]) -> dict[str, Arm]:
    folder = conf_dir() / "traces" / "arms"
    available = sorted(p.stem for p in folder.glob("*.yaml"))
    wanted = [n for n in names if n != VISIBILITY]
    unknown = sorted(set(wanted) - set(available))
    if unknown:
        raise ConfigError(
            f"study.arms: unknown arm {unknown[0]!r}; available: "
            f"{', '.join([VISIBILITY, *available])}"
        )
    specs = [yaml.safe_load((folder / f"{n}.yaml").read_text(encoding="utf-8")) for n in available]
    arms = load_arms(specs)  # every file, so a hybrid finds the arm it wraps
    chosen = wanted if names else available
    return {n: arms[n] for n in chosen}


def _origins(sources: Path) -> dict[str, str]:
    entries = json.loads(sources.read_text(encoding="utf-8"))
    return {str(e["path"]): origin_of(e) for e in entries}


def _real_items(cfg: CompressionConfig) -> list[TraceItem]:
    return dedupe(_all_real_items(cfg))[0]


def _all_real_items(cfg: CompressionConfig) -> list[TraceItem]:
    """Every real trace (the user's JSONL, else the shipped corpus), repeats kept."""
    edges = cfg.band_edges
    if cfg.user_jsonl is not None:
        path = Path(cfg.user_jsonl)
        if not path.is_file():
            raise ConfigError(f"study.compression.user_jsonl {path} is not a file")
        return from_jsonl(path.read_bytes(), str(path), edges)
    items: list[TraceItem] = []
    transcripts = DATA_DIR / "transcripts"
    origins = _origins(transcripts / "SOURCES.json")
    for path in sorted((transcripts / "swe-agent").rglob("*.traj")):
        rel = str(path.relative_to(transcripts))
        parsed = json.loads(path.read_text(encoding="utf-8"))
        items += load_real(parsed, rel, origins.get(rel, ""), edges)
    for path in sorted((transcripts / "openhands").glob("*.json*")):
        rel = str(path.relative_to(transcripts))
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".jsonl":
            items += from_openhands_jsonl(text, rel, origins.get(rel, ""), edges)
        else:
            items += load_real(json.loads(text), rel, origins.get(rel, ""), edges)
    fixtures = DATA_DIR / "reasoning-fixtures"
    fixture_origins = _origins(fixtures / "SOURCES.json")
    for path in sorted(fixtures.glob("*.json")):
        if path.name == "SOURCES.json":
            continue
        rel = f"reasoning-fixtures/{path.name}"
        parsed = json.loads(path.read_text(encoding="utf-8"))
        items += load_real(parsed, rel, fixture_origins.get(path.name, ""), edges)
    return items


def read_items(cfg: CompressionConfig) -> tuple[list[TraceItem], Any, ScanResult]:
    """The sampled real traces plus the synthetic ones, the real sample's band counts, and the
    scan of every real trace (the report's bloat scan)."""
    real = _all_real_items(cfg)
    scanned = scan(real, cfg.band_edges)
    sample = stratified_sample(dedupe(real)[0], cfg.real_per_band, cfg.seed, cfg.band_edges)
    lengths = band_lengths(cfg.seed, cfg.synthetic_per_band, cfg.band_edges, cfg.longest_chars)
    synthetic = [
        generate(cfg.seed + i, n, edges=cfg.band_edges).item for i, n in enumerate(lengths)
    ]
    return [*sample.items, *synthetic], sample.counts, scanned


def endpoint_template(endpoint: EndpointConfig) -> EndpointTemplate | None:
    """A local configuration's chat template as its server reads it; None for other endpoints."""
    from pipeline.endpoints.local import template_path
    from pipeline.endpoints.local_weights import locate_weights
    from pipeline.traces.visibility.gguf import chat_template

    spec = endpoint.local
    if spec is None:
        return None
    path = template_path(spec)
    if path is not None:
        source = "shipped" if path.resolve().parent == TEMPLATE_DIR else "user"
        return EndpointTemplate(path.stem, read_template(path, "local.chat_template_file"), source)
    weights = locate_weights(spec.source)
    with weights.open("rb") as handle:
        text = chat_template(handle)
    return EndpointTemplate(f"gguf:{weights.stem}", text, "gguf") if text else None


@dataclass(frozen=True)
class TracesDefinition:
    name: str = "traces"
    row_columns: tuple[Column, ...] = ROW_COLUMNS
    tables: tuple[TableSpec, ...] = TABLES
    default_panel: str | None = "local"  # the embedded local models
    uses_contrasts: bool = False  # its arms are compared by its own tables, not q_vs_j

    @property
    def pages(self) -> StudyPages:
        """Its own pages in the viewer, imported only when a viewer asks for them."""
        from pipeline.study_pages.traces import PAGES

        return PAGES

    def describe(self) -> ArmDescriptions:
        """`visibility` and every summariser arm under conf/traces/arms/, with what each is."""
        from pipeline.config.descriptions import descriptions

        return ArmDescriptions(
            "arms", {VISIBILITY: VISIBILITY_DESCRIPTION, **descriptions("traces/arms")}
        )

    def configure(self, node: Mapping[str, Any]) -> TracesStudy:
        cfg = traces_config(node)
        items, counts, scanned = read_items(cfg.compression)
        templates, sources = all_templates(cfg.templates)
        return TracesStudy(
            config=cfg,
            compression_arms=_arms(cfg.arms),
            items=tuple(items),
            band_counts=tuple(counts),
            templates=templates,
            template_sources=sources,
            scan=scanned,
            template_loader=endpoint_template,
        )

    def analyze(self, run_dir: Path, analysis: AnalysisConfig, layout: Layout) -> None:
        from jobs.traces.run_all import analyze

        analyze(run_dir, analysis, layout)

    def render(self, run_dir: Path, layout: Layout) -> Path:
        from jobs.traces.report import render_report

        return render_report(run_dir, layout, self.describe().by_name)

    def decide(self, run_dir: Path, layout: Layout, options: DecisionOptions) -> StudyDecision:
        """What the run says a user should do (`python -m pipeline decide`), from its outputs."""
        from jobs.traces.decision import decide

        return decide(run_dir, layout, options)


DEFINITION = TracesDefinition()
