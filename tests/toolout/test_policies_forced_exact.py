"""The forced-exact layer: Torana's anchors, the size floor and the JSON-with-spaces marker."""

from __future__ import annotations

import pytest

from pipeline.toolout.policies import MIN_ELIGIBLE_BYTES, forced_exact

FILLER_LINE = "src/module/file.py:12: some ordinary matched line of search output"


def sized(marker: str = "") -> str:
    """An ordinary ~4,000-byte output with `marker` as a line in its middle."""
    lines = [FILLER_LINE] * 60
    if marker:
        lines.insert(30, marker)
    return "\n".join(lines)


def test_an_ordinary_large_output_is_eligible() -> None:
    assert forced_exact("grep", sized()) is None


@pytest.mark.parametrize(
    ("marker", "reason"),
    [
        ("FAIL package/example", "forced_exact:fail_line"),
        ("exit status 1", "forced_exact:nonzero_exit"),
        ("Process exited with code 137", "forced_exact:nonzero_exit"),
        ('{"exit_code": 2}', "forced_exact:nonzero_exit"),
        ("error[E0382]: borrow of moved value: `v`", "forced_exact:error_marker"),
    ],
)
def test_torana_anchor_outputs_stay_exact(marker: str, reason: str) -> None:
    found = forced_exact("grep", sized(marker))
    assert found is not None
    assert found.reason == reason


@pytest.mark.parametrize("name", ["apply_patch", "WriteFile", "git-diff", "text_editor"])
def test_torana_anchor_tool_names_stay_exact(name: str) -> None:
    found = forced_exact(name, sized())
    assert found is not None
    assert found.reason == "forced_exact:tool_name"


@pytest.mark.parametrize(
    "name",
    ["str_replace_based_edit_tool", "MultiEdit", "delete_file", "RemoveItem", "report_errors"],
)
def test_mutation_and_error_tokens_in_names_stay_exact(name: str) -> None:
    found = forced_exact(name, sized())
    assert found is not None
    assert found.reason == "forced_exact:tool_name"


def test_a_name_containing_a_marker_without_a_token_boundary_stays_exact_as_in_torana() -> None:
    found = forced_exact("applypatch", sized())
    assert found is not None
    assert found.evidence.startswith("patch")


@pytest.mark.parametrize("name", ["grep", "read_file", "bash", "web_search", "list_dir"])
def test_ordinary_tool_names_are_not_forced(name: str) -> None:
    assert forced_exact(name, sized()) is None


def test_a_zero_exit_code_does_not_force_exact() -> None:
    assert forced_exact("bash", sized('{"exit_code": 0}')) is None
    assert forced_exact("bash", sized("exit status 0")) is None


def test_is_error_true_with_a_space_forces_exact() -> None:
    found = forced_exact("mcp_call", sized('{"is_error": true, "content": "x"}'))
    assert found is not None
    assert found.reason == "forced_exact:error_marker"
    assert forced_exact("mcp_call", sized('{"is_error":true}')) is not None
    assert forced_exact("mcp_call", sized('{"is_error": false}')) is None


@pytest.mark.parametrize(
    "marker",
    [
        "error: could not compile",
        "fatal: not a git repository",
        "panic: runtime error",
        "Traceback (most recent call last):",
        "stack trace: at foo",
        "Command failed with code",
        '{"status": "error"}',
    ],
)
def test_each_content_marker_forces_exact(marker: str) -> None:
    found = forced_exact("bash", sized(marker))
    assert found is not None
    assert found.reason == "forced_exact:error_marker"


@pytest.mark.parametrize(
    "line", ["FAIL", "failed", "FAILED tests/test_x.py::test_y", "exit code 2"]
)
def test_fail_and_exit_lines_force_exact(line: str) -> None:
    assert forced_exact("bash", sized(line)) is not None


def test_a_fail_word_inside_a_line_is_not_a_fail_line() -> None:
    assert forced_exact("bash", sized("tests that may fail sometimes")) is None
    assert forced_exact("bash", sized("FAILURES section header")) is None


def test_1999_bytes_is_not_eligible_and_2000_is() -> None:
    assert MIN_ELIGIBLE_BYTES == 2000
    small = forced_exact("grep", "x" * 1999)
    assert small is not None
    assert small.reason == "below_min_bytes"
    assert forced_exact("grep", "x" * 2000) is None


def test_the_size_floor_counts_utf8_bytes_not_characters() -> None:
    assert forced_exact("grep", "é" * 1000) is None  # 1,000 characters, 2,000 bytes
    assert forced_exact("grep", "é" * 999 + "x") is not None  # 1,999 bytes
