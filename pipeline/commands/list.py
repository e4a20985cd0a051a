"""`python -m pipeline list KIND [--study NAME]`: the names of a kind and what each is.

KIND is one of:
- `arms`: every study's arms, grouped by study (one heading line each), from the study's
  definition (its optional `describe`, pipeline/study.py); `--study NAME` lists one study's;
- `policies`: the same for studies whose arms are policies (the tool-output study);
- `scenarios`, `panels`: conf/scenario/ and conf/panel/;
- `studies`: the registered studies (pyproject.toml), described by conf/study/NAME.yaml.
One line a name, its description beside it, aligned; a file without a description says
"(no description)" (pipeline/config/descriptions.py has the rule). A study that describes no
arms is named at the end rather than left out. No kind, an unknown kind, or a malformed file is
one line (exit 2).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from pipeline.commands.args import CommandParser
from pipeline.config.descriptions import NO_DESCRIPTION, Described, describe_file, describe_group
from pipeline.config.load import conf_dir
from pipeline.study import ArmDescriptions
from pipeline.usererror import UserError

ARM_KINDS = ("arms", "policies")
GROUPS = {"scenarios": "scenario", "panels": "panel"}
KINDS = (*ARM_KINDS, *GROUPS, "studies")


def _parser() -> CommandParser:
    parser = CommandParser("list", description="names and descriptions of " + ", ".join(KINDS))
    parser.add_argument("kind", nargs="?", help=" | ".join(KINDS))
    parser.add_argument("--study", help="arms or policies: only this study's")
    return parser


def aligned(entries: Iterable[Described], indent: str = "") -> list[str]:
    """One line an entry: the names padded to the longest, then the description."""
    found = list(entries)
    width = max((len(e.name) for e in found), default=0)
    return [f"{indent}{e.name:<{width}}  {e.description}" for e in found]


def _described(name: str) -> ArmDescriptions | None:
    from pipeline import studies

    describe = getattr(studies.definition(name), "describe", None)
    return None if describe is None else describe()


def arm_lines(kind: str, study: str | None) -> list[str]:
    """`arms` or `policies`: a heading line per study, its arms indented under it."""
    from pipeline import studies

    if study is not None:
        found = _described(studies.definition(study).name)
        if found is None:
            raise UserError(f"list: study {study!r} does not describe its arms (no describe())")
        if found.kind != kind:
            raise UserError(
                f"list: study {study!r} calls its arms {found.kind}; "
                f"run `python -m pipeline list {found.kind} --study {study}`"
            )
    lines: list[str] = []
    undescribed: list[str] = []
    for name in [study] if study is not None else studies.names():
        found = _described(name)
        if found is None:
            undescribed.append(name)
        elif found.kind == kind:
            lines.append(f"{name}:")
            lines += aligned((Described(*item) for item in found.by_name.items()), "  ")
    if undescribed and kind == "arms":
        lines.append(f"not described (no describe()): {', '.join(undescribed)}")
    return lines


def study_lines() -> list[str]:
    from pipeline import studies

    folder = conf_dir() / "study"
    entries = []
    for name in studies.names():
        path = folder / f"{name}.yaml"
        text = describe_file(path).description if path.is_file() else NO_DESCRIPTION
        entries.append(Described(name, text))
    return aligned(entries)


def lines_of(kind: str, study: str | None) -> list[str]:
    if kind not in KINDS:
        raise UserError(f"list: give one of {', '.join(KINDS)} (e.g. python -m pipeline list arms)")
    if study is not None and kind not in ARM_KINDS:
        raise UserError(f"list: --study goes with {' or '.join(ARM_KINDS)}, not {kind}")
    if kind in ARM_KINDS:
        return arm_lines(kind, study)
    if kind == "studies":
        return study_lines()
    return aligned(describe_group(GROUPS[kind]))


def main(argv: Sequence[str]) -> int:
    args = _parser().parse_args(list(argv))
    for line in lines_of(args.kind or "", args.study):
        print(line)
    return 0
