from __future__ import annotations

from pipeline.carrier.ledger import Ledger, extract, update


def test_shaped_values_are_extracted_verbatim() -> None:
    text = (
        "origin https://cache-4f.origin.internal:41233/v2 uuid "
        "3f9c2a1e-7b4d-4e21-9a3f-1c2d3e4f5a6b at 2026-03-14 01:26 UTC, path "
        "/opt/kestrel/state/install.lock, key kid-7f3a9c2e, tag v4.17.2-rc.3, @mira.volkova"
    )
    values = [e.value for e in extract(text)]
    assert values == [
        "https://cache-4f.origin.internal:41233/v2",
        "3f9c2a1e-7b4d-4e21-9a3f-1c2d3e4f5a6b",
        "2026-03-14 01:26 UTC",
        "/opt/kestrel/state/install.lock",
        "kid-7f3a9c2e",
        "v4.17.2-rc.3",
        "@mira.volkova",
    ]


def test_unshaped_facts_never_enter_the_ledger() -> None:
    values = [e.value for e in extract("reshard into 19 shards for Отдел сетевой телеметрии")]
    assert "19 shards" not in values and all("Отдел" not in v for v in values)


def test_ledger_deduplicates_and_respects_its_budget() -> None:
    msgs = [("tool", " ".join(f"port {20000 + i}" for i in range(200)))]
    ledger = update(Ledger(), msgs, budget_chars=300)
    assert ledger.chars <= 300 and ledger.dropped > 0
    again = update(ledger, [("tool", "port 20000")], budget_chars=300)
    assert again.entries == ledger.entries


def test_operator_and_assistant_values_come_before_tool_output() -> None:
    msgs = [("tool", "port 31111"), ("user", "use port 42222")]
    assert [e.value for e in update(Ledger(), msgs, 1000).entries] == ["42222", "31111"]


def test_ledger_is_deterministic() -> None:
    msgs = [("tool", "a /srv/x/y at 2026-01-02T03:04:05Z"), ("assistant", "kid-99aa11")]
    assert update(Ledger(), msgs, 500) == update(Ledger(), msgs, 500)
