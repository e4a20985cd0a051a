"""Part 1's jobs: the shipped templates' classes, each endpoint's per renderer, disagreements."""

from __future__ import annotations

import polars as pl
import pytest

from jobs.traces.matrix import (
    ENDPOINT,
    SHIPPED,
    render_disagreements,
    shipped_matrix,
    template_classes,
    visibility_cells,
)
from jobs.traces.report_visibility import disagreement_kinds
from tests.jobs.traces_rundir import ALWAYS, probes, row
from tests.traces.templates import KIMI, QWEN3, R2E_PRESERVE, shipped


@pytest.fixture(scope="module")
def matrix() -> pl.DataFrame:
    return shipped_matrix({n: shipped()[n] for n in (QWEN3, KIMI, R2E_PRESERVE)})


def _probes() -> pl.DataFrame:
    same = probes(row("local-a", "visibility"), QWEN3, shipped()[QWEN3])
    other = probes(row("local-b", "visibility"), KIMI, ALWAYS)
    frame = pl.DataFrame(same + other)
    config = pl.col("row_id").str.split("/").list.first().alias("config_id")
    return frame.with_columns(config)


def _class(classes: pl.DataFrame, **where: str) -> dict[str, object]:
    chosen = classes
    for column, value in where.items():
        chosen = chosen.filter(pl.col(column) == value)
    assert chosen.height == 1, where
    return chosen.row(0, named=True)


def test_qwen3_is_after_last_user_and_kimi_until_plain_reply(matrix: pl.DataFrame) -> None:
    classes = template_classes(matrix, _probes().clear())
    assert _class(classes, template=QWEN3)["visibility"] == "after_last_user"
    assert _class(classes, template=KIMI)["visibility"] == "until_plain_reply"
    assert set(classes["source"]) == {SHIPPED}


def test_r2e_preserve_thinking_drops_tool_calls_and_the_others_do_not(
    matrix: pl.DataFrame,
) -> None:
    classes = template_classes(matrix, _probes().clear())
    assert _class(classes, template=R2E_PRESERVE)["tool_calls_dropped"] is True
    assert _class(classes, template=QWEN3)["tool_calls_dropped"] is False


def test_the_matrix_keeps_every_record_including_crashes(matrix: pl.DataFrame) -> None:
    assert matrix.filter(pl.col("template") == QWEN3)["rendered"].to_list().count(False) > 0
    assert set(matrix["template"]) == {QWEN3, KIMI, R2E_PRESERVE}


def test_each_endpoint_is_classed_per_renderer_and_a_differing_server_shows() -> None:
    frame = _probes()
    classes = template_classes(shipped_matrix(None), frame)
    assert classes.height == 4 and set(classes["source"]) == {ENDPOINT}
    faithful = classes.filter(pl.col("config_id") == "local-a")
    assert set(faithful["visibility"]) == {"after_last_user"}
    assert _class(classes, config_id="local-b", renderer="jinja2-hf")["visibility"] == (
        "until_plain_reply"
    )
    assert _class(classes, config_id="local-b", renderer="llama-server")["visibility"] == "always"


def test_disagreements_are_only_where_the_renderers_differ() -> None:
    differ, agree = render_disagreements(_probes())
    assert set(differ["config_id"]) == {"local-b"}
    assert differ.filter(pl.col("in_rendered") == pl.col("baseline_in_rendered")).height == 0
    faithful = agree.filter(pl.col("config_id") == "local-a").row(0, named=True)
    assert faithful["renders"] == 100 and faithful["identical"] > 0
    assert agree.filter(pl.col("config_id") == "local-b")["identical"].to_list() == [0]


def test_a_heatmap_cell_is_the_share_of_secrets_in_the_prompt(matrix: pl.DataFrame) -> None:
    classes = template_classes(matrix, _probes().clear())
    cells = visibility_cells(matrix, _probes().clear(), classes)

    def share(template: str, structure: str) -> object:
        chosen = cells.filter((pl.col("template") == template) & (pl.col("structure") == structure))
        return chosen["share"][0]

    assert share(QWEN3, "tool1_open") == 1.0 and share(QWEN3, "tool1_user") == 0.0
    assert share(KIMI, "tool1_user") == 1.0 and share(KIMI, "plain_user") == 0.0
    assert cells.filter(pl.col("template") == QWEN3)["secrets"].min() > 0  # type: ignore[operator]


def test_disagreements_are_summarised_by_kind_per_configuration() -> None:
    differ, _ = render_disagreements(_probes())
    assert disagreement_kinds(differ) == [
        f"- local-b: only the server's prompt kept the secret on "
        f"{differ['shape'].n_unique()} shapes ({differ.height} secrets)."
    ]
