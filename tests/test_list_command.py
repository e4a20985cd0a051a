"""`python -m pipeline list KIND`: every name of the kind with its description, aligned; bad
input is one line (issue 35 item 6)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from pipeline import cli, studies
from pipeline.config.load import conf_dir

KINDS = "arms, policies, scenarios, panels, studies"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[str], str]:
    code = cli.main(["list", *argv])
    out, err = capsys.readouterr()
    return code, out.splitlines(), err


def description(path: Path) -> str:
    return str(yaml.safe_load(path.read_text(encoding="utf-8"))["description"])


def under(lines: list[str], heading: str) -> list[str]:
    """The indented lines under `heading:` up to the next heading."""
    start = lines.index(f"{heading}:") + 1
    end = next((i for i in range(start, len(lines)) if not lines[i].startswith("  ")), len(lines))
    return lines[start:end]


def test_list_arms_gives_every_carrier_and_traces_arm_with_its_file_description(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, lines, _ = run(capsys, "arms")
    assert code == 0
    carrier = under(lines, "carrier")
    assert [line.split()[0] for line in carrier] == sorted(
        p.stem for p in (conf_dir() / "arms").glob("*.yaml")
    )
    for line in carrier:
        name = line.split()[0]
        assert line.endswith(description(conf_dir() / "arms" / f"{name}.yaml")), line
    traces = [line.split()[0] for line in under(lines, "traces")]
    assert traces[0] == "visibility"
    assert sorted(traces[1:]) == sorted(p.stem for p in (conf_dir() / "traces/arms").glob("*.yaml"))
    assert "toolout:" not in lines  # its arms are policies
    # other tests may register more undescribed studies in this process (tests/view)
    assert lines[-1].startswith("not described (no describe()): ")
    assert "echo" in lines[-1].split(": ", 1)[1].split(", ")


def test_list_arms_lines_are_aligned_within_a_study(capsys: pytest.CaptureFixture[str]) -> None:
    _, lines, _ = run(capsys, "arms", "--study", "traces")
    assert lines[0] == "traces:"
    starts = set()
    for line in lines[1:]:
        name = line.split()[0]
        starts.add(len(line) - len(line[2 + len(name) :].lstrip()))
    assert len(starts) == 1


def test_list_policies_gives_every_policy_file_and_the_oracle(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, lines, _ = run(capsys, "policies")
    assert code == 0
    found = {line.split()[0]: line for line in under(lines, "toolout")}
    folder = conf_dir() / "toolout" / "policies"
    assert set(found) == {p.stem for p in folder.glob("*.yaml")} | {"oracle"}
    assert found["control"].endswith(description(folder / "control.yaml"))


def test_list_scenarios_and_panels_name_every_file_with_its_leading_comment(
    capsys: pytest.CaptureFixture[str],
) -> None:
    for kind, group in (("scenarios", "scenario"), ("panels", "panel")):
        code, lines, _ = run(capsys, kind)
        assert code == 0
        assert [line.split()[0] for line in lines] == sorted(
            p.stem for p in (conf_dir() / group).glob("*.yaml")
        )
        assert all("(no description)" not in line for line in lines), lines
    _, lines, _ = run(capsys, "panels")
    assert any(line.startswith("sim ") and line.endswith("load and chaos tests.") for line in lines)


def test_list_studies_names_every_registered_study(capsys: pytest.CaptureFixture[str]) -> None:
    code, lines, _ = run(capsys, "studies")
    assert code == 0
    assert [line.split()[0] for line in lines] == studies.names()
    assert any(line.startswith("carrier ") and "fold-and-recall" in line for line in lines)


@pytest.mark.parametrize("argv", [(), ("bogus",), ("arm",)])
def test_list_without_a_known_kind_is_one_line_naming_the_kinds(
    capsys: pytest.CaptureFixture[str], argv: tuple[str, ...]
) -> None:
    code, lines, err = run(capsys, *argv)
    assert code == 2 and lines == []
    assert err.count("\n") == 1 and KINDS in err


def test_list_arms_of_a_study_that_calls_them_policies_points_to_policies(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, _, err = run(capsys, "arms", "--study", "toolout")
    assert code == 2
    assert err.strip() == (
        "error: list: study 'toolout' calls its arms policies; "
        "run `python -m pipeline list policies --study toolout`"
    )


def test_list_arms_of_a_study_without_describe_is_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, _, err = run(capsys, "arms", "--study", "echo")
    assert code == 2 and err.count("\n") == 1 and "echo" in err


@pytest.fixture
def own_conf(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("FOLDSWEEP_CONF", str(tmp_path))
    (tmp_path / "scenario").mkdir()
    (tmp_path / "arms").mkdir()
    return tmp_path


def test_a_yaml_without_a_description_says_so(
    capsys: pytest.CaptureFixture[str], own_conf: Path
) -> None:
    (own_conf / "scenario" / "bare.yaml").write_text("name: bare\nfolds: 3\n", encoding="utf-8")
    (own_conf / "scenario" / "said.yaml").write_text(
        "# @package study.scenario\n# Three folds. More words.\nfolds: 3\n", encoding="utf-8"
    )
    (own_conf / "arms" / "z.yaml").write_text("name: z\n", encoding="utf-8")
    assert run(capsys, "scenarios")[1] == ["bare  (no description)", "said  Three folds."]
    assert under(run(capsys, "arms")[1], "carrier") == ["  z  (no description)"]


def test_a_malformed_yaml_is_one_line_naming_it(
    capsys: pytest.CaptureFixture[str], own_conf: Path
) -> None:
    broken = own_conf / "scenario" / "broken.yaml"
    broken.write_text("name: [unclosed\n", encoding="utf-8")
    code, lines, err = run(capsys, "scenarios")
    assert code == 2 and lines == []
    assert err.count("\n") == 1 and str(broken) in err and "not valid YAML" in err
    broken.write_text("- a list\n", encoding="utf-8")
    code, _, err = run(capsys, "scenarios")
    assert code == 2 and err.count("\n") == 1 and "must be a mapping" in err
