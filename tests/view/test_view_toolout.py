"""The toolout unit page: the prefix-cache map and miss causes per request, the policy's
decision per tool output, the cost under each cache model, the gate's regret."""

from __future__ import annotations

from pathlib import Path

from pipeline.view import open_runs, pages
from pipeline.view.links import Links
from tests.view.rundirs import toolout_run


def test_toolout_unit_shows_cache_map_decisions_costs_and_regret(tmp_path: Path) -> None:
    (run,) = open_runs([toolout_run(tmp_path / "run")])
    html = str(pages.unit(run, Links(), "anthropic:c/model/g0/r0/a0", {}).content)
    assert '<code id="transcript">swe-agent/demo</code>' in html
    assert '<span class="cached" style="width: 30.00%"' in html  # 60 of 200 tokens
    assert '<span class="miss-rewrite" style="width: 20.00%"' in html
    assert "cold_start 100; rewrite 40" in html
    assert "<strong>keyword</strong> (transformed: rules[0] *) 120 of 900 bytes" in html
    assert "anthropic (anthropic:c)" in html and "openai (openai:g)" in html
    assert '<td class="num">0.04</td>' in html  # request 1 under the other cache model
    assert '<table id="gate"' in html and '<td class="num">0.25</td>' in html
    assert "no change" in html  # request 0 changed no output


def test_toolout_requests_show_time_since_the_first_the_gap_and_the_ttl_misses(
    tmp_path: Path,
) -> None:
    (run,) = open_runs([toolout_run(tmp_path / "run")])
    html = str(pages.unit(run, Links(), "anthropic:c/model/g0/r0/a0", {}).content)
    assert "1.746e+09" not in html  # the transcript's clock stays in a tooltip
    assert ">+0.0 s<" in html
    assert '+330 s<br><span class="gap">gap 330 s</span>' in html
    assert '<strong class="ttl-miss">TTL expired: 20 tokens missed</strong>' in html
    assert html.count("ttl-missed") == 1  # request 1 only
