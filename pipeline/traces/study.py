"""The reasoning-trace study (seed 002) as the engine sees it: a configured, picklable Study.

Units are (configuration, arm). The arm `visibility` renders every conversation shape through
the endpoint's own server and recites the planted secrets (pipeline.traces.recital); every
other arm is a summariser strategy (conf/traces/arms/) over the same sampled traces
(pipeline.traces.summarise), so arms pair on identical traces. The offline half of part 1, the
matrix over the shipped templates, needs no endpoint: the templates travel in the run's inputs
and the analysis renders them (jobs/traces). Items, arms and templates are read before anything
starts (pipeline/studies/traces.py).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field

from pipeline.config.schema import EndpointConfig
from pipeline.config.strict import ConfigError
from pipeline.simulated import SimBehaviour
from pipeline.study import (
    NullLostRow,
    OneGroup,
    ProbePlan,
    ProgressLabels,
    StudyInputs,
)
from pipeline.traces.compression.arms import Arm
from pipeline.traces.compression.bands import BandCount
from pipeline.traces.compression.items import TraceItem
from pipeline.traces.config import TracesConfig
from pipeline.traces.runner import VISIBILITY, TemplateLoader, TracesRunner
from pipeline.traces.scan import ScanResult

ITEMS_FILE = "trace_items.json"
SCAN_FILE = "trace_scan.json"
TEMPLATES_FILE = "chat_templates.json"
PROMPT_OVERHEAD_TOKENS = 600  # the summariser prompt around the trace, and its reply margin


def _dump(value: object) -> bytes:
    return json.dumps(value, indent=1, sort_keys=True).encode() + b"\n"


@dataclass(frozen=True)
class TracesStudy(OneGroup, NullLostRow):
    config: TracesConfig
    compression_arms: Mapping[str, Arm]
    items: tuple[TraceItem, ...]
    band_counts: tuple[BandCount, ...]
    templates: Mapping[str, str]  # the offline matrix's templates: name -> text
    template_loader: TemplateLoader
    template_sources: Mapping[str, str] = field(default_factory=dict)  # name -> shipped | user
    scan: ScanResult | None = None  # the bloat scan of every real trace (SCAN_FILE)

    panel_kinds = frozenset({"local", "endpoint", "hosted"})
    order_matters = False  # arms pair on identical traces; no unit feeds another

    @property
    def progress_labels(self) -> ProgressLabels:
        return ProgressLabels(unit="units", step="summaries")

    def _files(self) -> dict[str, bytes]:
        items = [
            {
                "id": i.id,
                "band": i.band,
                "source": i.source,
                "synthetic": i.synthetic,
                "provenance": i.provenance,
                "chars": len(i.text),
                "text": i.text,
            }
            for i in self.items
        ]
        counts = [
            {"band": c.band, "available": c.available, "taken": c.taken} for c in self.band_counts
        ]
        templates = {
            name: {
                "sha256": hashlib.sha256(text.encode()).hexdigest(),
                "source": self.template_sources.get(name, "shipped"),
                "text": text,
            }
            for name, text in sorted(self.templates.items())
        }
        files = {
            ITEMS_FILE: _dump({"items": items, "band_counts": counts}),
            TEMPLATES_FILE: _dump(templates),
        }
        if self.scan is not None:
            files[SCAN_FILE] = _dump(
                {
                    "edges": list(self.scan.edges),
                    "duplicates_removed": self.scan.duplicates_removed,
                    "records": [asdict(r) for r in self.scan.records],
                }
            )
        return files

    @property
    def inputs(self) -> StudyInputs:
        files = self._files()
        digest = hashlib.sha256(b"".join(files[k] for k in sorted(files))).hexdigest()
        synthetic = sum(i.synthetic for i in self.items)
        return StudyInputs(
            label="traces",
            digest=digest,
            files=files,
            record={
                "inputs_sha256": digest,
                "items": len(self.items),
                "synthetic_items": synthetic,
                "templates": sorted(self.templates),
                "template_sources": {
                    n: self.template_sources.get(n, "shipped") for n in sorted(self.templates)
                },
                "band_counts": {c.band: c.taken for c in self.band_counts},
            },
        )

    def arms(self) -> Sequence[str]:
        return (
            [VISIBILITY, *sorted(self.compression_arms)]
            if self._with_visibility()
            else sorted(self.compression_arms)
        )

    def _with_visibility(self) -> bool:
        return not self.config.arms or VISIBILITY in self.config.arms

    def probe_plan(self) -> ProbePlan:
        longest = max((len(i.text) for i in self.items), default=0)
        tokens = -(-longest // 3) + PROMPT_OVERHEAD_TOKENS  # a generous chars-per-token floor
        return ProbePlan({arm: frozenset({"plain"}) for arm in self.arms()}, tokens)

    def runner(self, endpoint: EndpointConfig) -> TracesRunner:
        return TracesRunner(
            self.config, self.compression_arms, self.items, endpoint, self.template_loader
        )

    def sim_models(self, endpoints: Sequence[tuple[str, str]], seed: int) -> list[SimBehaviour]:
        raise ConfigError("study traces has no simulated endpoints: run it on +panel=local")
