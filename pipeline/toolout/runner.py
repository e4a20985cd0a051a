"""The tool-output study's unit runner: one policy over a shard of the corpus, one cache model.

A unit is (priced configuration, policy, shard): the shard is its execution group's
(pipeline/toolout/shards.py; the shipped corpus is one shard). Offline (panel kind
`offline`) it sends nothing: it replays every transcript of its shard under the policy,
accounts each request under the configuration's cache model and returns the shard's totals
as its row plus its turns, sessions and decisions.
Live (a panel with endpoints) it replays the live budget's transcripts, sends each request
within the budget with max_tokens=1 (pipeline.toolout.live) and records the endpoint's
reported cached tokens beside the cache model's prediction for the same requests; the model
mode then summarises through the same endpoint where the gate approves (toolout.summaries).
Decisions the seed leaves open:

- Anthropic breakpoints sit on the first block (the system prompt) and on the last block of
  every request, as a harness that caches its history would place them.
- The model mode's gate prices a rewrite from the output's position in the request as sent
  (`replay.Position`); its N is the policy's `expected_applications` (the seed's 6). Its
  preflight prices the best case (the output removed), its final check the summary's size
  with the summary's price as S. No summariser endpoint exists offline, so a candidate the
  preflight approves stays exact (`no_summariser`): the offline model arm measures the gate,
  as the seed's run did.
- Replay costs are priced, not paid: they are in `replay_cost_usd`, the turns and the
  sessions. The row's `cost_usd` is the engine's bill of what was sent (0 offline).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, MutableSequence, Sequence
from typing import Any

from pipeline.chat.errors import EndpointError
from pipeline.chat.messages import ChatClient
from pipeline.study import Columns, Record, UnitContext, UnitOutcome, UnitResult, UnitSpec
from pipeline.study_validity import endpoint_failure
from pipeline.toolout.accounting import (
    CacheBlock,
    CacheRequest,
    SessionCost,
    account_incremental,
    link_outputs,
)
from pipeline.toolout.cache_models import CacheModel
from pipeline.toolout.economics import (
    Candidate,
    GateDecision,
    GateInputs,
    final,
    preflight,
    rates_for,
    regret,
)
from pipeline.toolout.economics import gate as gate_check
from pipeline.toolout.live import LiveBudget, LiveTurn, choose_transcripts, send_live, within_budget
from pipeline.toolout.oracle import NAME as ORACLE
from pipeline.toolout.oracle import Schedule, ScheduledPolicy, oracle_schedule
from pipeline.toolout.policies import ModelSummaries, OutputView, build_policy
from pipeline.toolout.policies.base import Policy, utf8_len
from pipeline.toolout.records import CAUSES, DECISIONS, ROW_COLUMNS, TURNS
from pipeline.toolout.replay import Position, ReplayedRequest, replay
from pipeline.toolout.schedule_cost import ScheduleCost
from pipeline.toolout.summaries import SummaryBook, fetch
from pipeline.toolout.tokens import estimate_tokens
from pipeline.toolout.transcript import Corpus, Transcript

# columns that hold None (offline, or where the gate was not asked): lists; the others are
# compact arrays (pipeline.study.Columns.buffers)
TURNS_NULLABLE = frozenset(
    {
        "reported_prompt_tokens",
        "reported_cached_tokens",
        "reported_cache_write_tokens",
        "reported_cache_discount_usd",
        "latency_s",
    }
)
DECISIONS_NULLABLE = frozenset(c.name for c in DECISIONS.columns if c.name.startswith("gate_"))
DEFAULT_EXPECTED_APPLICATIONS = 6.0  # the seed's compactor setting
LARGE_OUTPUT_BYTES = 2000  # the forced-exact floor: smaller outputs are never compacted


GateKey = tuple[int, str]  # (request index, stage): one batch per request and stage
MAX_BATCH_PASSES = 4  # replays until each request's batch is the one it was gated with
_Summary = tuple[int, tuple[tuple[int, int], ...], int]  # GateLog._summary


class GateLog:
    """The model-mode gate of one transcript's replay, and the decisions it took.

    The gate charges the candidates of one request together, as the seed's compactor applies
    a batch: the rewrite premium once from the earliest candidate's position, D summed over
    them (economics.batch). The policy asks about one output at a time, so the batch of a
    request is learnt from a replay and the transcript replayed with it (`known`) until every
    request is gated with exactly the candidates that reach the gate (`converged`). Each
    candidate's decision is its batch's; `batch_sizes` records how many outputs went together.
    """

    def __init__(
        self,
        cache_model: CacheModel,
        model: str,
        n: float,
        where: Position,
        *,
        summary_cost: Callable[[int], float] = lambda _output: 0.0,
        known: Mapping[GateKey, Mapping[int, Candidate]] | None = None,
    ) -> None:
        self.cache_model, self.model = cache_model, model
        self.write_rate, self.read_rate = rates_for(cache_model, model)
        self.n = n
        self.where = where
        self.summary_cost = summary_cost
        self.known: Mapping[GateKey, Mapping[int, Candidate]] = known or {}
        self.seen: dict[GateKey, dict[int, Candidate]] = {}
        self.decisions: dict[tuple[int, int], tuple[GateDecision, int]] = {}
        # (output, request) -> how many outputs its batch held
        self.batch_sizes: dict[tuple[int, int], int] = {}
        self._summaries: dict[GateKey, _Summary | None] = {}

    def __call__(self, view: OutputView, candidate_bytes: int) -> tuple[bool, str]:
        """The preflight at 0 candidate bytes, the final check at the summary's size."""
        original = estimate_tokens(view.content)
        candidate = Candidate(
            position_tokens=self.where.position_tokens,
            original_tokens=original,
            compacted_tokens=min(-(-candidate_bytes // 4), original),
        )
        stage = "preflight" if candidate_bytes == 0 else "final"
        key: GateKey = (view.request_index, stage)
        self.seen.setdefault(key, {})[view.output_index] = candidate
        known = self.known.get(key, {})
        w, c, prefix = self.write_rate, self.read_rate, self.where.cached_prefix_tokens
        summary = self._summary(key, known) if stage == "preflight" else None
        if summary is not None and candidate.position_tokens >= 0:
            decision, size = self._preflight(summary, known, view.output_index, candidate)
        else:
            together = dict(known)
            together[view.output_index] = candidate  # a first pass knows only this one
            members = sorted(together)
            size = len(members)
            chosen = [together[o] for o in members]
            if stage == "preflight":
                decision = preflight(
                    chosen, prefix, future_requests=self.n, write_rate=w, read_rate=c
                )
            else:
                cost = sum(self.summary_cost(o) for o in members)
                decision = final(
                    chosen,
                    prefix,
                    future_requests=self.n,
                    write_rate=w,
                    read_rate=c,
                    summariser_usd=cost,
                )
        at = (view.output_index, view.request_index)
        self.decisions[at] = (decision, self.where.later_requests)
        self.batch_sizes[at] = size
        return decision.approved, decision.reason

    def _preflight(
        self,
        summary: _Summary,
        known: Mapping[int, Candidate],
        output: int,
        candidate: Candidate,
    ) -> tuple[GateDecision, int]:
        """`economics.preflight` of the request's known batch with `candidate` in it, in O(1).

        The policy asks about every visible output of a request, each against the same known
        batch, so rebuilding the batch per question is quadratic in the outputs of a request.
        The preflight needs only the batch's summed original tokens and its earliest
        position: both are kept per request (`_summary`), with the two earliest positions so
        that the one being asked about can be left out. Ints only, so the sums are exact and
        the decision is the one `preflight` gives (tests/toolout/test_decisions_gate.py).
        """
        total, earliest, size = summary
        mine = known.get(output)
        if mine is not None:
            total -= mine.original_tokens
            size -= 1
        start = candidate.position_tokens
        for position, o in earliest:
            if o != output:
                start = min(start, position)
                break
        rewritten = max(0, self.where.cached_prefix_tokens - start)
        inputs = GateInputs(
            future_requests=self.n,
            rewritten_tokens=rewritten,
            write_rate=self.write_rate,
            read_rate=self.read_rate,
            removed_tokens_per_request=total + candidate.original_tokens,
            summariser_usd=0.0,
            stage="preflight",
        )
        return gate_check(inputs), size + 1

    def _summary(self, key: GateKey, known: Mapping[int, Candidate]) -> _Summary | None:
        """(summed original tokens, the two earliest (position, output), size) of a known
        batch; None where `preflight` itself must judge (a reuse, or a position outside the
        prompt, which it refuses)."""
        if key not in self._summaries:
            summary: _Summary | None = None
            if not any(c.position_tokens < 0 or c.cached for c in known.values()):
                total = sum(c.original_tokens for c in known.values())
                earliest = tuple(sorted((c.position_tokens, o) for o, c in known.items())[:2])
                summary = (total, earliest, len(known))
            self._summaries[key] = summary
        return self._summaries[key]

    @property
    def converged(self) -> bool:
        return self.seen == {k: dict(v) for k, v in self.known.items()}

    def again(self) -> GateLog:
        """A fresh gate that knows the batches this replay saw."""
        return GateLog(
            self.cache_model,
            self.model,
            self.n,
            Position(),
            summary_cost=self.summary_cost,
            known=self.seen,
        )


def cache_requests(requests: Sequence[ReplayedRequest]) -> tuple[CacheRequest, ...]:
    """The replay's requests as the cache models account them.

    The general form, for `accounting.account` (tests compare it with the runner's own
    `account_incremental`, which is told what changed instead). Blocks are memoised by
    (role, text, breakpoint): a message repeated on every later request is one key object.
    """
    built = []
    memo: dict[tuple[str, str, bool], CacheBlock] = {}
    for request in requests:
        last = len(request.blocks) - 1
        blocks = []
        for i, b in enumerate(request.blocks):
            key = (b.role, b.text, i in (0, last))
            block = memo.get(key)
            if block is None:
                block = memo[key] = CacheBlock.of(b.role, b.text, b.tokens, breakpoint=key[2])
            blocks.append(block)
        built.append(CacheRequest(tuple(blocks), request.output_tokens, request.timestamp))
    return link_outputs(built)


def price(
    requests: Sequence[ReplayedRequest], cache_model: CacheModel, model: str, think_time_s: float
) -> SessionCost:
    """The replay's requests billed under `cache_model`, each in the work of what it changed."""
    return account_incremental(requests, cache_model, model, think_time_s=think_time_s)


class ToolOutRunner:
    """Replays the corpus under one cache model; one unit per policy."""

    step_purpose = "replay"  # offline units send no request
    steps_per_unit = None
    requests_per_unit = None

    def __init__(
        self,
        transcripts: Corpus,
        policies: Mapping[str, Mapping[str, Any]],
        cache_model: CacheModel,
        model: str,
        *,
        think_time_s: float,
        corpus_sha256: str,
        skipped: int,
        live: LiveBudget | None = None,
        shards: Sequence[Corpus] = (),
    ) -> None:
        self.transcripts = transcripts  # iterated once per unit, one file at a time
        self.shards = tuple(shards)  # offline: execution group g replays shard g mod n
        self.policies = dict(policies)
        self.cache_model = cache_model
        self.model = model
        self.think_time_s = think_time_s
        self.corpus_sha256 = corpus_sha256
        self.skipped = skipped
        self.live = live  # None: offline (nothing is sent)

    def _schedule_cost(self, transcript: Transcript) -> Callable[[Schedule], float]:
        """The oracle search's cost of a schedule (schedule_cost.py: the full replay's value,
        in the work of the requests after the schedule's first change)."""
        return ScheduleCost(
            transcript,
            self.cache_model,
            self.model,
            think_time_s=self.think_time_s,
            estimate=estimate_tokens,
        )

    def shard(self, spec: UnitSpec) -> Corpus:
        """The offline unit's transcripts: its execution group's shard (the groups are
        consecutive, so `mod n` maps them one to one onto the shards), else the corpus."""
        if not self.shards:
            return self.transcripts
        return self.shards[spec.execution_group % len(self.shards)]

    def live_transcripts(self) -> list[Transcript]:
        """The live subset: transcripts where some policy removes the most within budget."""
        assert self.live is not None
        policies = [build_policy(spec) for spec in self.policies.values()]

        def removable(transcript: Transcript, requests: int) -> int:
            sent = [
                sum(r.input_tokens for r in replay(transcript, p, estimate_tokens)[:requests])
                for p in policies
            ]
            return max(sent) - min(sent) if sent else 0

        return choose_transcripts(list(self.transcripts), self.live, removable)

    def _n(self, arm: str) -> float:
        gate_spec = self.policies.get(arm, {}).get("gate", {})
        return float(gate_spec.get("expected_applications", DEFAULT_EXPECTED_APPLICATIONS))

    def _price(self, requests: Sequence[ReplayedRequest]) -> SessionCost:
        return price(requests, self.cache_model, self.model, self.think_time_s)

    async def run(self, spec: UnitSpec, client: ChatClient, context: UnitContext) -> UnitResult:
        try:
            return await self._run(spec, client, context)
        except EndpointError as exc:  # the shared vocabulary names it (pipeline.study_validity)
            failure = endpoint_failure(exc)
            outcome = UnitOutcome(
                False, failure.invalid_reason, failure.retryable, error_detail=failure.detail
            )
        return UnitResult(outcome, {c.name: None for c in ROW_COLUMNS})

    async def _run(self, spec: UnitSpec, client: ChatClient, context: UnitContext) -> UnitResult:
        # turns and decisions by column (pipeline.study.Columns): one list per column
        turns = Columns.buffers(TURNS.columns, TURNS_NULLABLE)
        sessions: list[Record] = []
        decisions = Columns.buffers(DECISIONS.columns, DECISIONS_NULLABLE)
        summaries = 0
        chosen: Corpus = self.live_transcripts() if self.live is not None else self.shard(spec)
        replayed = 0
        for transcript in chosen:
            replayed += 1
            requests: Sequence[ReplayedRequest]
            if self.live is None:
                requests, gate = self._replay(spec.arm, transcript, None)
                live_turns = None
            else:
                requests, gate, asked = await self._replay_live(spec.arm, transcript, client)
                summaries += asked
                salt = hashlib.sha256(f"{spec.row_id}|{transcript.id}".encode()).hexdigest()[:12]
                live_turns = await send_live(client, requests, seed=context.seed, salt=salt)
            cost = self._price(requests)
            _turns(turns, transcript, requests, cost, live_turns)
            _decisions(decisions, transcript, requests, gate)
            sessions.append(_session(transcript, requests, cost))
        live = self.live is not None
        row = {
            "cache_model": self.cache_model.name,
            "corpus_sha256": self.corpus_sha256,
            "transcripts": replayed,
            "transcripts_skipped": self.skipped,
            "replayed_requests": len(turns["input_tokens"]),
            "input_tokens": sum(turns["input_tokens"]),
            "replay_cached_tokens": sum(turns["cached_tokens"]),
            "replay_cost_usd": sum(turns["cost_usd"]),
            "bytes_removed": sum(s["bytes_removed"] for s in sessions),
            "applications_new": sum(s["applications_new"] for s in sessions),
            "applications_reused": sum(s["applications_reused"] for s in sessions),
            "live": live,
            "reported_prompt_tokens": _reported_sum(turns, "reported_prompt_tokens", live),
            "reported_cached_tokens": _reported_sum(turns, "reported_cached_tokens", live),
            "summaries_requested": summaries if live else None,
        }
        tables = {"turns": Columns(turns), "sessions": sessions, "decisions": Columns(decisions)}
        return UnitResult(UnitOutcome(valid=True), row, tables)

    def _replay(
        self, arm: str, transcript: Transcript, book: SummaryBook | None
    ) -> tuple[list[ReplayedRequest], GateLog]:
        """One replay; `book` None offline (no summariser: approved candidates stay exact).

        A policy with a model mode is replayed until its gate's batches converge (GateLog);
        one that never asks the gate is replayed once.
        """
        costs = book.cost_of if book is not None else lambda _output: 0.0
        gate = GateLog(self.cache_model, self.model, self._n(arm), Position(), summary_cost=costs)
        if arm == ORACLE:
            policy: Policy = ScheduledPolicy(
                oracle_schedule(transcript, self._schedule_cost(transcript))
            )
            return replay(transcript, policy, estimate_tokens, gate.where), gate
        for _ in range(MAX_BATCH_PASSES):
            policy = build_policy(self.policies[arm], summaries=ModelSummaries(book, gate))
            requests = replay(transcript, policy, estimate_tokens, gate.where)
            if gate.converged:
                return requests, gate
            gate = gate.again()
        raise RuntimeError(
            f"{transcript.id}: the gate's batches did not settle in {MAX_BATCH_PASSES} replays"
        )

    async def _replay_live(
        self, arm: str, transcript: Transcript, client: ChatClient
    ) -> tuple[tuple[ReplayedRequest, ...], GateLog, int]:
        """Replay, fetch the summaries the model mode asked for within budget, replay again."""
        assert self.live is not None
        book = SummaryBook()
        asked = 0
        while True:
            requests, gate = self._replay(arm, transcript, book)
            sent = within_budget(requests, self.live)
            wanted = book.take_wanted(sent[-1].index if sent else -1)
            if not wanted:
                return sent, gate, asked
            asked += await fetch(
                client,
                book,
                wanted,
                budget_bytes=self.live.max_prompt_tokens * 4,
                max_tokens=self.live.summary_max_tokens,
            )


def _reported_sum(turns: Mapping[str, MutableSequence[Any]], column: str, live: bool) -> int | None:
    if not live:
        return None
    values = [v for v in turns[column] if v is not None]
    return sum(values) if values else None


def _turns(
    columns: dict[str, MutableSequence[Any]],
    transcript: Transcript,
    requests: Sequence[ReplayedRequest],
    cost: SessionCost,
    live: Sequence[LiveTurn] | None,
) -> None:
    """Appends one turn per request to `columns` (the turns table by column).

    The money spent on a live request is the engine's bill (the request boundary), not here."""
    n = len(requests)
    if len(cost.requests) != n:
        raise ValueError(f"{transcript.id}: {n} requests but {len(cost.requests)} priced")
    sent = {t.request_index: t for t in live or ()}
    reported = [sent.get(r.index) for r in requests]
    usages = [t.usage if t is not None else None for t in reported]
    priced = cost.requests
    columns["transcript_id"] += [transcript.id] * n
    columns["corpus"] += [transcript.corpus] * n
    columns["request_index"].extend([r.index for r in requests])
    columns["time_s"].extend([p.time_s for p in priced])
    columns["time_assumed"].extend([p.time_assumed for p in priced])
    columns["input_bytes"].extend([r.input_bytes for r in requests])
    columns["input_tokens"].extend([p.input_tokens for p in priced])
    columns["cached_tokens"].extend([p.cached_tokens for p in priced])
    columns["written_tokens"].extend([p.written_tokens for p in priced])
    columns["uncached_tokens"].extend([p.uncached_tokens for p in priced])
    columns["output_tokens"].extend([p.output_tokens for p in priced])
    columns["cost_usd"].extend([p.cost_usd for p in priced])
    misses = [dict(p.misses.items()) for p in priced]
    for c in CAUSES:
        columns[f"miss_{c}_tokens"].extend([m[c].tokens for m in misses])  # type: ignore[index]
        columns[f"miss_{c}_usd"].extend([m[c].usd for m in misses])  # type: ignore[index]
    columns["outputs_visible"].extend([r.outputs_visible for r in requests])
    columns["outputs_changed"].extend([r.outputs_changed for r in requests])
    columns["outputs_new"].extend([r.outputs_new for r in requests])
    columns["outputs_reused"].extend([r.outputs_reused for r in requests])
    columns["live_sent"].extend([t is not None for t in reported])
    columns["reported_prompt_tokens"].extend([u.prompt_tokens if u else None for u in usages])
    columns["reported_cached_tokens"].extend([u.cached_tokens if u else None for u in usages])
    columns["reported_cache_write_tokens"].extend(
        [u.cache_write_tokens if u else None for u in usages]
    )
    columns["reported_cache_discount_usd"].extend(
        [t.cache_discount_usd if t else None for t in reported]
    )
    columns["latency_s"].extend([t.latency_s if t else None for t in reported])


def _session(
    transcript: Transcript, requests: Sequence[ReplayedRequest], cost: SessionCost
) -> Record:
    applied = [a for r in requests for a in r.applied]
    input_tokens = cost.input_tokens
    return {
        "transcript_id": transcript.id,
        "corpus": transcript.corpus,
        "source": transcript.source,
        "requests": len(requests),
        "tool_outputs": len(transcript.tool_outputs),
        "tool_output_bytes": sum(m.size_bytes for m in transcript.tool_outputs),
        "large_outputs": sum(m.size_bytes >= LARGE_OUTPUT_BYTES for m in transcript.tool_outputs),
        "message_bytes": sum(
            utf8_len(m.content or "") + sum(utf8_len(c.arguments) for c in m.tool_calls)
            for m in transcript.messages
        ),
        "input_tokens": input_tokens,
        "cached_tokens": cost.cached_tokens,
        "output_tokens": sum(r.output_tokens for r in cost.requests),
        "cost_usd": cost.cost_usd,
        "bytes_removed": sum(r.removed_bytes for r in requests),
        "applications_new": sum(r.outputs_new for r in requests),
        "applications_reused": sum(r.outputs_reused for r in requests),
        "outputs_compacted": len({a.output_index for a in applied if a.rendering.changed}),
        "cache_hit_share": cost.cached_tokens / input_tokens if input_tokens else None,
    }


def estimate_tokens_of(n_bytes: int) -> int:
    """The byte estimator's tokens for `n_bytes` UTF-8 bytes (ceil of a quarter)."""
    return -(-n_bytes // 4)


def _decisions(
    columns: dict[str, MutableSequence[Any]],
    transcript: Transcript,
    requests: Sequence[ReplayedRequest],
    gate: GateLog,
) -> None:
    """Appends to `columns` one decision per request on which an output's shown text differs
    from the request before (its first exposure included), or on which the economic gate was
    asked about it."""
    append = [(columns[c.name].append, c.name) for c in DECISIONS.columns]
    shown: dict[int, str] = {}
    for request in requests:
        cached_prefix = requests[request.index - 1].input_tokens if request.index else 0
        for a in request.applied:
            first_exposure = a.output_index not in shown
            gated = gate.decisions.get((a.output_index, request.index))
            if shown.get(a.output_index) == a.rendering.text and gated is None:
                continue
            shown[a.output_index] = a.rendering.text
            record: Record = {
                "transcript_id": transcript.id,
                "output_index": a.output_index,
                "request_index": request.index,
                "tool_name": a.tool_name,
                "mode": a.rendering.mode,
                "reason": a.rendering.reason,
                "detail": a.rendering.detail,
                "original_bytes": a.original_bytes,
                "shown_bytes": utf8_len(a.rendering.text),
                "original_tokens": estimate_tokens_of(a.original_bytes),
                "shown_tokens": estimate_tokens(a.rendering.text),
                # the span a rewrite here invalidates: the previous request's tokens (its
                # cached prefix) after the output, never this request's new tail; on its
                # first exposure nothing is cached yet, so nothing is rewritten
                "rewritten_tokens": 0
                if first_exposure
                else max(0, cached_prefix - a.position_tokens),
                "new": a.new,
                "later_requests": len(requests) - request.index - 1,
                "gate_approved": None,
                "gate_reason": None,
                "gate_assumed_requests": None,
                "gate_net_usd": None,
                "gate_would_flip": None,
                "gate_regret_usd": None,
                "gate_batch_outputs": None,
            }
            if gated is not None:
                decision, later = gated
                hindsight = regret(decision, later)
                record.update(
                    gate_approved=decision.approved,
                    gate_reason=decision.reason,
                    gate_assumed_requests=decision.inputs.future_requests,
                    gate_net_usd=decision.net_usd,
                    gate_would_flip=hindsight.would_flip,
                    gate_regret_usd=hindsight.regret_usd,
                    gate_batch_outputs=gate.batch_sizes[(a.output_index, request.index)],
                )
            for add, name in append:
                add(record[name])
