"""A deterministic pseudo-model for simulated endpoints: a SIMULATION, not a language model.

Why it exists: dry runs, load tests and chaos tests need replies that exercise the whole
fold-and-recall pipeline (schemas, headings, ceilings, length stops, abstention, fabrication)
and give the panel statistics some signal, without any model. It cheats: it is handed the
planted facts and looks for their values verbatim. Every row it produces is marked simulated.

Behaviour model (docs/carrier.md, "Simulated endpoints"):
- A fold keeps each planted value found in the user message with a probability set by the
  profile and the representation (plain / headings / single_field / five_fields / other),
  drawn from SHA-256 of (profile, seed, canonical request body, label): same request, same reply.
- A recall answers `LABEL: value` when the value is in the request text (small miss
  probability), else abstains (`LABEL: unknown`) or fabricates a stock value, per profile.
- Optional model faults: empty reply, non-conforming JSON or a length stop, refusal.
Pure: no I/O, no clock, no global random state.

`CarrierSimModel` is this study's `pipeline.simulated.SimBehaviour`: the engine's sim server
(`pipeline.endpoints.sim`) serves it without knowing the carrier study.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from pipeline.carrier.prompts import CHUNK_MARKER, PREVIOUS_SUMMARY_MARKER, RECALL_MARKER
from pipeline.simulated import SimReply

__all__ = [
    "STOCK_UUID",
    "CarrierSimModel",
    "FactLike",
    "SimFact",
    "SimProfile",
    "SimReply",
    "carrier_sim_models",
    "estimate_tokens",
    "keep_probability",
    "profiles_for",
    "reply",
    "stock_value",
]


class FactLike(Protocol):
    """What the pseudo-model needs of a planted fact (pipeline.carrier.fixture.Fact fits)."""

    @property
    def label(self) -> str: ...
    @property
    def value(self) -> str: ...
    @property
    def graded(self) -> bool: ...


@dataclass(frozen=True)
class SimFact:
    """A planted fact for tests and hand-built simulations."""

    label: str
    value: str
    graded: bool = True


@dataclass(frozen=True)
class SimProfile:
    """One simulated served configuration: how it folds, answers and overruns."""

    config_id: str
    skill: float  # per-fold keep probability of a seen value before representation effects
    schema_penalty: float  # subtracted under any JSON-schema representation
    partition_gain: float  # added under five fields (half of it under other field counts)
    archetype: str = "custom"  # which behaviour family profiles_for drew it from
    model: str = ""  # served model id (the request's "model"); "" means config_id
    heading_bonus: float = 0.03  # added for plain text under requested headings
    prose_penalty: float = 0.05  # subtracted for plain prose (no headings asked)
    self_partition: float = 0.3  # chance a single field carries the requested headings
    answer_miss: float = 0.02  # chance recall misses a value that is in the memory
    fabrication: float = 0.3  # chance a lost value is fabricated rather than abstained
    length_pressure: float = 0.1  # chance a field overruns its maxLength by one line
    verbosity: int = 2  # filler lines per fold reply (long ones hit max_tokens)

    @property
    def served_model(self) -> str:
        return self.model or self.config_id


# Archetypes make panel statistics informative: some gain from five fields, some lose, one is
# steady, one is weak, verbose and fabricates. Each config jitters its archetype slightly.
_ARCHETYPES: tuple[SimProfile, ...] = (
    SimProfile(
        config_id="partition-gainer",
        archetype="partition-gainer",
        skill=0.92,
        schema_penalty=0.4,
        partition_gain=0.35,
        heading_bonus=0.05,
        prose_penalty=0.05,
        self_partition=0.2,
        answer_miss=0.02,
        fabrication=0.5,
        length_pressure=0.1,
        verbosity=2,
    ),
    SimProfile(
        config_id="steady",
        archetype="steady",
        skill=0.96,
        schema_penalty=0.05,
        partition_gain=0.02,
        heading_bonus=0.03,
        prose_penalty=0.03,
        self_partition=0.7,
        answer_miss=0.01,
        fabrication=0.1,
        length_pressure=0.05,
        verbosity=1,
    ),
    SimProfile(
        config_id="partition-loser",
        archetype="partition-loser",
        skill=0.9,
        schema_penalty=0.1,
        partition_gain=-0.25,
        heading_bonus=0.05,
        prose_penalty=0.1,
        self_partition=0.4,
        answer_miss=0.03,
        fabrication=0.3,
        length_pressure=0.2,
        verbosity=3,
    ),
    SimProfile(
        config_id="weak-verbose",
        archetype="weak-verbose",
        skill=0.72,
        schema_penalty=0.25,
        partition_gain=0.1,
        heading_bonus=0.1,
        prose_penalty=0.15,
        self_partition=0.1,
        answer_miss=0.08,
        fabrication=0.7,
        length_pressure=0.4,
        verbosity=40,
    ),
)
_JITTERED = ("skill", "schema_penalty", "partition_gain", "heading_bonus", "prose_penalty")


def profiles_for(n: int, seed: int) -> list[SimProfile]:
    """`n` heterogeneous, deterministic profiles `sim-00`, `sim-01`, ... for this seed."""
    rng = random.Random(seed)  # int seeding is stable across Python versions
    start = rng.randrange(len(_ARCHETYPES))
    profiles = []
    for i in range(n):
        base = _ARCHETYPES[(start + i) % len(_ARCHETYPES)]
        jitter = {
            name: round(getattr(base, name) + rng.uniform(-0.03, 0.03), 4) for name in _JITTERED
        }
        # ids match pipeline.endpoints.panels' sim configurations (sim-NN / sim-model-NN)
        config = replace(base, config_id=f"sim-{i:02d}", model=f"sim-model-{i:02d}", **jitter)
        profiles.append(config)
    return profiles


def reply(
    request_body: Mapping[str, Any],
    facts: Sequence[FactLike],
    profile: SimProfile,
    rng_seed: int,
    *,
    model_fault_rate: float = 0.0,
) -> SimReply:
    """The deterministic reply of `profile` to one chat-completions request body."""
    turn = _Turn.of(request_body, facts, profile, rng_seed)
    if RECALL_MARKER in turn.user.splitlines():
        kind, text, rep = "recall", _recall(turn), turn.schema_representation
    elif PREVIOUS_SUMMARY_MARKER in turn.user and CHUNK_MARKER in turn.user:
        kind, (text, rep) = "fold", _fold(turn)
    else:
        text = render_schema(turn.shape, ["ok"], turn.draw, 0.0) if turn.shape else "OK"
        kind, rep = "other", turn.schema_representation
    prompt_tokens = estimate_tokens(json.dumps(request_body, ensure_ascii=False, default=str))
    finish = "stop"
    limit = _max_tokens(request_body)
    if limit is not None and estimate_tokens(text) > limit:
        text, finish = text[: limit * 4], "length"
    base = SimReply(text, finish, prompt_tokens, estimate_tokens(text), kind, representation=rep)
    if model_fault_rate > 0 and turn.draw.unit("model_fault") < model_fault_rate:
        return _model_fault(base, turn.shape, turn.draw)
    return base


@dataclass(frozen=True)
class CarrierSimModel:
    """One simulated served configuration of the carrier study (a `SimBehaviour`): its
    profile and the planted facts it looks for. A frozen value, so it pickles to the sim
    server's child process."""

    profile: SimProfile
    facts: tuple[FactLike, ...] = field(default=(), repr=False)

    @property
    def config_id(self) -> str:
        return self.profile.config_id

    @property
    def served_model(self) -> str:
        return self.profile.served_model

    def reply(
        self, request_body: Mapping[str, Any], seed: int, *, model_fault_rate: float = 0.0
    ) -> SimReply:
        return reply(
            request_body, self.facts, self.profile, seed, model_fault_rate=model_fault_rate
        )


def carrier_sim_models(
    endpoints: Sequence[tuple[str, str]], facts: Sequence[FactLike], seed: int
) -> list[CarrierSimModel]:
    """One model per (config_id, model) pair, in order: `profiles_for(len(endpoints), seed)`,
    each renamed to its endpoint's configuration and served model id."""
    profiles = profiles_for(len(endpoints), seed)
    planted = tuple(facts)
    return [
        CarrierSimModel(replace(profile, config_id=config_id, model=model), planted)
        for profile, (config_id, model) in zip(profiles, endpoints, strict=True)
    ]


def estimate_tokens(text: str | None) -> int:
    """ceil(chars / 4): the project's token estimate, also used for simulated usage."""
    return math.ceil(len(text or "") / 4)


class _Draw:
    """Uniform draws in [0, 1) from SHA-256 of (profile, seed, request body, purpose)."""

    def __init__(self, profile: SimProfile, seed: int, body: Mapping[str, Any]) -> None:
        canonical = json.dumps(body, sort_keys=True, ensure_ascii=False, default=str)
        digest = hashlib.sha256(canonical.encode("utf-8")).hexdigest()
        self._prefix = f"{profile.config_id}\x1f{seed}\x1f{digest}"

    def unit(self, *purpose: object) -> float:
        key = "\x1f".join([self._prefix, *(str(p) for p in purpose)])
        raw = hashlib.sha256(key.encode("utf-8")).digest()
        return int.from_bytes(raw[:8], "big") / 2**64


@dataclass(frozen=True)
class _Turn:
    """What one request shows the pseudo-model, parsed once."""

    user: str  # the last user message
    everything: str  # every message's text (the recall memory lives here)
    headings: tuple[str, ...]  # headings the system prompt asks for
    shape: SchemaShape | None
    facts: Sequence[FactLike]
    profile: SimProfile
    draw: _Draw

    @classmethod
    def of(
        cls, body: Mapping[str, Any], facts: Sequence[FactLike], profile: SimProfile, seed: int
    ) -> _Turn:
        messages = _messages(body)
        system = "\n".join(text for role, text in messages if role == "system")
        return cls(
            user=next((text for role, text in reversed(messages) if role == "user"), ""),
            everything="\n".join(text for _, text in messages),
            headings=tuple(system_headings(system)),
            shape=schema_shape(body.get("response_format")),
            facts=facts,
            profile=profile,
            draw=_Draw(profile, seed, body),
        )

    @property
    def schema_representation(self) -> str:
        return self.shape.representation if self.shape else "plain"


def _messages(body: Mapping[str, Any]) -> list[tuple[str, str]]:
    raw = body.get("messages")
    out: list[tuple[str, str]] = []
    for item in raw if isinstance(raw, list) else []:
        if isinstance(item, Mapping):
            content = item.get("content")
            text = content if isinstance(content, str) else json.dumps(content, default=str)
            out.append((str(item.get("role", "")), text))
    return out


def _max_tokens(body: Mapping[str, Any]) -> int | None:
    for key in ("max_completion_tokens", "max_tokens"):
        value = body.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def keep_probability(profile: SimProfile, representation: str, self_partitioned: bool) -> float:
    """Per-fold probability that a value seen in the fold input survives into the reply."""
    p = profile.skill
    if representation == "plain":
        p -= profile.prose_penalty
    elif representation == "headings":
        p += profile.heading_bonus
    elif representation == "single_field":
        p -= profile.schema_penalty
        if self_partitioned:  # the paper: rows that happen to carry headings recall more
            p += profile.heading_bonus + max(0.0, profile.partition_gain)
    elif representation == "five_fields":
        p += profile.partition_gain - profile.schema_penalty
    else:
        p += profile.partition_gain / 2 - profile.schema_penalty
    return min(0.995, max(0.02, p))


def _fold(turn: _Turn) -> tuple[str, str]:
    """Keep seen values per the profile; return (reply text, representation)."""
    shape, headings, profile, draw = turn.shape, turn.headings, turn.profile, turn.draw
    rep = shape.representation if shape else ("headings" if headings else "plain")
    self_partitioned = bool(
        headings and rep == "single_field" and draw.unit("partition") < profile.self_partition
    )
    p = keep_probability(profile, rep, self_partitioned)
    kept = [
        f"{fact.label}: {fact.value}"
        for index, fact in enumerate(turn.facts)
        if fact.value and fact.value in turn.user and draw.unit("keep", index, fact.label) < p
    ]
    filler = [
        f"Progress note {k + 1}: configuration work continued as described in the transcript."
        for k in range(profile.verbosity)
    ]
    lines = kept + filler
    if shape is not None:
        if self_partitioned:
            lines = render_headings(headings, lines).splitlines()
        return render_schema(shape, lines, draw, profile.length_pressure), rep
    if headings:
        return render_headings(headings, lines), rep
    return "\n".join(["Summary of the session so far.", *lines]), rep


def _recall(turn: _Turn) -> str:
    """One `LABEL: value` line per asked label: found, fabricated or `unknown`."""
    lines = turn.user.splitlines()
    asked = lines[lines.index(RECALL_MARKER) + 1 :]
    labels = [line[2:].strip() for line in asked if line.startswith("- ")]
    by_label: dict[str, str] = {}
    for fact in turn.facts:
        by_label.setdefault(fact.label, fact.value)
    answers = []
    for label in labels:
        value = by_label.get(label, "")
        missed = turn.draw.unit("miss", label) < turn.profile.answer_miss
        if value and value in turn.everything and not missed:
            answers.append(f"{label}: {value}")
        elif value and turn.draw.unit("fabricate", label) < turn.profile.fabrication:
            answers.append(f"{label}: {stock_value(label, value)}")
        else:
            answers.append(f"{label}: unknown")
    if turn.shape is not None:
        return render_schema(turn.shape, answers, turn.draw, 0.0, spread=False)
    return "\n".join(answers)


def _model_fault(base: SimReply, shape: SchemaShape | None, draw: _Draw) -> SimReply:
    """Model behaviour faults: data for the protocol, never infrastructure errors."""
    kinds = ["empty", "refusal", "nonconforming_json" if shape else "length_stop"]
    kind = kinds[int(draw.unit("model_fault_kind") * len(kinds))]
    if kind == "empty":
        return replace(base, text="", finish_reason="stop", completion_tokens=0, model_fault=kind)
    if kind == "refusal":
        refusal = "I can't help with that."
        text = None if draw.unit("refusal_null") < 0.5 else refusal
        tokens = estimate_tokens(refusal)
        return replace(base, text=text, refusal=refusal, completion_tokens=tokens, model_fault=kind)
    if kind == "nonconforming_json" and shape and draw.unit("missing_property") < 0.5:
        text = json.dumps({"unexpected": "the required properties are missing"})
        finish = "stop"
    else:
        full = base.text or ""
        text, finish = full[: max(1, len(full) // 2)], "length"
    return replace(
        base,
        text=text,
        finish_reason=finish,
        completion_tokens=estimate_tokens(text),
        model_fault=kind,
    )


# --- rendering: schema shapes, headings, stock values ------------------------------------

STOCK_UUID = "123e4567-e89b-12d3-a456-426614174000"
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.IGNORECASE)


@dataclass(frozen=True)
class PropertySpec:
    name: str
    type: str  # JSON-schema type; string unless declared otherwise
    max_length: int | None


@dataclass(frozen=True)
class SchemaShape:
    """The part of a response_format the pseudo-model reacts to."""

    properties: tuple[PropertySpec, ...]

    @property
    def representation(self) -> str:
        count = len(self.properties)
        return {1: "single_field", 5: "five_fields"}.get(count, "other")


def schema_shape(response_format: Any) -> SchemaShape | None:
    """Both wire forms: json_schema.schema and json_object + schema; None for plain requests."""
    if not isinstance(response_format, Mapping):
        return None
    wrapper = response_format.get("json_schema")
    schema = wrapper.get("schema") if isinstance(wrapper, Mapping) else None
    if schema is None:
        schema = response_format.get("schema")
    props = schema.get("properties") if isinstance(schema, Mapping) else None
    specs = []
    for name, raw in (props if isinstance(props, Mapping) else {}).items():
        spec = raw if isinstance(raw, Mapping) else {}
        limit = spec.get("maxLength")
        specs.append(
            PropertySpec(
                str(name),
                str(spec.get("type", "string")),
                limit if isinstance(limit, int) else None,
            )
        )
    return SchemaShape(tuple(specs))


def system_headings(system: str) -> list[str]:
    """Headings the system prompt asks for: its lines that start with `## `."""
    return [line[3:].strip() for line in system.splitlines() if line.startswith("## ")]


def render_headings(headings: Sequence[str], lines: Sequence[str]) -> str:
    """Lines dealt round-robin under the requested headings, every heading present."""
    blocks = []
    for k, heading in enumerate(headings):
        mine = list(lines[k :: len(headings)]) or ["(nothing recorded)"]
        blocks.append("\n".join([f"## {heading}", *mine]))
    return "\n\n".join(blocks)


def render_schema(
    shape: SchemaShape,
    lines: Sequence[str],
    draw: _Draw,
    length_pressure: float,
    *,
    spread: bool = True,
) -> str:
    """A JSON object filling every property; string fields respect maxLength line by line,
    except that with probability `length_pressure` a field overruns by one line."""
    if not shape.properties:
        return json.dumps({"summary": "\n".join(lines)}, ensure_ascii=False)
    fields = [p for p in shape.properties if p.type == "string"] or list(shape.properties)
    dealt: dict[str, list[str]] = {p.name: [] for p in fields}
    for k, line in enumerate(lines):
        dealt[fields[k % len(fields) if spread else 0].name].append(line)
    out: dict[str, Any] = {}
    for prop in shape.properties:
        mine = dealt.get(prop.name, [])
        if prop.type == "array":
            out[prop.name] = mine
        elif prop.type in ("integer", "number"):
            out[prop.name] = 0
        elif prop.type == "boolean":
            out[prop.name] = False
        elif prop.type == "object":
            out[prop.name] = {}
        else:
            out[prop.name] = _fit(mine, prop, draw, length_pressure)
    return json.dumps(out, ensure_ascii=False)


def _fit(lines: list[str], prop: PropertySpec, draw: _Draw, length_pressure: float) -> str:
    if prop.max_length is None:
        return "\n".join(lines)
    taken: list[str] = []
    for line in lines:
        if len("\n".join([*taken, line])) > prop.max_length:
            if draw.unit("overrun", prop.name) < length_pressure:
                taken.append(line)
            break
        taken.append(line)
    return "\n".join(taken)


def stock_value(label: str, true_value: str) -> str:
    """A high-frequency instance of the value's type, as fabricating models produce."""
    low = f"{label} {true_value}".lower()
    if _UUID.fullmatch(true_value) or "uuid" in low:
        guess = STOCK_UUID
    elif "utc" in low or "time" in low:
        guess = "02:00 UTC"
    elif "shard" in low:
        guess = "16 shards"
    elif true_value.startswith(("http://", "https://")) or "url" in low or "origin" in low:
        guess = "https://example.com"
    elif true_value.isdigit() or "port" in low:
        guess = "8443"
    elif true_value.startswith("/") or "path" in low:
        guess = "/var/lib/migration/state.json"
    else:
        guess = "example"
    return guess if guess != true_value else "example-value"
