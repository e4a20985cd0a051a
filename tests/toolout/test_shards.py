"""Issue 20, P8b: offline units over shards of the corpus, whose tables add up to the corpus's."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from pipeline.config.schema import EndpointConfig
from pipeline.config.strict import ConfigError
from pipeline.studies.toolout import DEFINITION, CorpusFiles
from pipeline.study import Record, UnitContext, UnitSpec
from pipeline.sweep.plan import build_plan
from pipeline.toolout.shards import plan_shards
from pipeline.toolout.study import ToolOutStudy
from tests.golden.toolout_replay import endpoints
from tests.reliability.harness import SweepHarness

OFFLINE = endpoints()[0]


def test_shards_are_consecutive_within_the_budget_and_never_split_a_transcript() -> None:
    assert plan_shards([3, 4, 2, 9, 1, 1], 7) == ((0, 2), (2, 3), (3, 4), (4, 6))
    assert plan_shards([5], 1) == ((0, 1),)  # longer than the budget: a shard of its own
    assert plan_shards([], 10) == ()
    assert plan_shards([1] * 5, 100) == ((0, 5),)


def test_the_shipped_corpus_is_one_shard_by_default() -> None:
    study = DEFINITION.configure({"name": "toolout"})
    assert len(study.shards) == 1 and study.execution_groups([OFFLINE]) == 1


def test_shards_cover_the_corpus_once_in_order_and_read_only_their_files() -> None:
    study = DEFINITION.configure({"name": "toolout", "requests_per_unit": 300})
    corpus = study.transcripts
    assert isinstance(corpus, CorpusFiles)
    assert len(study.shards) == study.execution_groups([OFFLINE]) > 5
    ids = [[t.id for t in shard] for shard in study.shards]
    assert [i for shard in ids for i in shard] == [t.id for t in corpus]
    for shard, shard_ids in zip(study.shards, ids, strict=True):
        assert isinstance(shard, CorpusFiles)
        assert len(shard) == len(shard_ids) > 0
        assert sum(shard.requests) <= 300 or len(shard) == 1
        sources = {f.source for f in shard.files}  # the index of only the files it reads
        assert len(sources) < len(corpus.files)
    assert sum(len(s.files) for s in study.shards) < 2 * len(corpus.files)


def test_a_live_panel_plans_one_group_so_its_budget_sees_the_whole_corpus() -> None:
    study = DEFINITION.configure({"name": "toolout", "requests_per_unit": 300})
    live = EndpointConfig(**{**OFFLINE.__dict__, "base_url": "http://127.0.0.1:9/v1"})
    assert study.execution_groups([live]) == 1


def test_requests_per_unit_below_one_is_refused_in_one_line() -> None:
    with pytest.raises(ConfigError, match=r"study\.requests_per_unit"):
        DEFINITION.configure({"name": "toolout", "requests_per_unit": 0})


def test_the_plan_has_one_unit_per_shard_from_the_configs_group() -> None:
    specs = build_plan("run", [("c", "m", "f")], ["control", "exact"], 1, 4, "williams", groups=3)
    assert sorted({s.execution_group for s in specs}) == [4, 5, 6]
    assert len(specs) == 6 and len({s.row_id for s in specs}) == 6


def _tables(study: ToolOutStudy, arm: str, groups: Sequence[int]) -> dict[str, list[Record]]:
    runner = study.runner(OFFLINE)
    out: dict[str, list[Record]] = {"turns": [], "sessions": [], "decisions": []}
    for group in groups:
        spec = UnitSpec("r", OFFLINE.config_id, OFFLINE.model, OFFLINE.family, arm, group, 0, 0)
        result = asyncio.run(runner.run(spec, None, UnitContext(0, 0.0)))  # type: ignore[arg-type]
        assert result.outcome.valid
        for name, records in out.items():
            records += list(result.tables[name])
    return out


@pytest.mark.parametrize("arm", ["control", "model"])
def test_the_shards_tables_together_are_the_whole_corpus_units(arm: str) -> None:
    node = {"name": "toolout", "corpora": ["swe-agent"], "policies": ["control", "model"]}
    whole = DEFINITION.configure(node)
    sharded = DEFINITION.configure({**node, "requests_per_unit": 100})
    groups = sharded.execution_groups([OFFLINE])
    assert groups > 2
    # the groups start wherever the config's execution_group does: 7.. maps onto every shard
    together, alone = _tables(sharded, arm, range(7, 7 + groups)), _tables(whole, arm, [0])
    for name, records in alone.items():
        assert sorted(together[name], key=_key) == sorted(records, key=_key), name


def _key(record: Record) -> str:
    return json.dumps(record, sort_keys=True)


@pytest.mark.ray
@pytest.mark.slow
def test_a_sharded_sweep_plans_a_unit_per_shard_and_analyses_as_one(
    harness: SweepHarness, tmp_path: Path
) -> None:
    """The same corpus in one shard and in several: the plan and the manifest count a unit per
    (configuration, policy, shard), and every analysis table but the unit list is the same."""
    base = ["study=toolout", "study.corpora=[swe-agent]", "study.policies=[control,exact]"]
    base += ["study.oracle=false"]
    runs = {}
    for budget in (10_000, 150):
        overrides = [*base, f"study.requests_per_unit={budget}", f"out_dir={tmp_path}"]
        result = harness.run(overrides, timeout_s=300)
        assert result.returncode == 0, result.stderr[-3000:]
        assert result.run_dir is not None
        runs[budget] = result.run_dir
    shards = DEFINITION.configure(
        {"name": "toolout", "corpora": ["swe-agent"], "requests_per_unit": 150}
    ).shards
    plans = {b: pl.read_parquet(d / "plan.parquet") for b, d in runs.items()}
    assert plans[10_000].height == 5 * 2 and plans[150].height == 5 * 2 * len(shards) > 10
    counts = json.loads((runs[150] / "manifest.json").read_text(encoding="utf-8"))["counts"]
    assert counts["valid"] == plans[150].height, counts
    compared = 0
    for path in sorted((runs[10_000] / "analysis").glob("*.parquet")):
        one, many = pl.read_parquet(path), pl.read_parquet(runs[150] / "analysis" / path.name)
        if "row_id" in one.columns:
            continue
        keys = [c for c, t in one.schema.items() if not t.is_float()]
        assert_frame_equal(one.sort(keys), many.sort(keys), check_exact=False, rel_tol=1e-9)
        compared += 1
    assert compared >= 4


def test_the_offline_panel_keeps_one_unit_per_configuration_per_ray_call() -> None:
    """An offline unit is CPU-bound: a batch of several held every finished unit's records
    until the last returned (an actor peaked at 829 MB at corpus scale, 575-605 MB after)."""
    from pipeline.config.load import load
    from pipeline.endpoints.panels import materialize
    from pipeline.sweep.actors import batch_size
    from pipeline.sweep.execute import in_flight_cap

    configs = materialize(load(["study=toolout", "+panel=offline"])).configs
    assert configs and all(c.limits.concurrency == 1 for c in configs)
    assert {batch_size(in_flight_cap(c)) for c in configs} == {1}
