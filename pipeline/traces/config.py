"""The reasoning-trace study's typed config: the node under `study` (conf/study/traces.yaml)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pipeline.config.strict import ConfigError, build, check_range
from pipeline.traces.compression.bands import check_edges
from pipeline.traces.visibility.shapes import ARGS_FORMS, CONTENT_FORMS, DIALECTS

ThinkingOff = Literal["chat_template_kwargs", "endpoint"]


@dataclass(frozen=True)
class RecitalConfig:
    """Which shapes are sent live for the model to recite (every shape is rendered live)."""

    dialects: tuple[str, ...] = ("reasoning_content",)
    content_forms: tuple[str, ...] = ("empty",)
    args_forms: tuple[str, ...] = ("string",)
    max_tokens: int = 64

    def __post_init__(self) -> None:
        check_range("study.recital.max_tokens", self.max_tokens, at_least=1)
        for key, values, allowed in (
            ("dialects", self.dialects, DIALECTS),
            ("content_forms", self.content_forms, CONTENT_FORMS),
            ("args_forms", self.args_forms, ARGS_FORMS),
        ):
            unknown = sorted(set(values) - set(allowed))
            if unknown or not values:
                raise ConfigError(
                    f"study.recital.{key}: {unknown[0] if unknown else 'empty'!r} is not one "
                    f"of {', '.join(allowed)}"
                )


@dataclass(frozen=True)
class CompressionConfig:
    """Which traces are summarised: bands, how many per band, from where."""

    band_edges: tuple[int, ...] = (1000, 4000, 16000)
    real_per_band: int = 2  # sampled from the shipped real traces (most are under 1k)
    synthetic_per_band: int = 1  # generated, labelled synthetic, for the long bands
    longest_chars: int = 24000  # the top band's synthetic traces stay below this
    seed: int = 166
    user_jsonl: str | None = None  # a user's own traces (id, text[, source] per line)
    repeat_check: int = 1  # items per unit summarised twice to compare hashes
    thinking_off: ThinkingOff = "chat_template_kwargs"  # or: the endpoint's reasoning form

    def __post_init__(self) -> None:
        check_range("study.compression.real_per_band", self.real_per_band, at_least=0)
        check_range("study.compression.synthetic_per_band", self.synthetic_per_band, at_least=0)
        check_range("study.compression.repeat_check", self.repeat_check, at_least=0)
        try:
            edges = check_edges(self.band_edges)
        except ConfigError as exc:
            raise ConfigError(f"study.compression.band_edges: {exc}") from None
        if self.longest_chars <= edges[-1]:
            raise ConfigError(
                f"study.compression.longest_chars ({self.longest_chars}) must exceed the last "
                f"band edge ({edges[-1]})"
            )


@dataclass(frozen=True)
class TracesConfig:
    name: str
    arms: tuple[str, ...] = ()  # `visibility` and conf/traces/arms/ names; () = every one
    recital: RecitalConfig = field(default_factory=RecitalConfig)
    compression: CompressionConfig = field(default_factory=CompressionConfig)
    templates: tuple[str, ...] = ()  # a user's own template files, classed offline beside ours


def traces_config(node: Mapping[str, Any]) -> TracesConfig:
    return build(TracesConfig, node, "study")
