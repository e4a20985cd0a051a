"""The tool-output study's typed config: the node under `study` (conf/study/toolout.yaml)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pipeline.config.strict import ConfigError, build, check_range

LIVE_POLICIES = ("control", "deterministic_first_pass")  # study.live.policies' default
OFFLINE_PANEL = "offline"  # the one panel kind with no endpoint (pipeline/toolout/study.py)
CORPORA = ("swe-agent", "mini-swe-agent", "openhands", "tau-bench")  # the default corpus
# Shipped folders a run reads only when `study.corpora` names them (data/transcripts/README.md):
# kept out of the default so its figures and the golden runs stay as they were until chosen.
# Each maps to the importer its files are read with (detected from their names).
OPT_IN_CORPORA = {"mini-swe-agent-swebench": "mini-swe-agent"}
KNOWN_CORPORA = CORPORA + tuple(OPT_IN_CORPORA)


@dataclass(frozen=True)
class LiveConfig:
    """How much of the corpus a live replay sends (panels with endpoints; pipeline.toolout.live)."""

    max_transcripts: int = 1  # round-robin over corpora, each with a large output in budget
    max_prompt_tokens: int = 4000  # estimated; a transcript stops at its first larger request
    max_requests: int = 6  # per transcript
    summary_max_tokens: int = 256  # the model mode's summary, where the gate approves one
    # the policies a live panel runs when study.policies is [] (docs/toolout.md, "Live
    # replay"): on the default live transcript every other policy sends control's bytes;
    # () = every policy and the oracle
    policies: tuple[str, ...] = LIVE_POLICIES

    def __post_init__(self) -> None:
        check_range("study.live.max_transcripts", self.max_transcripts, at_least=1)
        check_range("study.live.max_prompt_tokens", self.max_prompt_tokens, at_least=64)
        check_range("study.live.max_requests", self.max_requests, at_least=1)
        check_range("study.live.summary_max_tokens", self.summary_max_tokens, at_least=16)


@dataclass(frozen=True)
class ToolOutConfig:
    """Which transcripts, which policies (arms), and how the replay accounts time."""

    name: str
    corpora: tuple[str, ...] = CORPORA  # folders under data/transcripts/ (or transcripts_dir)
    transcripts_dir: str | None = None  # a user's own JSONL transcripts (replaces corpora)
    # files under conf/toolout/policies/; () = every one offline and `live.policies` on a
    # live panel (`chosen_policies`). () stays the default a run made before the live
    # default recorded, so such a run resumes unchanged
    policies: tuple[str, ...] = ()
    think_time_s: float = 30.0  # between requests of a transcript without timestamps
    oracle: bool = True  # add the oracle arm (pipeline/toolout/oracle.py), a bound
    # provider -> cache-model file name when they differ (an endpoint's provider otherwise)
    cache_model_for: dict[str, str] = field(default_factory=dict)
    live: LiveConfig = field(default_factory=LiveConfig)
    # bounds on what a transcript file may bring into memory (issue 19); bigger is skipped
    max_file_mb: float = 64.0  # a transcript file, checked before it is read
    max_output_mb: float = 8.0  # one message's content (a tool output), after parsing
    # offline: a unit replays consecutive transcripts of at most this many requests (one
    # transcript at least), so its memory is bounded by its shard (pipeline/toolout/shards.py)
    requests_per_unit: int = 10_000
    # the panel's kind, filled in by conf/study/toolout.yaml from `panel.kind`: not a setting
    panel_kind: str = OFFLINE_PANEL

    def __post_init__(self) -> None:
        check_range("study.think_time_s", self.think_time_s, at_least=0)
        check_range("study.max_file_mb", self.max_file_mb, above=0)
        check_range("study.max_output_mb", self.max_output_mb, above=0)
        check_range("study.requests_per_unit", self.requests_per_unit, at_least=1)
        unknown = sorted(set(self.corpora) - set(KNOWN_CORPORA))
        if unknown:
            raise ConfigError(
                f"study.corpora: unknown corpus {unknown[0]!r}; "
                f"choose from {', '.join(KNOWN_CORPORA)}"
            )

    @property
    def live_default(self) -> bool:
        """A live panel with no study.policies: the arms are `live.policies`, no oracle."""
        return not self.policies and bool(self.live.policies) and self.panel_kind != OFFLINE_PANEL

    @property
    def chosen_policies(self) -> tuple[str, ...]:
        """The policy files to run; () = every one."""
        return self.live.policies if self.live_default else self.policies

    @property
    def with_oracle(self) -> bool:
        """Whether the oracle arm runs: `oracle`, except under the live default, where the
        local cache model (prices 0) makes it send control's requests."""
        return self.oracle and not self.live_default


def toolout_config(node: Mapping[str, Any]) -> ToolOutConfig:
    return build(ToolOutConfig, node, "study")
