"""The carrier study's typed config: the node under `study` (conf/study/carrier.yaml).

Its scenario and arms come from the `scenario` and `arms` config groups, which are packaged under
`study` (`# @package study.scenario` / `study.arms.NAME`), so `scenario=small` and
`arms=[j,q]` still select them on the command line.

Closed sets are `Literal` types, rejected at conversion with the choices named; the modules that
act on them (arms.SCHEMA_REPRESENTATIONS / PLAIN_REPRESENTATIONS / CARRIER_RULES,
fixture_session.PLACEMENTS) are held equal to these in tests/test_config_schema.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pipeline.config.strict import ConfigError, build

Representation = Literal[
    "plain", "headings", "single_field", "five_fields", "deployed_schema", "semantic_fields"
]
CarrierRule = Literal["raw", "parsed", "rendered", "text"]  # how a reply becomes the carrier
PlacementRule = Literal["distributed", "single_chunk"]  # where the graded facts land


@dataclass(frozen=True)
class FieldSpec:
    """One carrier field an arm asks the model to fill."""

    name: str  # JSON property name (or heading text for plain arms)
    max_chars: int | None = None  # declared per-field ceiling; None = undeclared
    description: str = ""  # schema description sent with the field


@dataclass(frozen=True)
class LedgerSpec:
    """Code-written ledger of shaped values (arm x): budget in characters."""

    budget_chars: int = 2400


@dataclass(frozen=True)
class ArmConfig:
    """One arm of the study, loaded from conf/arms/NAME.yaml (data, not code)."""

    name: str
    description: str
    system_prompt: str  # id of a prompt in pipeline.carrier.prompts
    representation: Representation  # plain text or a schema shape (pipeline.carrier.arms)
    output_tokens: int  # API max_tokens per fold
    carry_cap_tokens: int  # recursive carry cap applied before the next fold
    carrier_from_reply: CarrierRule  # must fit the representation (pipeline.carrier.arms)
    fields: tuple[FieldSpec, ...] = ()
    ledger: LedgerSpec | None = None
    in_paper: bool = True


@dataclass(frozen=True)
class ScenarioConfig:
    """A fixture scenario: size, chunking and where the graded facts land."""

    name: str
    target_tokens: int  # estimated tokens of the whole session
    chunk_tokens: int  # estimated tokens per chunk (one chunk per fold)
    folds: int  # number of folds (= chunks)
    placement: PlacementRule
    graded_chunks: tuple[int, ...] = ()  # chunks that receive graded facts (distributed)
    generator_version: str = "v1"


@dataclass(frozen=True)
class CarrierConfig:
    """The fold-and-recall study (seed 001): which fixture and which arms."""

    name: str
    scenario: ScenarioConfig
    arms: dict[str, ArmConfig]
    fixture_seed: int = 1  # fixture generator seed (`study.fixture_seed=N`)


def carrier_config(study: Mapping[str, Any]) -> CarrierConfig:
    """Convert the composed `study` node, rejecting unknown keys; one line on bad input."""
    if not study.get("arms"):
        raise ConfigError("no arms selected; pass for example arms=[j,q]")
    return build(CarrierConfig, study, "study")
