"""The rule modes: deterministic, keyword and model, to torana-plugins' behaviour."""

from __future__ import annotations

import hashlib

import pytest

from pipeline.toolout.policies import (
    ModelSummaries,
    OutputView,
    Rule,
    RulePolicy,
    deterministic_replacement,
    keyword_extract,
    worthwhile,
)
from pipeline.toolout.policies.modes import DEFAULT_RERUN, MARKER, truncate_head_tail

GREP_LINE = "lib/parser/tokens.py:{i}: def scan_{i}(self, buffer): return self.lexer.next()"


def grep_output(lines: int = 120, hit_every: int = 10) -> str:
    rows = [GREP_LINE.format(i=i) for i in range(lines)]
    for i in range(0, lines, hit_every):
        rows[i] = f"lib/cache/store.py:{i}: class PrefixCache: the cache keeps hits"
    return "\n".join(rows)


def view(content: str, *, exposures: int = 0, tool: str = "grep", **kw: object) -> OutputView:
    fields: dict[str, object] = {
        "tool_name": tool,
        "arguments": '{"pattern": "PrefixCache"}',
        "content": content,
        "output_index": 0,
        "first_request": 1,
        "request_index": 1 + exposures,
        "exposures": exposures,
        "later_outputs": exposures,
        "intent": "Where is the PrefixCache class defined?",
        "previous": None if exposures == 0 else content,
    }
    fields.update(kw)
    return OutputView(**fields)  # type: ignore[arg-type]


def policy(mode: str, **rule: object) -> RulePolicy:
    return RulePolicy("t", (Rule("*", mode, **rule),))  # type: ignore[arg-type]


# -- worthwhileness: the known answers -----------------------------------------------


@pytest.mark.parametrize(
    ("original", "result", "applied"),
    [(2000, 1000, False), (2001, 1000, True), (10_000, 4999, True), (10_000, 5000, False)],
)
def test_keyword_worthwhileness_known_answers(original: int, result: int, applied: bool) -> None:
    assert worthwhile(original, result) is applied


# -- deterministic ---------------------------------------------------------------------------


def test_deterministic_block_keeps_768_byte_head_and_tail_with_size_and_sha() -> None:
    content = "".join(f"line {i:05d} of a long log\n" for i in range(400))
    block = deterministic_replacement("web_search", '{"q": "x"}', content, "")
    data = content.encode()
    assert block.startswith(MARKER + "\nmode: deterministic\ntool: web_search\n")
    assert f"original_bytes: {len(data)}\n" in block
    assert f"sha256: {hashlib.sha256(data).hexdigest()}\n" in block
    assert "retained_bytes: 1536\n" in block
    assert f"omitted_bytes: {len(data) - 1536}\n" in block
    assert f"rerun: {DEFAULT_RERUN}\n" in block
    assert "--- retained head ---\n" + content[:768] + "\n--- retained tail ---\n" in block
    assert block.endswith(content[-768:] + "\n[/torana-tool-output]")


def test_deterministic_cuts_fall_on_utf8_boundaries() -> None:
    content = "€" * 2000  # 3 bytes each: 768 is a character boundary, 767 and 769 are not
    block = deterministic_replacement("t", "", "x" + content, "again")
    head = block.split("--- retained head ---\n")[1].split("\n--- retained tail ---")[0]
    assert head == "x" + "€" * 255  # 766 bytes: backs off to the last whole character
    assert "retained_bytes: 1534\n" in block
    assert "rerun: again\n" in block


def test_deterministic_output_is_identical_across_calls_and_requests() -> None:
    content = grep_output(300)
    p = policy("deterministic", first_pass=True, rerun="Repeat the search.")
    first = p.render(view(content))
    texts = {p.render(view(content, exposures=k, previous=first.text)).text for k in range(1, 6)}
    assert texts == {first.text}
    assert first.mode == "deterministic"
    assert first.reason == "transformed"
    assert p.render(view(content, exposures=3, previous=first.text)).reason == "reused"


def test_first_pass_deterministic_compacts_on_first_exposure() -> None:
    rendering = policy("deterministic", first_pass=True).render(view(grep_output(300)))
    assert rendering.changed
    assert rendering.mode == "deterministic"


def test_deterministic_without_first_pass_waits_one_exact_exposure() -> None:
    p = policy("deterministic")
    first = p.render(view(grep_output(300)))
    assert (first.mode, first.reason) == ("exact", "first_exposure")
    assert p.render(view(grep_output(300), exposures=1)).mode == "deterministic"


def test_deterministic_not_shorter_than_the_output_stays_exact() -> None:
    content = "y" * 2100  # 1,536 bytes retained; 512 bytes of arguments push the header over
    long_args = view(content, arguments="--pattern " + "z" * 600)
    rendering = policy("deterministic", first_pass=True).render(long_args)
    assert (rendering.mode, rendering.reason) == ("exact", "not_shorter")


# -- keyword ---------------------------------------------------------------------------------


def test_keyword_never_compacts_on_first_exposure() -> None:
    rendering = policy("keyword").render(view(grep_output()))
    assert (rendering.mode, rendering.reason) == ("exact", "first_exposure")


def test_keyword_keeps_matching_lines_with_two_lines_of_context_after_one_exposure() -> None:
    content = grep_output(120, hit_every=40)
    rendering = policy("keyword").render(view(content, exposures=1))
    assert rendering.mode == "keyword"
    kept = rendering.text.split("\n")
    lines = content.split("\n")
    expected = [lines[j] for j in (0, 1, 2, 38, 39, 40, 41, 42, 78, 79, 80, 81, 82)]
    assert kept == expected


def test_keyword_needs_more_than_fifty_lines() -> None:
    fifty = grep_output(50, hit_every=25)
    assert keyword_extract(fifty, "PrefixCache")[1] == "too_few_lines"
    fifty_one = grep_output(51, hit_every=25)
    assert keyword_extract(fifty_one, "PrefixCache")[0] != fifty_one


def test_keyword_stop_words_and_short_words_are_not_keywords() -> None:
    content = grep_output()
    assert keyword_extract(content, "what is the output of it")[1] == "no_keywords"
    assert keyword_extract(content, "zebra quokka")[1] == "no_matches"


def test_keyword_keeps_at_most_200_lines() -> None:
    content = grep_output(600, hit_every=1)
    text, _ = keyword_extract(content, "PrefixCache")
    assert len(text.split("\n")) <= 200


def test_keyword_result_is_capped_at_8000_bytes_with_a_notice() -> None:
    content = grep_output(600, hit_every=2)
    text, _ = keyword_extract(content, "PrefixCache")
    assert len(text.encode()) <= 8000
    assert "bytes truncated by Torana] ..." in text


def test_truncate_head_tail_states_the_exact_removed_bytes_and_keeps_utf8_valid() -> None:
    data = ("ä" * 5000).encode()  # 2 bytes a character: an odd budget half splits one
    cut = truncate_head_tail(data, 1001)
    assert len(cut) <= 1001
    head, rest = cut.split(b"\n\n... [")
    removed, tail = rest.split(b" bytes truncated by Torana] ...\n\n")
    assert len(head) + len(tail) + int(removed) == len(data)
    assert cut.decode("utf-8")


def test_keyword_not_worthwhile_stays_exact() -> None:
    content = grep_output(120, hit_every=2)  # half the lines match, plus context: most kept
    rendering = policy("keyword").render(view(content, exposures=1))
    assert (rendering.mode, rendering.reason) == ("exact", "not_worthwhile")


# -- model -----------------------------------------------------------------------------------


class Recorder:
    """A fake summariser and gate that record their calls."""

    def __init__(self, summary: str | None = "PrefixCache: lib/cache/store.py", **verdicts: bool):
        self.summary = summary
        self.verdicts = {"preflight": True, "final": True, **verdicts}
        self.summaries = 0
        self.gates: list[int] = []

    def summarise(self, v: OutputView) -> str | None:
        self.summaries += 1
        return self.summary

    def gate(self, v: OutputView, candidate_bytes: int) -> tuple[bool, str]:
        self.gates.append(candidate_bytes)
        stage = "preflight" if candidate_bytes == 0 else "final"
        return self.verdicts[stage], f"{stage} says {self.verdicts[stage]}"

    def hooks(self) -> ModelSummaries:
        return ModelSummaries(self.summarise, self.gate)


def model_policy(summaries: ModelSummaries) -> RulePolicy:
    return RulePolicy("m", (Rule("grep*", "model"),), summaries=summaries)


def test_model_never_compacts_on_first_exposure() -> None:
    fake = Recorder()
    rendering = model_policy(fake.hooks()).render(view(grep_output()))
    assert (rendering.mode, rendering.reason) == ("exact", "first_exposure")
    assert fake.summaries == 0
    assert fake.gates == []


def test_model_without_a_gate_stays_exact_gate_closed() -> None:
    fake = Recorder()
    rendering = model_policy(ModelSummaries(fake.summarise, None)).render(
        view(grep_output(), exposures=1)
    )
    assert rendering.reason == "gate_closed"
    assert fake.summaries == 0


def test_model_without_a_summariser_stays_exact_no_summariser() -> None:
    fake = Recorder()
    rendering = model_policy(ModelSummaries(None, fake.gate)).render(
        view(grep_output(), exposures=1)
    )
    assert rendering.reason == "no_summariser"
    assert fake.gates == [0]


def test_model_preflight_rejection_makes_no_summariser_call() -> None:
    fake = Recorder(preflight=False)
    rendering = model_policy(fake.hooks()).render(view(grep_output(), exposures=1))
    assert rendering.reason == "preflight_rejected"
    assert "preflight says False" in rendering.detail
    assert fake.summaries == 0


def test_model_final_gate_sees_the_summary_size_and_can_reject() -> None:
    fake = Recorder(final=False)
    rendering = model_policy(fake.hooks()).render(view(grep_output(), exposures=1))
    assert rendering.reason == "gate_rejected"
    assert fake.gates == [0, len(fake.summary or "")]


def test_model_summary_not_shorter_is_not_applied() -> None:
    content = grep_output()
    fake = Recorder(summary=content + "!")
    rendering = model_policy(fake.hooks()).render(view(content, exposures=1))
    assert rendering.reason == "not_shorter"


def test_model_approved_summary_is_applied_then_reused_without_a_new_call() -> None:
    fake = Recorder()
    p = model_policy(fake.hooks())
    content = grep_output()
    first = p.render(view(content, exposures=1))
    assert (first.mode, first.reason, first.text) == ("model", "transformed", fake.summary)
    again = p.render(view(content, exposures=2, previous=first.text))
    assert (again.text, again.reason) == (first.text, "reused")
    assert fake.summaries == 1


def test_source_mode_behaves_as_exact() -> None:
    rendering = policy("source").render(view(grep_output(), exposures=3))
    assert (rendering.mode, rendering.reason) == ("exact", "source_is_exact")
