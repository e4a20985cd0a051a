"""Deterministic fixture generator of the fold-and-recall study (paper §3.1).

`generate(scenario, seed)` builds a synthetic agent session (operator turns, assistant turns
with tool calls, tool results made of logs, configs and command output, short nudges), plants
fifty facts in it (fourteen graded, thirty-six distractors), and cuts it into one chunk per fold
by estimated tokens (`pipeline.carrier.tokens`).

Determinism: every random choice comes from `random.Random` seeded with the string
"{scenario}:{seed}:{version}[:purpose]" (string seeds are hashed with SHA-512 by CPython, never
with the salted `hash()`); there is no set iteration, clock or locale in the output. The same
(scenario, seed, version) therefore gives byte-identical JSON on any machine. Any change to the
generator that changes its output must come with a new `generator_version` in conf/scenario
(the golden-SHA test fails otherwise).

Layout: values and their rules (fixture_values), words (fixture_words), filler text
(fixture_filler, fixture_prose), placement and chunk assembly (fixture_session), value objects
and rendering (fixture_model), canonical JSON and loading (fixture_codec).
"""

from __future__ import annotations

import datetime as dt
from random import Random

from pipeline.carrier.config import ScenarioConfig
from pipeline.carrier.fixture_codec import (
    FixtureError,
    fixture_dict,
    fixture_from_json,
    fixture_json,
    fixture_sha256,
    load_fixture,
)
from pipeline.carrier.fixture_filler import Filler, draw_scene
from pipeline.carrier.fixture_model import (
    Chunk,
    Fact,
    Fixture,
    Message,
    ToolCall,
    chunk_tokens,
    render_chunk,
    render_message,
)
from pipeline.carrier.fixture_session import SessionBuilder, check_scenario, place_facts
from pipeline.carrier.fixture_values import SESSION_EPOCH, draw_facts

__all__ = [
    "Chunk",
    "Fact",
    "Fixture",
    "FixtureError",
    "Message",
    "ToolCall",
    "chunk_tokens",
    "fixture_dict",
    "fixture_from_json",
    "fixture_json",
    "fixture_sha256",
    "generate",
    "load_fixture",
    "render_chunk",
    "render_message",
]


def generate(scenario: ScenarioConfig, seed: int) -> Fixture:
    """The fixture of (scenario, seed, scenario.generator_version)."""
    check_scenario(scenario)
    key = f"{scenario.name}:{seed}:{scenario.generator_version}"
    drawn = draw_facts(Random(f"{key}:values"))
    placed = place_facts(Random(f"{key}:placement"), drawn, scenario)
    rng = Random(f"{key}:session")
    scene = draw_scene(rng)
    start = dt.datetime.combine(SESSION_EPOCH, dt.time(9, 12, 7)) + dt.timedelta(
        days=rng.randint(0, 139), seconds=rng.randint(0, 7 * 3600)
    )
    builder = SessionBuilder(rng, scene, Filler(rng, scene, start), drawn)
    chunks = tuple(
        builder.build_chunk(i, scenario.chunk_tokens, [p for p in placed if p.chunk == i])
        for i in range(scenario.folds)
    )
    order = {d.label: i for i, d in enumerate(drawn)}  # record facts in spec order, graded first
    facts = tuple(
        Fact(p.fact.label, p.fact.value, p.fact.kind, p.fact.graded, p.chunk, p.carrier)
        for p in sorted(placed, key=lambda p: order[p.fact.label])
    )
    fx = Fixture(
        scenario.name,
        seed,
        scenario.generator_version,
        chunks,
        facts,
        tuple(f for f in facts if f.graded),
    )
    _assert_each_value_once(fx)
    return fx


def _assert_each_value_once(fx: Fixture) -> None:
    """Each planted value occurs once in the session, inside its own chunk (else: a bug)."""
    rendered = [render_chunk(c) for c in fx.chunks]
    for fact in fx.planted:
        counts = [text.count(fact.value) for text in rendered]
        if counts[fact.chunk] != 1 or sum(counts) != 1:
            raise AssertionError(f"{fact.label!r} occurs {counts} times across chunks")
