"""`traces classify` and `study.templates` (issue 21): templates the project does not ship are
classed offline, per switch setting, with the fields and switches they read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.cli import main
from pipeline.traces.visibility.offline import classify_offline
from pipeline.traces.visibility.reads import switch_settings, template_reads
from pipeline.traces.visibility.render import render
from tests.traces.unshipped_templates import GLM_LIKE, GPT_OSS_LIKE, KIMI_K3_LIKE

TEMPLATES = {"glm-like": GLM_LIKE, "gpt-oss-like": GPT_OSS_LIKE, "kimi-k3-like": KIMI_K3_LIKE}
# name: (default class, reasoning field, switches, {switch setting: class})
EXPECTED = {
    "glm-like": ("after_last_user", ["reasoning_content"], ["clear_thinking"],
                 {"(default)": "after_last_user", "clear_thinking=false": "always",
                  "clear_thinking=true": "after_last_user"}),
    "gpt-oss-like": ("after_last_user", ["thinking"], ["reasoning_effort"],
                     {"(default)": "after_last_user", "reasoning_effort=high": "after_last_user"}),
    "kimi-k3-like": ("until_plain_reply", ["reasoning_content"], ["thinking"],
                     {"(default)": "until_plain_reply", "thinking=false": "never",
                      "thinking=true": "until_plain_reply"}),
}  # fmt: skip


def _check(classes: list[dict[str, object]]) -> None:
    got = {
        str(c["template"]): (
            c["class"],
            c["dialects_read"],
            c["switches_read"],
            {s["switches"]: s["class"] for s in c["per_switch_setting"]},  # type: ignore[attr-defined]
        )
        for c in classes
    }
    assert got == EXPECTED
    assert all(c["tool_calls_dropped"] is False and c["cannot_render"] == [] for c in classes)


def test_unshipped_templates_get_their_pinned_classes_per_switch_value() -> None:
    _check([c.as_json() for c in classify_offline(TEMPLATES, {}, render)])


def test_message_thinking_is_a_field_and_a_bare_thinking_is_a_switch() -> None:
    oss, k3 = template_reads(GPT_OSS_LIKE), template_reads(KIMI_K3_LIKE)
    assert "thinking" in oss.reasoning_fields and "thinking" not in [s.name for s in oss.switches]
    assert [s.name for s in k3.switches] == ["thinking"] and k3.reasoning_fields == (
        "reasoning_content",
    )


def test_any_if_over_a_kwarg_is_a_switch_and_string_comparisons_are_its_values() -> None:
    template = "{% if keep_cot %}a{% endif %}{% if mode == 'fast' or mode == 'slow' %}b{% endif %}"
    settings = switch_settings(template)
    assert {"keep_cot": True, "mode": "fast"} in settings and {} in settings
    assert len(settings) == 3 * 3
    assert switch_settings("{% set x = 1 %}{% if x %}{% endif %}") == ({},)  # a local is not one


def test_many_switches_fall_back_to_one_at_a_time() -> None:
    template = "".join(f"{{% if s{i} %}}{{% endif %}}" for i in range(5))
    assert len(switch_settings(template)) == 1 + 5 * 2  # 3**5 = 243 would pass the cap


def test_traces_classify_prints_json_for_template_files_no_server(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = []
    for name, text in TEMPLATES.items():
        path = tmp_path / f"{name}.jinja"
        path.write_text(text, encoding="utf-8")
        files.append(str(path))
    assert main(["traces", "classify", *files, "--json"]) == 0
    classes = json.loads(capsys.readouterr().out)
    _check(classes)
    assert {c["source"] for c in classes} == {"user"}
    assert all(len(c["sha256"]) == 64 for c in classes)


def test_traces_classify_text_names_class_fields_and_tool_calls(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "loop.jinja"
    path.write_text("{% macro walk(m) %}{{ walk(m) }}{% endmacro %}{{ walk(messages) }}")
    assert main(["traces", "classify", str(path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("loop [user, sha256 ")
    assert ": unrenderable (recursion)" in out.splitlines()[0]
    assert "shapes it cannot render: 100 of 100" in out


def test_traces_classify_of_a_missing_file_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["traces", "classify", "/nonexistent/x.jinja"]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_study_templates_enter_the_run_labelled_user_with_their_sha256(tmp_path: Path) -> None:
    from pipeline.studies.traces import DEFINITION
    from pipeline.traces.study import TEMPLATES_FILE

    path = tmp_path / "glm-like.jinja"
    path.write_text(GLM_LIKE, encoding="utf-8")
    study = DEFINITION.configure({"name": "traces", "templates": [str(path)]})
    stored = json.loads(study.inputs.files[TEMPLATES_FILE])
    assert stored["glm-like"]["source"] == "user"
    assert stored["Qwen-Qwen3-0.6B"]["source"] == "shipped"
    import hashlib

    assert stored["glm-like"]["sha256"] == hashlib.sha256(GLM_LIKE.encode()).hexdigest()


def test_study_templates_name_clash_with_a_shipped_one_is_one_line(tmp_path: Path) -> None:
    from pipeline.config.strict import ConfigError
    from pipeline.studies.traces import DEFINITION

    path = tmp_path / "gemma-turns.jinja"
    path.write_text("{{ messages }}", encoding="utf-8")
    with pytest.raises(ConfigError, match="name of a shipped template"):
        DEFINITION.configure({"name": "traces", "templates": [str(path)]})
