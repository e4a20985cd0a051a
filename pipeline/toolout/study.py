"""The tool-output study (seed 000) as the engine sees it: a configured, picklable Study value.

Units are (priced configuration, policy): the configurations are an offline panel's priced
models (conf/panel/offline.yaml), each accounted under the cache model its provider names; the
policies are the arms. The transcripts, policies and cache models are read before anything
starts (pipeline/studies/toolout.py); the policies and cache models travel inside this value to
the workers, the transcripts by reference (a `Corpus`: an index of files each replay reads one
at a time), never as a pickled copy per actor.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pipeline.config.schema import EndpointConfig
from pipeline.config.strict import ConfigError
from pipeline.simulated import SimBehaviour
from pipeline.study import (
    NullLostRow,
    ProbePlan,
    ProgressLabels,
    StudyInputs,
)
from pipeline.toolout.cache_models import CacheModel, UnknownPriceError
from pipeline.toolout.config import ToolOutConfig
from pipeline.toolout.live import LiveBudget
from pipeline.toolout.oracle import NAME as ORACLE
from pipeline.toolout.runner import ToolOutRunner
from pipeline.toolout.transcript import Corpus

CORPUS_FILE = "corpus.json"


def is_live(endpoint: EndpointConfig) -> bool:
    """A configuration with a server (a URL, or a local model the engine starts) is replayed
    live; an offline panel's priced models have neither (panels.py refuses them one)."""
    return bool(endpoint.base_url) or endpoint.local is not None


@dataclass(frozen=True)
class Skipped:
    """A transcript file (or record) left out, and the one line that says why."""

    source: str
    reason: str


@dataclass(frozen=True)
class ToolOutStudy(NullLostRow):
    config: ToolOutConfig
    transcripts: Corpus
    skipped: tuple[Skipped, ...]
    sources: Mapping[str, str]  # transcript file -> SHA-256
    policies: Mapping[str, Mapping[str, Any]]
    cache_models: Mapping[str, CacheModel]
    # offline units' slices of `transcripts`, consecutive (pipeline/toolout/shards.py); ():
    # one unit replays the whole corpus
    shards: tuple[Corpus, ...] = ()

    # offline: priced, nothing sent; the others: live cached-token replay (toolout.live)
    panel_kinds = frozenset({"offline", "local", "endpoint", "hosted"})
    order_matters = False  # a replay is a pure function of its inputs

    @property
    def progress_labels(self) -> ProgressLabels:
        return ProgressLabels(
            unit="units",
            step="replays sent",  # answered live requests (none offline)
            priced_requests="replayed_requests",  # priced, and sent only on a live panel
            priced_cost_usd="replay_cost_usd",
        )

    @property
    def corpus_record(self) -> dict[str, Any]:
        return {
            "transcripts": len(self.transcripts),
            "files": dict(sorted(self.sources.items())),
            "skipped": [{"source": s.source, "reason": s.reason} for s in self.skipped],
        }

    @property
    def inputs(self) -> StudyInputs:
        data = json.dumps(self.corpus_record, indent=1, sort_keys=True).encode() + b"\n"
        digest = hashlib.sha256(data).hexdigest()
        return StudyInputs(
            label="toolout",
            digest=digest,
            files={CORPUS_FILE: data},
            record={
                "corpus_sha256": digest,
                "transcripts": len(self.transcripts),
                "skipped": self.corpus_record["skipped"],
            },
            warnings=tuple(f"skipped {s.source!r}: {s.reason}" for s in self.skipped),
        )

    def arms(self) -> Sequence[str]:
        return sorted([*self.policies, *([ORACLE] if self.config.with_oracle else [])])

    def probe_plan(self) -> ProbePlan:
        live = self.config.live
        needed = live.max_prompt_tokens + live.summary_max_tokens
        return ProbePlan({arm: frozenset({"plain"}) for arm in self.arms()}, needed)

    def execution_groups(self, endpoints: Sequence[EndpointConfig]) -> int:
        """One group per shard offline; a live panel keeps one, so its budget (study.live)
        still picks its transcripts from the whole corpus."""
        if any(is_live(e) for e in endpoints):
            return 1
        return max(1, len(self.shards))

    def cache_model_for(self, endpoint: EndpointConfig) -> CacheModel:
        """The configuration's cache model, which must price its model.

        Called for every configuration before anything starts (`runner`, from the engine's
        `prepare`): an unpriced model is refused there in one line, not as an
        `UnknownPriceError` inside a Ray actor (issue 32 §8). Accounting never prices at 0.
        """
        name = self.config.cache_model_for.get(endpoint.provider, endpoint.provider)
        try:
            model = self.cache_models[name]
        except KeyError:
            raise ConfigError(
                f"configuration {endpoint.config_id}: no cache model {name!r} for provider "
                f"{endpoint.provider!r}; have {', '.join(sorted(self.cache_models))} "
                "(set study.cache_model_for)"
            ) from None
        try:
            model.prices_for(endpoint.model)
        except UnknownPriceError as exc:
            raise ConfigError(f"configuration {endpoint.config_id}: {exc}") from None
        return model

    def runner(self, endpoint: EndpointConfig) -> ToolOutRunner:
        return ToolOutRunner(
            self.transcripts,
            self.policies,
            self.cache_model_for(endpoint),
            endpoint.model,
            think_time_s=self.config.think_time_s,
            corpus_sha256=self.inputs.digest or "",
            skipped=len(self.skipped),
            live=self.live_budget if is_live(endpoint) else None,
            shards=self.shards,
        )

    @property
    def live_budget(self) -> LiveBudget:
        live = self.config.live
        return LiveBudget(
            live.max_transcripts, live.max_prompt_tokens, live.max_requests, live.summary_max_tokens
        )

    def sim_models(self, endpoints: Sequence[tuple[str, str]], seed: int) -> list[SimBehaviour]:
        raise ConfigError("study toolout has no simulated endpoints: it runs offline")
