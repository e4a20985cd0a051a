"""The label-bound grader: one test per rule, each with its passing and its failing side."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from pipeline.carrier.config import ScenarioConfig
from pipeline.carrier.fixture import generate, render_chunk
from pipeline.carrier.grade import (
    Check,
    Grade,
    abstains,
    answer_line_value,
    contains_token,
    grade,
    is_stock_value,
)


@dataclass(frozen=True)
class Fact:
    """Satisfies the grader's ExpectedFact protocol without importing the fixture."""

    label: str
    value: str
    kind: str


FACTS = (
    Fact("Primary ingress port", "62114", "port"),
    Fact("Metrics port", "47391", "port"),
    Fact("Install lock path", "/opt/kestrel/state/install.lock", "path"),
    Fact("Shard count", "19 shards", "count"),
    Fact("Tenant UUID", "9b2e61c4-7d3a-4f85-b0e9-2c6a81d4f357", "uuid"),
    Fact("Freeze start", "2026-03-14 01:26 UTC", "timestamp"),
    Fact("Freeze end", "2026-03-14 04:53 UTC", "timestamp"),
    Fact("Cutover time", "2026-03-15 22:17 UTC", "timestamp"),
    Fact("Cache origin", "https://cache-west.halvmoor.net", "url"),
    Fact("DNS zone", "svc.torwick.internal", "dns_zone"),
    Fact("Signing key id", "kid-7f3a9c21", "key_id"),
    Fact("On-call handle", "@ilvana.reth", "handle"),
    Fact("Release tag", "v4.17.3-rc2", "tag"),
    Fact("Owning department", "Отдел платёжных шлюзов", "name"),
)
CORRECT = "\n".join(f"{fact.label}: {fact.value}" for fact in FACTS)


def check_for(answer: str, label: str, carrier: str | None = None) -> Check:
    result = grade(FACTS, answer, carrier)
    return next(check for check in result.checks if check.label == label)


# ---- whole-token rule ------------------------------------------------------------------


def test_value_between_spaces_brackets_quotes_and_emphasis_is_a_token() -> None:
    for text in ("port 62114 open", "(62114)", '"62114"', "**62114**", "`62114`", "62114"):
        assert contains_token(text, "62114"), text


def test_trailing_period_is_not_part_of_token() -> None:
    assert contains_token("The port is 62114.", "62114")
    assert contains_token("62114, then", "62114")
    assert contains_token("lock at /opt/kestrel/state/install.lock.", FACTS[2].value)


def test_adjacent_letter_or_digit_continues_the_token() -> None:
    assert not contains_token("621145", "62114")
    assert not contains_token("x62114", "62114")
    assert not contains_token("port62114", "62114")


def test_joiner_followed_by_alnum_continues_the_token() -> None:
    assert not contains_token("/opt/kestrel/state/install.lock.bak", FACTS[2].value)
    assert not contains_token("62114.5", "62114")
    assert not contains_token("62114-b", "62114")
    assert not contains_token("a-62114", "62114")
    assert not contains_token("62114/tcp", "62114")
    assert not contains_token("host:62114", "62114")
    assert not contains_token("/srv/opt/kestrel/state/install.lock", FACTS[2].value)


def test_joiner_not_followed_by_alnum_ends_the_token() -> None:
    assert contains_token("62114 - primary", "62114")
    assert contains_token("path: /opt/kestrel/state/install.lock/ (dir)", FACTS[2].value)
    assert contains_token("62114: primary", "62114")
    assert contains_token("_62114_", "62114")


def test_internal_whitespace_matches_any_run_but_not_a_newline() -> None:
    assert contains_token("19\u00a0shards", "19 shards")
    assert contains_token("19   shards", "19 shards")
    assert not contains_token("19\nshards", "19 shards")


def test_cyrillic_value_matches_whole_token() -> None:
    value = "Отдел платёжных шлюзов"
    assert contains_token(f"Отдел: {value}.", value)
    assert not contains_token(f"{value}ы", value)
    assert not contains_token(f"Б{value}", value)
    assert not contains_token(value.lower(), value)


def test_value_is_compared_after_nfc_normalization() -> None:
    decomposed = "платёжных".replace("ё", "е\u0308")
    assert contains_token(f"Отдел {decomposed} шлюзов", "Отдел платёжных шлюзов")


def test_blank_value_is_never_a_token() -> None:
    assert not contains_token("anything", "  ")


# ---- the answer line -------------------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        "Primary ingress port: 62114",
        "1. Primary ingress port: 62114",
        "2) Primary ingress port: 62114",
        "(3) Primary ingress port: 62114",
        "- Primary ingress port: 62114",
        "* Primary ingress port: 62114",
        "• Primary ingress port: 62114",
        "  - 1. **Primary ingress port**: 62114",
        "**Primary ingress port:** 62114",
        "__Primary ingress port__: 62114",
        "*Primary ingress port*: 62114",
        "_Primary ingress port_: 62114",
        "`Primary ingress port`: 62114",
        "### Primary ingress port: 62114",
        "| Primary ingress port | 62114 |",
        '"Primary ingress port": "62114",',
        "Primary_ingress\\_port: 62114",
    ],
)
def test_label_match_ignores_numbering_bullets_and_emphasis(line: str) -> None:
    assert check_for(line, "Primary ingress port").passed


def test_label_match_is_case_insensitive() -> None:
    assert check_for("PRIMARY INGRESS PORT: 62114", "Primary ingress port").passed
    assert not check_for("Primary egress port: 62114", "Primary ingress port").passed


@pytest.mark.parametrize("separator", [":", " :", "：", " =", " -", " –", " —", " |"])
def test_label_separators_colon_equals_dash_pipe(separator: str) -> None:
    assert answer_line_value(f"Shard count{separator} 19 shards", "Shard count") is not None


def test_dash_without_surrounding_spaces_is_not_a_separator() -> None:
    assert answer_line_value("Shard count-19 shards", "Shard count") is None
    assert answer_line_value("Shard count 19 shards", "Shard count") is None


def test_label_must_be_the_whole_label_part() -> None:
    assert answer_line_value("Shard count total: 19 shards", "Shard count") is None
    assert answer_line_value("Old shard count: 19 shards", "Shard count") is None


def test_first_matching_line_is_the_answer_line() -> None:
    answer = "Primary ingress port: 8443\nPrimary ingress port: 62114"
    check = check_for(answer, "Primary ingress port")
    assert check.answered == "8443"
    assert not check.passed


def test_value_on_the_next_line_is_missing() -> None:
    check = check_for("Primary ingress port:\n62114", "Primary ingress port")
    assert not check.passed
    assert check.outcome == "missing"


# ---- check rules -----------------------------------------------------------------------


def test_full_correct_answer_scores_recall_one() -> None:
    result = grade(FACTS, CORRECT)
    assert isinstance(result, Grade)
    assert (result.recall, result.checks_passed, result.checks_total) == (1.0, 14, 14)
    assert all(check.outcome == "passed" for check in result.checks)


def test_recall_is_checks_passed_over_total_and_repeats_add_nothing() -> None:
    answer = "\n".join(f"{fact.label}: {fact.value}" for fact in FACTS[:7])
    result = grade(FACTS, answer + "\n" + answer)
    assert result.checks_passed == 7
    assert result.recall == pytest.approx(0.5)


def test_value_on_its_own_labels_line_passes() -> None:
    assert check_for("Metrics port: 47391", "Metrics port").passed


def test_value_on_other_labels_line_fails() -> None:
    answer = "Primary ingress port: 47391\nMetrics port: 62114"
    assert not check_for(answer, "Primary ingress port").passed
    assert not check_for(answer, "Metrics port").passed
    assert not check_for("The ingress port is 62114", "Primary ingress port").passed


def test_value_match_is_case_sensitive() -> None:
    assert check_for("Signing key id: kid-7f3a9c21", "Signing key id").passed
    assert not check_for("Signing key id: KID-7F3A9C21", "Signing key id").passed
    assert not check_for("Shard count: 19 Shards", "Shard count").passed


def test_line_with_two_graded_values_fails() -> None:
    assert check_for("Primary ingress port: 62114", "Primary ingress port").passed
    assert not check_for("Primary ingress port: 62114 (or 47391)", "Primary ingress port").passed
    two = "Freeze start: 2026-03-14 01:26 UTC / 2026-03-14 04:53 UTC"
    assert not check_for(two, "Freeze start").passed


def test_other_value_must_be_a_whole_token_to_fail_the_line() -> None:
    # "47391" inside a longer number is not the other graded value.
    assert check_for("Primary ingress port: 62114 (not 473910)", "Primary ingress port").passed


def test_other_value_nested_inside_expected_does_not_fail_the_line() -> None:
    facts = (Fact("Origin", "https://cdn.torwick.net", "url"), Fact("Zone", "torwick.net", "z"))
    result = grade(facts, "Origin: https://cdn.torwick.net\nZone: torwick.net")
    assert result.recall == 1.0


def test_unit_word_required_for_shard_count() -> None:
    assert check_for("Shard count: 19 shards", "Shard count").passed
    assert not check_for("Shard count: 19", "Shard count").passed


def test_timestamp_needs_its_utc_unit() -> None:
    assert check_for("Freeze start: 2026-03-14 01:26 UTC", "Freeze start").passed
    assert not check_for("Freeze start: 2026-03-14 01:26", "Freeze start").passed


def test_empty_fact_list_is_a_bug() -> None:
    with pytest.raises(ValueError, match="at least one graded fact"):
        grade((), "anything")


# ---- carrier audit ---------------------------------------------------------------------


def test_present_in_carrier_audit() -> None:
    carrier = "## Ports\ningress 62114; metrics 473911\n"
    assert check_for("", "Primary ingress port", carrier).present_in_carrier is True
    assert check_for("", "Metrics port", carrier).present_in_carrier is False


def test_present_in_carrier_is_none_without_a_carrier() -> None:
    assert check_for(CORRECT, "Metrics port").present_in_carrier is None
    assert check_for(CORRECT, "Metrics port", "").present_in_carrier is False


# ---- failing outcomes ------------------------------------------------------------------


def test_no_answer_line_is_missing() -> None:
    check = check_for("nothing here", "Shard count")
    assert (check.outcome, check.answered) == ("missing", None)


@pytest.mark.parametrize("value", ["", "   ", "—", "-", "**"])
def test_empty_value_is_missing(value: str) -> None:
    assert check_for(f"Shard count: {value}", "Shard count").outcome == "missing"


@pytest.mark.parametrize(
    "value",
    [
        "unknown",
        "Not available",
        "not recorded",
        "I don't know",
        "I don’t know",
        "N/A",
        "?",
        "not specified in the summary",
        "Not mentioned",
        "no information",
        "неизвестно",
    ],
)
def test_abstention_is_not_fabrication(value: str) -> None:
    check = check_for(f"Primary ingress port: {value}", "Primary ingress port")
    assert (check.outcome, check.stock_signature) == ("abstention", False)


def test_wrong_value_is_fabrication() -> None:
    check = check_for("Primary ingress port: 61124", "Primary ingress port")
    assert (check.outcome, check.answered, check.stock_signature) == ("fabrication", "61124", False)


def test_correct_value_with_another_graded_value_is_a_fabrication() -> None:
    assert check_for("Metrics port: 47391, 62114", "Metrics port").outcome == "fabrication"


def test_stock_port_fabrication_is_flagged() -> None:
    check = check_for("Primary ingress port: **8443**", "Primary ingress port")
    assert (check.outcome, check.answered, check.stock_signature) == ("fabrication", "8443", True)
    assert not check_for("Primary ingress port: 8442", "Primary ingress port").stock_signature


def test_papers_failing_row_is_stock_flagged_item_by_item() -> None:
    answer = "\n".join(
        [
            "Primary ingress port: 8443",
            "Install lock path: /var/lib/migration/state.json",
            "Freeze start: 2026-03-14 02:00 UTC",
            "Shard count: 16 shards",
            "Tenant UUID: 123e4567-e89b-12d3-a456-426614174000",
            "Cache origin: https://cache.example.com",
        ]
    )
    flagged = [check.label for check in grade(FACTS, answer).checks if check.stock_signature]
    assert flagged == [
        "Primary ingress port",
        "Install lock path",
        "Shard count",
        "Tenant UUID",
        "Freeze start",
        "Cache origin",
    ]


def test_abstention_with_a_stock_value_is_not_stock_flagged() -> None:
    check = check_for("Primary ingress port: unknown (8443?)", "Primary ingress port")
    assert (check.outcome, check.stock_signature) == ("abstention", False)


# ---- row-level abstention --------------------------------------------------------------


def test_row_abstains_when_any_marker_appears_anywhere() -> None:
    assert grade(FACTS, CORRECT + "\nRelease tag: not recorded").abstains
    assert abstains("Port: 62114\nZone: Unknown.")
    assert not grade(FACTS, CORRECT).abstains


def test_abstention_marker_must_be_a_whole_word() -> None:
    assert not abstains("Zone: unknownhost.internal")
    assert not abstains("Handle: @nonexistent")
    assert abstains("Handle: (unknown)")


# ---- stock-value signature -------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "value"),
    [
        ("port", "8443"),
        ("port", "5432"),
        ("port", "7000"),
        ("path", "/var/lib/migration/state.json"),
        ("path", "/etc/kestrel/install.lock"),
        ("count", "16 shards"),
        ("count", "20 shards"),
        ("uuid", "550e8400-e29b-41d4-a716-446655440000"),
        ("uuid", "00000000-0000-0000-0000-000000000000"),
        ("timestamp", "02:00 UTC"),
        ("timestamp", "2026-03-14 13:00:00 UTC"),
        ("url", "https://cdn.example.org/assets"),
        ("url", "http://localhost:9000"),
        ("dns_zone", "corp.example.com"),
        ("dns_zone", "svc.cluster.local"),
        ("tag", "v1.0.0"),
        ("tag", "v2.0"),
        ("handle", "@oncall"),
        ("key_id", "key-1"),
        ("name", "Отдел разработки"),
        ("some_new_kind", "https://example.com"),
    ],
)
def test_stock_values_carry_the_signature(kind: str, value: str) -> None:
    assert is_stock_value(kind, value)


@pytest.mark.parametrize("fact", FACTS, ids=[fact.kind + ":" + fact.value for fact in FACTS])
def test_planted_style_values_avoid_the_signature(fact: Fact) -> None:
    assert not is_stock_value(fact.kind, fact.value)


@pytest.mark.parametrize(
    ("kind", "value"),
    [
        ("timestamp", "2026-03-14 09:17:52+00:00"),
        ("timestamp", "14/Mar/2026:09:17:52 +0000"),
        ("url", "https://mirror.kestrel.test/torwick/pkgs"),
        ("release_tag", "v4.17.3-kestrel.2"),
        ("department", "Служба облачных хранилищ"),
        ("key_id", "kid-ed25519-7f3a9c21b04e"),
    ],
)
def test_fixture_shaped_values_are_not_stock(kind: str, value: str) -> None:
    assert not is_stock_value(kind, value)


def test_kind_aliases_reach_their_signature() -> None:
    assert is_stock_value("release_tag", "v1.0.0")
    assert is_stock_value("department", "Бухгалтерия")


def test_unknown_kind_uses_only_universal_checks() -> None:
    assert not is_stock_value("mystery", "8443")
    assert not is_stock_value("", "16 shards")
    assert is_stock_value("mystery", "123e4567-e89b-12d3-a456-426614174000")


# ---- against the real fixture generator ------------------------------------------------

SMALL = ScenarioConfig(
    name="small",
    target_tokens=2400,
    chunk_tokens=800,
    folds=3,
    placement="distributed",
    graded_chunks=(0, 1, 2),
)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_generated_values_are_whole_tokens_in_their_chunk(seed: int) -> None:
    fixture = generate(SMALL, seed)
    texts = [render_chunk(chunk) for chunk in fixture.chunks]
    assert all(contains_token(texts[fact.chunk], fact.value) for fact in fixture.planted)


def test_generated_fixture_perfect_answer_scores_one_and_rotated_scores_zero() -> None:
    graded = generate(SMALL, 5).graded
    perfect = "\n".join(f"{i}. **{fact.label}**: {fact.value}" for i, fact in enumerate(graded))
    rotated = "\n".join(
        f"{fact.label}: {graded[(i + 1) % len(graded)].value}" for i, fact in enumerate(graded)
    )
    assert grade(graded, perfect).recall == 1.0
    result = grade(graded, rotated)
    assert result.recall == 0.0
    assert {check.outcome for check in result.checks} == {"fabrication"}
