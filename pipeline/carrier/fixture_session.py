"""Placement of the planted facts and assembly of the session, chunk by chunk.

Decisions (docs/carrier.md, "Chunking and placement"):
- One chunk per fold. Each chunk is filled to `chunk_tokens` estimated tokens of its rendered
  transcript; `target_tokens` must agree with `chunk_tokens * folds` within 5 %.
- `distributed`: graded facts are dealt round-robin over `graded_chunks` (empty = every
  chunk); `single_chunk`: all graded facts land in the one chunk `graded_chunks` names.
  Distractors are dealt round-robin over every chunk in both placements.
- Carriers are dealt round-robin (tool result, assistant prose, operator turn) over a shuffled
  order, separately for graded facts and distractors, so each set spreads over all three.
- A chunk is a run of steps (about one per 1,000 tokens, at least 2 per chunk): an optional
  operator turn, an assistant turn with one tool call, the tool result, the assistant's comment.
  Step sizes are drawn first and facts dealt to steps; each step's share of the budget is its
  facts' own size plus its slice of the rest, filled with filler lines (the running error is
  carried into the next step, so a chunk lands on its budget within about one line). When the
  facts leave less room than the prose needs (the tiny `small` scenario), prose turns brief.
- Every value occurs exactly once in the whole session and every label only next to its own
  value; a step whose filler breaks that is redrawn from the same stream.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from random import Random

from pipeline.carrier import fixture_prose as prose
from pipeline.carrier.config import ScenarioConfig
from pipeline.carrier.fixture_filler import STAMP_EXAMPLE, Filler, Scene
from pipeline.carrier.fixture_model import CARRIERS, Chunk, Message, ToolCall, render_message
from pipeline.carrier.fixture_outputs import tool_output
from pipeline.carrier.fixture_values import DrawnFact
from pipeline.carrier.tokens import estimate_quarters
from pipeline.config.strict import ConfigError

PLACEMENTS = ("distributed", "single_chunk")
MIN_STEPS = 2  # per chunk; tight budgets (small) put several facts in one step
TOKENS_PER_STEP = 1000  # mean step size (3 to 60 steps per chunk); sizes vary 0.3x to 1.7x
_SEPARATOR_Q = 2  # "\n\n" between rendered messages, in quarter tokens
_MAX_REDRAWS = 200
_FACT_PROSE_Q = 48  # quarter tokens of the sentence or line around one stated fact
_STEP_PROSE_Q = 4 * 90  # quarter tokens of a step's prose and tool call without facts


@dataclass(frozen=True)
class Placement:
    fact: DrawnFact
    chunk: int
    carrier: str  # user | assistant | tool


def check_scenario(scenario: ScenarioConfig) -> None:
    """Reject a scenario the generator cannot honour, naming the field."""
    where = f"scenario {scenario.name}"
    if scenario.folds < 1 or scenario.chunk_tokens < 200:
        raise ConfigError(f"{where}: needs folds >= 1 and chunk_tokens >= 200")
    if scenario.placement not in PLACEMENTS:
        raise ConfigError(f"{where}: placement must be one of {', '.join(PLACEMENTS)}")
    if any(not 0 <= c < scenario.folds for c in scenario.graded_chunks):
        raise ConfigError(f"{where}: graded_chunks must lie in 0..{scenario.folds - 1}")
    if len(set(scenario.graded_chunks)) != len(scenario.graded_chunks):
        raise ConfigError(f"{where}: graded_chunks has a repeated chunk")
    if scenario.placement == "single_chunk" and len(scenario.graded_chunks) != 1:
        raise ConfigError(f"{where}: single_chunk placement needs exactly one graded chunk")
    total = scenario.chunk_tokens * scenario.folds
    if abs(total - scenario.target_tokens) > 0.05 * scenario.target_tokens:
        raise ConfigError(
            f"{where}: chunk_tokens x folds = {total} disagrees with target_tokens "
            f"{scenario.target_tokens} by more than 5%"
        )


def place_facts(
    rng: Random, drawn: tuple[DrawnFact, ...], scenario: ScenarioConfig
) -> tuple[Placement, ...]:
    """Deal graded facts over the graded chunks and distractors over all chunks."""
    graded_chunks = list(scenario.graded_chunks) or list(range(scenario.folds))
    placed: list[Placement] = []
    for graded, chunks in ((True, graded_chunks), (False, list(range(scenario.folds)))):
        facts = [d for d in drawn if d.graded == graded]
        rng.shuffle(facts)
        chunk_of = {f.label: chunks[i % len(chunks)] for i, f in enumerate(facts)}
        rng.shuffle(facts)  # deal carriers over a fresh order: independent of the chunk
        carriers = list(CARRIERS)
        rng.shuffle(carriers)
        placed += [
            Placement(f, chunk_of[f.label], carriers[i % len(carriers)])
            for i, f in enumerate(facts)
        ]
    return tuple(placed)


class SessionBuilder:
    """Builds the chunks of one session from one Random, a Scene and the placements."""

    def __init__(self, rng: Random, scene: Scene, filler: Filler, facts: tuple[DrawnFact, ...]):
        self.rng = rng
        self.scene = scene
        self.filler = filler
        self.values = tuple(f.value for f in facts)
        self.labels = tuple(f.label for f in facts)
        self.started = False

    def build_chunk(self, index: int, budget_tokens: int, placed: list[Placement]) -> Chunk:
        rng = self.rng
        mean = budget_tokens // min(max(budget_tokens // TOKENS_PER_STEP, MIN_STEPS), 60)
        plan: list[int] = []
        while sum(plan) < budget_tokens * 4:
            plan.append(4 * rng.randint(mean * 3 // 10, mean * 17 // 10))
        per_step: list[list[Placement]] = [[] for _ in plan]
        for p in placed:
            per_step[rng.randrange(len(plan))].append(p)
        # Each step's share: its own facts and prose, plus its slice of what is left for filler.
        # A chunk whose facts leave little room gets brief prose (the tight `small` scenario).
        need = [sum(_fact_q(p) for p in facts) + _STEP_PROSE_Q for facts in per_step]
        filler_q = budget_tokens * 4 - sum(need)
        brief = filler_q < len(plan) * _STEP_PROSE_Q
        shares = [
            n + max(filler_q, 0) * size // sum(plan) for n, size in zip(need, plan, strict=True)
        ]
        messages: list[Message] = []
        used_q, planned_q = -_SEPARATOR_Q, 0
        for step, (share_q, facts) in enumerate(zip(shares, per_step, strict=True)):
            planned_q += share_q
            new = self._step(f"{index}_{step}", planned_q - used_q, facts, brief)
            used_q += sum(estimate_quarters(render_message(m)) + _SEPARATOR_Q for m in new)
            messages += new
        return Chunk(index, tuple(messages))

    def _step(
        self, step_id: str, target_q: int, facts: list[Placement], brief: bool
    ) -> list[Message]:
        for _ in range(_MAX_REDRAWS):
            messages = self._draw_step(step_id, target_q, facts, brief)
            if self._clean(messages, facts):
                self.started = True
                return messages
        raise AssertionError(f"step {step_id}: filler keeps colliding with planted values")

    def _draw_step(
        self, step_id: str, target_q: int, facts: list[Placement], brief: bool
    ) -> list[Message]:
        rng, scene = self.rng, self.scene
        by = {c: [(p.fact.label, p.fact.value) for p in facts if p.carrier == c] for c in CARRIERS}
        messages: list[Message] = []
        if by["user"] or not self.started or (not brief and rng.random() < 0.3):
            task = not self.started or (not brief and rng.random() < 0.4)
            text = prose.operator_turn(rng, scene, by["user"], task, brief)
            messages.append(Message("user", text))
        output, filler_line, fact_line = tool_output(self.filler, with_facts=bool(by["tool"]))
        arguments = json.dumps(output.arguments, sort_keys=True, ensure_ascii=False)
        call = ToolCall(f"call_{step_id}", output.tool, arguments)
        intro = "" if brief else prose.pre_call(rng, output.intent)  # a bare call when tight
        messages.append(Message("assistant", intro, tool_calls=(call,)))
        fact_lines = [fact_line(label, value) for label, value in by["tool"]]
        closing = Message("assistant", prose.analysis(rng, scene, by["assistant"], brief))
        stamp_q = estimate_quarters(STAMP_EXAMPLE + " ") if output.stamped else 0
        fixed = [*output.head, *fact_lines, *output.tail]
        skeleton = [*messages, _tool_message(output.tool, call.id, fixed), closing]
        room_q = target_q - sum(
            estimate_quarters(render_message(m)) + _SEPARATOR_Q for m in skeleton
        )
        room_q -= stamp_q * len(fact_lines)
        lines: list[str] = []
        while True:
            line = filler_line()
            cost = estimate_quarters(line) + 1 + stamp_q
            if cost > room_q and (lines or fact_lines):
                break
            lines.append(line)
            room_q -= cost
        for text in fact_lines:
            lines.insert(rng.randint(0, len(lines)), text)
        if output.stamped:  # stamps are given once lines are placed, so time runs forward
            lines = [f"{self.filler.stamp()} {line}" for line in lines]
        body = [*output.head, *lines, *output.tail]
        return [*messages, _tool_message(output.tool, call.id, body), closing]

    def _clean(self, messages: list[Message], facts: list[Placement]) -> bool:
        """True if the step states exactly its own facts, each once, and nothing else planted."""
        text = "\n\n".join(render_message(m) for m in messages)
        mine = {p.fact.value for p in facts}
        mine_labels = [p.fact.label for p in facts]
        for value in self.values:
            if text.count(value) != (1 if value in mine else 0):
                return False
        return all(text.count(lb) == mine_labels.count(lb) for lb in self.labels)


def _fact_q(placement: Placement) -> int:
    return estimate_quarters(placement.fact.label + placement.fact.value) + _FACT_PROSE_Q


def _tool_message(tool: str, call_id: str, lines: list[str]) -> Message:
    return Message("tool", "\n".join(lines), name=tool, tool_call_id=call_id)
