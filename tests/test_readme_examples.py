"""Every command of the README's worked example runs, or is skipped for a stated reason (issue 32,
"The README, checked line by line").

The commands are parsed from README.md itself: the `sh` block under "## Worked example" (a
trailing backslash joins lines, `&&` splits one line into two commands) and the backticked
subcommands of its "Other subcommands" paragraph. `EXAMPLES` says, for each command exactly as
the README spells it, whether it runs and with which placeholders filled in, or why it is
skipped (it needs a key, a server the user runs, the local models, or a long sweep). A README
command missing from `EXAMPLES`, or an entry the README no longer holds, fails the test: the
README cannot drift from what was checked.

The drift check runs by default (it only parses); running the commands is `slow` and `ray`
(about 3 to 5 minutes on 2 cores: the sweeps dominate). A command that runs must exit 0 and
print a non-empty answer on stdout. Sweeps get `out_dir=<tmp>` and `progress=false` added;
`RUN_DIR` is the run the sim dry run (carrier commands) or `study=toolout` (toolout commands)
made earlier in the same README order.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.reliability.harness import SweepHarness, harness  # noqa: F401 (fixture)

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
TIMEOUT_S = 300.0
SHIPPED_TEMPLATE = REPO / "data" / "chat-templates" / "Qwen-Qwen3-0.6B.jinja"
SHIPPED_TRACES = REPO / "data" / "reasoning-fixtures"


@dataclass(frozen=True)
class Run:
    """Run the README command with these whole tokens replaced, then `RUN_DIR` by the run
    `run_dir` names and `TMP/` by the test's temp dir; `makes` names the run a sweep makes."""

    tokens: dict[str, str] = field(default_factory=dict)
    run_dir: str | None = None
    makes: str | None = None
    argv: tuple[str, ...] | None = None  # instead of the README's own arguments


@dataclass(frozen=True)
class Skip:
    why: str


KEY = "needs OPENROUTER_API_KEY (the hosted panel)"
LOCAL = "needs the local models behind llama-server and runs for many minutes (a long sweep)"
SERVER = "runs a server until it is stopped"

EXAMPLES: dict[str, Run | Skip] = {
    ". .venv/bin/activate": Skip("shell set-up: the test runs the venv's own python"),
    "python -m pipeline sweep +panel=sim sim.configs=6 arms=[j,q,m,x] repeats=4": Run(
        makes="carrier"
    ),
    "python -m pipeline sweep +panel=replay arms=[m] repeats=1": Run(),
    "python -m pipeline panel +panel=recent": Run(),
    "python -m pipeline probe +panel=recent": Skip(KEY),
    "python -m pipeline sweep +panel=recent arms=[j,q] budget.usd=15": Skip(KEY),
    "python -m pipeline sweep resume=RUN_DIR budget.usd=30": Skip(
        KEY + ": resumes the hosted run above"
    ),
    "python -m pipeline cache list RUN_DIR": Run(run_dir="carrier"),
    "python -m pipeline sweep +panel=endpoint endpoint.base_url=http://127.0.0.1:8000/v1 "
    "endpoint.model=my-model endpoint.response_format=json_schema": Skip(
        "needs the user's own OpenAI-compatible server"
    ),
    "python -m pipeline sweep +panel=endpoint endpoint.base_url=URL endpoint.model=M "
    "endpoint.record=DIR": Skip("needs the user's own OpenAI-compatible server"),
    "python -m pipeline sweep resume=runs/20261129T142035-sim-small-941816ee": Run(
        tokens={"resume=runs/20261129T142035-sim-small-941816ee": "resume=RUN_DIR"},
        run_dir="carrier",
    ),
    "python -m pipeline sweep resume=runs/20261129T142035-sim-small-941816ee repeats=4 "
    "allow_config_change=true": Skip("extends a sweep with more units (a longer sweep)"),
    "scripts/submit --address http://127.0.0.1:8265 -- +panel=sim": Skip(
        "needs a running Ray cluster (tests/sweep/test_cluster_submit.py covers submit)"
    ),
    "python -m pipeline sweep study=toolout": Run(makes="toolout"),
    'python -m pipeline query RUN_DIR "select config_id, arm as policy, sum(sessions.cost_usd) '
    "as replay_cost_usd from sessions join rows using (row_id) where valid group by config_id, "
    'arm order by config_id, replay_cost_usd"': Run(run_dir="toolout"),
    "python -m pipeline sweep study=toolout +panel=local": Skip(LOCAL),
    "python -m pipeline sweep study=toolout study.transcripts_dir=$HOME/my-transcripts/": Skip(
        "needs the user's own transcripts (and replays them: a sweep as long as the corpus)"
    ),
    "python -m pipeline sweep study=traces": Skip(LOCAL),
    "python -m pipeline sweep study=traces +panel=local-templates 'study.arms=[visibility]'": Skip(
        LOCAL
    ),
    "python -m pipeline traces scan ~/my-sessions/ --figures /tmp/scan": Run(
        tokens={"~/my-sessions/": str(SHIPPED_TRACES), "/tmp/scan": "TMP/scan"}
    ),
    "python -m pipeline traces classify my-template.jinja": Run(
        tokens={"my-template.jinja": str(SHIPPED_TEMPLATE)}
    ),
    "python -m pipeline sweep study=traces 'study.templates=[my-template.jinja]'": Skip(LOCAL),
    'python -m pipeline query RUN_DIR "select arm, avg(recall) as recall from (select config_id, '
    "arm, avg(recall) as recall from rows where valid group by config_id, arm) group by arm "
    'order by arm"': Run(run_dir="carrier"),
    "python -m pipeline analyze RUN_DIR": Run(run_dir="carrier"),
    "python -m pipeline report RUN_DIR": Run(run_dir="carrier"),
    "python -m pipeline decide RUN_DIR [RUN_DIR ...]": Run(run_dir="carrier"),
    "python -m pipeline view RUN_DIR [RUN_DIR ...] [--port N]": Skip(SERVER),
    "python -m pipeline view --export runs.html RUN_DIR [RUN_DIR ...]": Run(
        tokens={"runs.html": "TMP/runs.html"}, run_dir="carrier"
    ),
    # the "Other subcommands" paragraph
    "python -m pipeline fixture --scenario NAME --seed N --out FILE": Run(
        tokens={"NAME": "small", "N": "1", "FILE": "TMP/fixture.json"}
    ),
    "python -m pipeline grade --fixture F --answer A [--carrier C]": Run(
        tokens={"F": "TMP/fixture.json", "A": "TMP/answer.txt"}
    ),
    "python -m pipeline probe [overrides]": Skip(
        "probes the default local panel: needs the local models"
    ),
    "python -m pipeline serve sim|local": Skip(SERVER),
    "python -m pipeline serve replay DIR [--port N] [--order cycle|fixed] [--file NAME]": Run(
        argv=("serve", "replay", "--help")
    ),
}


def _section(text: str, heading: str) -> str:
    start = text.index(f"\n{heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def readme_commands(text: str) -> list[str]:
    """The worked example's commands, in README order, each as one whitespace-normalised line."""
    section = _section(text, "## Worked example")
    block = re.search(r"```sh\n(.*?)```", section, re.DOTALL)
    assert block is not None, "the worked example has no sh block"
    joined = re.sub(r"\\\n\s*", " ", block.group(1))
    commands = []
    for raw in joined.splitlines():
        line = re.sub(r"\s+#\s.*$", "", raw).strip()  # a trailing comment is not the command
        if not line or line.startswith("#"):
            continue
        commands += [" ".join(part.split()) for part in line.split(" && ")]
    other = re.search(r"\nOther subcommands:(.*?)(?:\n\n|\Z)", section, re.DOTALL)
    assert other is not None, "the worked example has no 'Other subcommands' paragraph"
    for span in re.findall(r"`([^`]+)`", other.group(1)):
        if span.split()[0] in {"fixture", "grade", "probe", "serve"}:
            commands.append("python -m pipeline " + " ".join(span.split()))
    return commands


def argv_of(command: str, run: Run, runs: dict[str, Path], tmp: Path) -> list[str]:
    words = shlex.split(command)
    assert words[:3] == ["python", "-m", "pipeline"], command
    args = list(run.argv) if run.argv else words[3:]
    out, optional = [], False
    for word in args:
        if word.startswith("[") and "=" not in word:
            optional = True  # an optional argument of a synopsis: `[--carrier C]`
        if optional:
            optional = not word.endswith("]")
            continue
        filled = run.tokens.get(word, word)
        if run.run_dir is not None:
            filled = filled.replace("RUN_DIR", str(runs[run.run_dir]))
        out.append(filled.replace("TMP/", f"{tmp}/"))
    if out[0] == "sweep":
        out += [f"out_dir={tmp / 'runs'}", "progress=false"]
    return [sys.executable, "-m", "pipeline", *out]


def test_every_worked_example_command_is_run_or_skipped_for_a_reason() -> None:
    commands = readme_commands(README.read_text(encoding="utf-8"))
    assert sorted(set(commands)) == sorted(EXAMPLES), (
        "README commands without an entry: "
        f"{sorted(set(commands) - set(EXAMPLES))}; entries the README no longer holds: "
        f"{sorted(set(EXAMPLES) - set(commands))}"
    )


@pytest.mark.slow
@pytest.mark.ray  # the sim, replay and toolout sweeps start private Ray instances
def test_the_worked_example_runs(harness: SweepHarness, tmp_path: Path) -> None:  # noqa: F811
    (tmp_path / "answer.txt").write_text("ingress port: 8443\n", encoding="utf-8")
    runs: dict[str, Path] = {}
    env = {**harness.env}
    env.pop("OPENROUTER_API_KEY", None)  # no command that runs may need a key
    timings = []
    for command in readme_commands(README.read_text(encoding="utf-8")):
        entry = EXAMPLES[command]
        if isinstance(entry, Skip):
            continue
        argv = argv_of(command, entry, runs, tmp_path)
        started = time.monotonic()
        done = subprocess.run(
            argv,
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
            check=False,
        )
        timings.append((round(time.monotonic() - started, 1), command[:60]))
        assert done.returncode == 0, (command, argv, done.stderr[-3000:])
        assert done.stdout.strip(), (command, "printed nothing", done.stderr[-2000:])
        if entry.makes is not None:
            runs[entry.makes] = Path(done.stdout.strip().splitlines()[-1])
            assert (runs[entry.makes] / "manifest.json").is_file()
    print("README commands run (s, command):", *timings, sep="\n  ")
    assert harness.reap(grace_s=10.0) == [], "a README command left processes behind"
