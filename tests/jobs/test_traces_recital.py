"""Recital verdicts per (configuration, shape): recited against what the prompt held."""

from __future__ import annotations

import polars as pl

from jobs.traces.recital import recital_verdicts
from jobs.traces.report_visibility import recital_summary


def recitals(recited: list[bool | None], in_live: list[bool | None], error: str | None = None):
    n = len(recited)
    return pl.DataFrame(
        {
            "config_id": ["c"] * n,
            "shape": ["tool1_open/x"] * n,
            "structure": ["tool1_open"] * n,
            "dialect": ["reasoning_content"] * n,
            "content_form": ["empty"] * n,
            "args_form": ["string"] * n,
            "question_in": ["tool_result"] * n,
            "in_rendered_offline": [True] * n,
            "in_rendered_live": in_live,
            "recited": recited,
            "error": [error] * n,
        },
        schema_overrides={"in_rendered_live": pl.Boolean, "recited": pl.Boolean},
    )


def test_a_model_that_recites_nothing_in_its_prompt_is_recited_none() -> None:
    verdict = recital_verdicts(recitals([False, False, False], [True, True, True])).row(
        0, named=True
    )
    assert verdict["verdict"] == "recited_none" and verdict["in_prompt"] == 3
    assert verdict["in_prompt_not_recited"] == 3 and verdict["recited_share"] == 0.0


def test_the_live_render_is_the_prompt_read_where_the_server_rendered() -> None:
    verdict = recital_verdicts(recitals([True, False], [True, False])).row(0, named=True)
    assert verdict["in_prompt"] == 1  # offline said both; the live server kept one
    assert verdict["verdict"] == "recited_some" and verdict["recited_not_in_prompt"] == 0


def test_without_a_live_render_the_offline_render_is_read() -> None:
    verdict = recital_verdicts(recitals([True], [None])).row(0, named=True)
    assert verdict["in_prompt"] == 1 and verdict["live_rendered"] is False
    assert verdict["verdict"] == "recited_all" and verdict["small_sample"] is True


def test_a_rejected_request_is_not_a_failure_to_recite() -> None:
    verdict = recital_verdicts(recitals([None, None], [True, True], "rejected:400")).row(
        0, named=True
    )
    assert verdict["verdict"] == "rejected" and verdict["rejected"] == 2
    assert verdict["graded"] == 0 and verdict["recited_share"] is None


def _verdicts(recited: list[bool], in_prompt: list[bool]) -> pl.DataFrame:
    return recital_verdicts(recitals(list(recited), list(in_prompt)))


def test_the_report_says_almost_nothing_only_when_secrets_in_the_prompt_went_unrecited() -> None:
    silent = recital_summary(_verdicts([False] * 5, [True] * 5))
    assert "recite almost nothing" in silent and "recited 0 of 5 graded" in silent
    chatty = recital_summary(_verdicts([True] * 5, [True] * 5))
    assert "almost nothing" not in chatty


def test_with_nothing_in_any_prompt_the_recital_reads_the_template() -> None:
    text = recital_summary(_verdicts([False] * 3, [False] * 3))
    assert "No secret reached a rendered prompt" in text and "almost nothing" not in text
