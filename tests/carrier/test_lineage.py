"""Fact lineage (pipeline/carrier/lineage.py): where each graded value was held and lost."""

from __future__ import annotations

from pipeline.carrier.lineage import FoldText, GradedValue, chunk_indices, lineage, lost_at

PORT = GradedValue("ingress port", "port", "23857", "fabrication")
PATH = GradedValue("state path", "path", "/srv/x.lock", "passed")
LATE = GradedValue("shard count", "count", "19 shards", "missing")


def _folds(*texts: str, chunks: tuple[tuple[int, ...], ...] = ()) -> list[FoldText]:
    return [FoldText(i, text, chunks[i] if chunks else (i,)) for i, text in enumerate(texts)]


FOLDS = _folds(
    "ingress port: 23857",
    "ingress port: 23857\nstate path: /srv/x.lock",
    "state path: /srv/x.lock",
    "state path: /srv/x.lock; 19 shards",
)


def test_a_value_present_at_folds_0_and_1_is_first_lost_at_fold_2() -> None:
    (port,) = lineage([PORT], FOLDS, {"23857": 0})
    assert port.present_at == (0, 1)
    assert [s.state for s in port.states] == ["present", "present", "lost", "lost"]
    assert port.first_lost == 2
    assert port.in_final is False and not port.never_carried and not port.regained
    assert port.outcome == "fabrication"


def test_a_value_is_not_lost_before_the_fold_that_folds_its_chunk() -> None:
    path, late = lineage([PATH, LATE], FOLDS, {"/srv/x.lock": 1, "19 shards": 3})
    assert [s.state for s in path.states] == ["absent", "present", "present", "present"]
    assert path.first_lost is None and path.in_final is True
    assert [s.state for s in late.states] == ["absent", "absent", "absent", "present"]


def test_without_the_planted_chunk_a_value_is_lost_only_after_it_was_held() -> None:
    port, path = lineage([PORT, PATH], FOLDS)
    assert port.first_lost == 2
    assert path.first_lost is None and path.states[0].state == "absent"


def test_a_value_never_held_is_lost_at_the_fold_of_its_chunk_or_never_carried() -> None:
    missing = GradedValue("zone", "dns_zone", "corp.example.net")
    (known,) = lineage([missing], FOLDS, {"corp.example.net": 1})
    assert known.never_carried and known.first_lost == 1
    assert [s.state for s in known.states] == ["absent", "lost", "lost", "lost"]
    (unknown,) = lineage([missing], FOLDS)
    assert unknown.never_carried and unknown.first_lost is None
    assert {s.state for s in unknown.states} == {"absent"}


def test_an_unusable_fold_keeps_its_chunk_pending_so_the_value_is_not_yet_due() -> None:
    folds = [
        FoldText(0, "nothing yet", (0,)),
        FoldText(1, "nothing yet", (1,), usable=False),
        FoldText(2, "the port is 23857", (1, 2)),
    ]
    (port,) = lineage([PORT], folds, {"23857": 1})
    assert [s.state for s in port.states] == ["absent", "absent", "present"]
    assert port.first_lost is None


def test_presence_is_the_graders_whole_token_rule() -> None:
    (port,) = lineage([PORT], _folds("port 238571", "host:23857", "(23857)."))
    assert port.present_at == (2,)


def test_a_value_held_again_after_it_was_lost_keeps_its_first_lost_fold() -> None:
    (port,) = lineage([PORT], _folds("23857", "", "23857"))
    assert port.first_lost == 1 and port.regained and port.in_final is True


def test_lost_at_groups_the_values_by_the_fold_that_first_lost_them() -> None:
    lines = lineage([PORT, PATH, LATE], FOLDS, {"23857": 0, "/srv/x.lock": 1, "19 shards": 3})
    assert {fold: [line.label for line in found] for fold, found in lost_at(lines).items()} == {
        2: ["ingress port"]
    }


def test_folds_are_read_in_fold_order_and_chunks_parse_from_the_table() -> None:
    (port,) = lineage([PORT], list(reversed(FOLDS)), {"23857": 0})
    assert port.first_lost == 2
    assert chunk_indices("1,2") == (1, 2) and chunk_indices(None) == ()
    (empty,) = lineage([PORT], [])
    assert empty.states == () and empty.in_final is None
