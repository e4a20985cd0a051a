"""Whole tool outputs: which tool is called, its fixed head and tail, and the line makers.

Fact-capable outputs (journal, YAML config, env file, verbose status, settings JSON) state a
fact on a line that carries its label; the other outputs (pods, ls, git log, pytest, grep,
access log) are filler only. Key-value outputs draw their keys from a KeyDeck, so a file never
repeats a key.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pipeline.carrier.fixture_filler import Filler, KeyDeck
from pipeline.carrier.fixture_values import label_key


@dataclass(frozen=True)
class ToolOutput:
    """A tool call and the lines of its result (facts are inserted among the lines)."""

    tool: str  # bash | read_file
    arguments: dict[str, str]
    intent: str  # what the assistant says it is about to do
    head: tuple[str, ...] = ()  # fixed first lines (table header, opening brace)
    tail: tuple[str, ...] = ()  # fixed last lines
    stamped: bool = False  # body lines get a time stamp prefix, in order, once placed


FactLine = Callable[[str, str], str]  # (label, value) -> line(s) carrying the fact


def tool_output(f: Filler, with_facts: bool) -> tuple[ToolOutput, Callable[[], str], FactLine]:
    """A tool call, its filler-line maker and the matching fact-line maker."""
    kinds = FACT_KINDS if with_facts else FACT_KINDS + FILLER_KINDS
    return _build(f, f.rng.choice(kinds))


def _build(f: Filler, kind: str) -> tuple[ToolOutput, Callable[[], str], FactLine]:
    svc, host, p = f.svc(), f.host(), f.scene.project
    t = f.clock
    deck = KeyDeck(f.rng)  # key-value outputs never repeat a key
    if kind == "journal":
        since = f"{t:%Y-%m-%d %H:%M}"
        cmd = f'journalctl -u {svc} --since "{since}" -o short-iso --no-pager'
        out = ToolOutput(
            "bash", {"command": cmd}, f"look at the recent {svc} logs on {host}", stamped=True
        )
        return out, lambda: f.journal_line(svc), lambda lb, v: f.journal_fact(svc, lb, v)
    if kind == "yaml":
        out = ToolOutput(
            "read_file",
            {"path": f"/etc/{p}/{svc}/config.yaml"},
            f"read the {svc} config",
            head=("# managed by deployctl", "server:"),
        )
        return out, lambda: f.config_line(deck), lambda lb, v: f'  {label_key(lb)}: "{v}"  # {lb}'
    if kind == "env":
        out = ToolOutput(
            "bash", {"command": f"cat deploy/{svc}.env"}, f"check the environment file for {svc}"
        )
        return out, lambda: f.env_line(deck), lambda lb, v: f"# {lb}\n{label_key(lb).upper()}={v}"
    if kind == "status":
        out = ToolOutput(
            "bash",
            {"command": f"{p}ctl status {svc} --verbose"},
            f"pull the verbose status of {svc}",
            head=(f"● {svc} ({p}ctl)", f"  {'state:':<28}active"),
        )
        return out, lambda: f.status_line(deck), lambda lb, v: f"  {lb + ':':<28}{v}"
    if kind == "json":
        cmd = f"curl -s https://{svc}.{f.scene.domain}/v1/settings | jq ."
        opening = (f'{{"service": "{svc}", "effective_settings": [',)
        closing = (f'  {{"key": "generation", "value": {f.rng.randint(2, 900)}}}', "]}")
        intent = f"query the {svc} settings endpoint"
        out = ToolOutput("bash", {"command": cmd}, intent, opening, closing)
        return out, lambda: f.json_line(deck), f.json_fact
    ns = f.scene.namespace
    makers: dict[str, tuple[str, str, Callable[[], str], tuple[str, ...], tuple[str, ...]]] = {
        "pods": (
            f"kubectl get pods -n {ns} -o wide",
            "list the pods",
            f.pods_line,
            (_PODS_HEADER,),
            (),
        ),
        "ls": (
            f"ls -la /var/lib/{p}/{svc}/",
            f"list the {svc} data directory",
            f.ls_line,
            (f"total {f.rng.randint(2000, 900000)}",),
            (),
        ),
        "gitlog": ("git log --oneline -n 60", "scan the recent commits", f.gitlog_line, (), ()),
        "pytest": (
            "pytest -q -rA tests/",
            "run the test suite",
            f.pytest_line,
            (),
            (
                f"{f.rng.randint(3, 9)} failed, {f.rng.randint(40, 400)} passed in "
                f"{f.rng.randint(3, 90)}.{f.rng.randint(10, 99)}s",
            ),
        ),
        "grep": (
            f'grep -rn "timeout" src/{p}/',
            "grep for the timeout handling",
            f.grep_line,
            (),
            (),
        ),
        "access": (
            f"tail -n 200 /var/log/{p}/access.log",
            "tail the access log",
            f.access_line,
            (),
            (),
        ),
    }
    command, intent, line, head, tail = makers[kind]
    return ToolOutput("bash", {"command": command}, intent, head, tail), line, _no_facts


def _no_facts(label: str, value: str) -> str:  # pragma: no cover - filler kinds carry none
    raise AssertionError(f"filler output asked to carry {label}")


FACT_KINDS = ("journal", "yaml", "env", "status", "json")
FILLER_KINDS = ("pods", "ls", "gitlog", "pytest", "grep", "access")
_PODS_HEADER = (
    "NAME                              READY STATUS            RESTARTS AGE  IP              NODE"
)
