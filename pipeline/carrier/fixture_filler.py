"""Realistic filler for the synthetic session: tool outputs, assistant prose, operator turns.

Why realistic filler: the fold has to pick fourteen needles out of logs, configs and command
output that look like a real infrastructure session, with many numbers, hosts and timestamps
of the same shapes. The filler never uses a fact label, so a label identifies its fact alone;
`fixture_session` rejects and redraws any step in which filler happens to reproduce a value.

All randomness comes from the one `Random` passed in; the session clock advances
monotonically so log timestamps read like one afternoon of work.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from random import Random

from pipeline.carrier import fixture_words as w
from pipeline.carrier.fixture_values import label_key

STAMP_EXAMPLE = "2026-01-01T00:00:00+0000"  # the fixed-width shape of Filler.stamp()
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


@dataclass(frozen=True)
class Scene:
    """Names that stay fixed through one session."""

    hosts: tuple[str, ...]
    services: tuple[str, ...]
    namespace: str
    project: str
    domain: str


def draw_scene(rng: Random) -> Scene:
    project = w.invented_word(rng)
    hosts = tuple(f"node-{w.hex_string(rng, 3)}-{c}" for c in "abcdef")
    services = tuple(rng.sample(w.SERVICES, 6))
    return Scene(hosts, services, f"{project}-prod", project, f"{w.invented_word(rng)}.internal")


@dataclass(frozen=True)
class ToolOutput:
    """A tool call and the lines of its result (facts are inserted among the lines)."""

    tool: str  # bash | read_file
    arguments: dict[str, str]
    intent: str  # what the assistant says it is about to do
    head: tuple[str, ...] = ()  # fixed first lines (table header, opening brace)
    tail: tuple[str, ...] = ()  # fixed last lines
    stamped: bool = False  # body lines get a time stamp prefix, in order, once placed


class Filler:
    """Generates filler text from one Random and one Scene (and a monotone clock)."""

    def __init__(self, rng: Random, scene: Scene, start: dt.datetime) -> None:
        self.rng = rng
        self.scene = scene
        self.clock = start

    # --- small pieces ------------------------------------------------------------------
    def svc(self) -> str:
        return self.rng.choice(self.scene.services)

    def host(self) -> str:
        return self.rng.choice(self.scene.hosts)

    def tick(self) -> dt.datetime:
        self.clock += dt.timedelta(
            seconds=self.rng.randint(1, 40), milliseconds=self.rng.randint(0, 999)
        )
        return self.clock

    def stamp(self) -> str:
        """An ISO time stamp (journalctl -o short-iso); fixed width, so sizing is exact."""
        return f"{self.tick():%Y-%m-%dT%H:%M:%S}+0000"

    def ip(self) -> str:
        return (
            f"10.{self.rng.randint(16, 250)}.{self.rng.randint(0, 255)}.{self.rng.randint(2, 254)}"
        )

    # --- line makers per output kind (fact lines carry the label verbatim) ---------------
    def journal_line(self, svc: str) -> str:
        r = self.rng
        extra = r.choice(
            (
                lambda: f"duration_ms={r.randint(2, 4800)}",
                lambda: f'attempt={r.randint(1, 7)} err="{r.choice(w.LOG_REASONS)}"',
                lambda: f"segment={w.hex_string(r, 8)} bytes={r.randint(512, 9_000_000)}",
                lambda: f"peer={self.ip()} rtt_ms={r.randint(1, 900)}",
                lambda: f"queue_depth={r.randint(0, 4000)} lag_s={r.randint(0, 300)}",
            )
        )()
        level = r.choice(("info", "info", "info", "debug", "warn", "error"))
        return (
            f"{self.host()} {svc}[{r.randint(300, 98000)}]: level={level} "
            f'component={r.choice(w.COMPONENTS)} msg="{r.choice(w.LOG_VERBS)}" {extra}'
        )

    def journal_fact(self, svc: str, label: str, value: str) -> str:
        return (
            f"{self.host()} {svc}[{self.rng.randint(300, 98000)}]: level=info "
            f'component=config msg="{label}: {value}"'
        )

    def config_line(self, deck: KeyDeck) -> str:
        if self.rng.random() < 0.12:
            return f"{deck.section()}:"
        key, value = deck.draw()
        return f"  {key}: {value}"

    def env_line(self, deck: KeyDeck) -> str:
        key, value = deck.draw()
        return f"{key.upper()}={value}"

    def status_line(self, deck: KeyDeck) -> str:
        key, value = deck.draw()
        return f"  {key.replace('_', ' ') + ':':<28}{value}"

    def json_line(self, deck: KeyDeck) -> str:
        key, value = deck.draw()
        shown = value if value.isdigit() else f'"{value}"'
        return f'  {{"key": "{key}", "value": {shown}, "node": "{self.host()}"}},'

    def json_fact(self, label: str, value: str) -> str:
        return f'  {{"key": "{label}", "value": "{value}", "node": "{self.host()}"}},'

    def pods_line(self) -> str:
        r = self.rng
        status = r.choice(("Running", "Running", "Running", "CrashLoopBackOff", "Pending"))
        return (
            f"{self.svc()}-{w.hex_string(r, 5)}-{w.hex_string(r, 5):<8} "
            f"{r.randint(0, 2)}/2   {status:<17} {r.randint(0, 40):<9}"
            f"{r.randint(2, 59)}m  {self.ip():<15} {self.host()}"
        )

    def ls_line(self) -> str:
        r, t = self.rng, self.tick()
        name = f"{w.invented_word(r)}-{w.hex_string(r, 6)}.{r.choice(('seg', 'idx', 'wal', 'log'))}"
        return (
            f"-rw-r----- 1 {self.scene.project} {self.scene.project} "
            f"{r.randint(1024, 90_000_000):>9} {_MONTHS[t.month - 1]} {t.day:2d} "
            f"{t:%H:%M} {name}"
        )

    def gitlog_line(self) -> str:
        r = self.rng
        return (
            f"{w.hex_string(r, 7)} {r.choice(_COMMIT_VERBS)} {self.svc()} {r.choice(w.COMPONENTS)}"
        )

    def pytest_line(self) -> str:
        r = self.rng
        test = f"tests/test_{r.choice(w.COMPONENTS)}.py::test_{r.choice(_TEST_NAMES)}"
        return f"{test} {r.choice(('PASSED', 'PASSED', 'PASSED', 'FAILED', 'SKIPPED'))}"

    def grep_line(self) -> str:
        r = self.rng
        component = r.choice(w.COMPONENTS)
        return (
            f"src/{self.scene.project}/{component}.py:{r.randint(12, 880)}:"
            f"    {r.choice(_CODE_LINES).format(c=component)}"
        )

    def access_line(self) -> str:
        r, t = self.rng, self.tick()
        return (
            f"{self.ip()} - - [{t.day:02d}/{_MONTHS[t.month - 1]}/{t.year}:{t:%H:%M:%S} "
            f'+0000] "{r.choice(("GET", "GET", "POST", "PUT"))} /v1/{r.choice(_PATHS)} '
            f'HTTP/1.1" {r.choice((200, 200, 200, 204, 304, 404, 429, 502))} '
            f"{r.randint(90, 48000)} {r.randint(1, 2400)}ms"
        )

    # --- whole outputs -------------------------------------------------------------------
    def tool_output(self, with_facts: bool) -> tuple[ToolOutput, Callable[[], str], FactLine]:
        """A tool call, a filler-line maker and the matching fact-line maker."""
        kinds = _FACT_KINDS if with_facts else _FACT_KINDS + _FILLER_KINDS
        return _build(self, self.rng.choice(kinds))


FactLine = Callable[[str, str], str]  # (label, value) -> line(s) carrying the fact


class KeyDeck:
    """Config keys of one output without repeats: plain keys, then section-prefixed ones."""

    def __init__(self, rng: Random) -> None:
        self.rng = rng
        self.round = 0
        self.cards: list[tuple[str, Callable[[Random], str]]] = []
        self.sections = 0

    def section(self) -> str:
        """The next YAML section name ('server' is the file's first, given by the header)."""
        self.sections += 1
        name = _SECTIONS[self.sections % len(_SECTIONS)]
        return name if self.sections < len(_SECTIONS) else f"{name}_{self.sections}"

    def draw(self) -> tuple[str, str]:
        if not self.cards:
            prefix = "" if self.round == 0 else f"{_SECTIONS[(self.round - 1) % len(_SECTIONS)]}_"
            suffix = "" if self.round <= len(_SECTIONS) else f"_{self.round}"
            self.cards = [(f"{prefix}{k}{suffix}", make) for k, make in _CONFIG_KEYS]
            self.rng.shuffle(self.cards)
            self.round += 1
        key, make = self.cards.pop()
        return key, make(self.rng)


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


_FACT_KINDS = ("journal", "yaml", "env", "status", "json")
_FILLER_KINDS = ("pods", "ls", "gitlog", "pytest", "grep", "access")
_PODS_HEADER = (
    "NAME                              READY STATUS            RESTARTS AGE  IP              NODE"
)
_SECTIONS = ("server", "storage", "upstreams", "limits", "telemetry", "retries", "cache", "tls")
_CONFIG_KEYS: tuple[tuple[str, Callable[[Random], str]], ...] = (
    ("log_level", lambda r: r.choice(("info", "debug", "warn"))),
    ("request_timeout_ms", lambda r: str(r.randint(150, 9000))),
    ("max_inflight", lambda r: str(r.randint(4, 512))),
    ("retry_budget", lambda r: f"0.{r.randint(1, 9)}"),
    ("gc_interval_s", lambda r: str(r.randint(5, 600))),
    ("compression", lambda r: r.choice(("zstd", "lz4", "none", "gzip"))),
    ("tls_min_version", lambda r: r.choice(("1.2", "1.3"))),
    ("batch_size", lambda r: str(r.randint(16, 4096))),
    ("flush_interval_ms", lambda r: str(r.randint(10, 5000))),
    ("workers", lambda r: str(r.randint(2, 64))),
    ("read_only", lambda r: r.choice(("true", "false"))),
    ("upstream_pool", lambda r: f"{w.invented_word(r)}-upstream"),
    ("cache_ttl_s", lambda r: str(r.randint(30, 86000))),
    ("rate_limit_rps", lambda r: str(r.randint(20, 9000))),
    ("max_body_bytes", lambda r: str(r.randint(1024, 64_000_000))),
    ("drain_timeout_s", lambda r: str(r.randint(5, 300))),
    ("sampling_ratio", lambda r: f"0.{r.randint(1, 99):02d}"),
    ("owner_team", w.invented_word),
)
_COMMIT_VERBS = ("fix", "bump", "refactor", "tune", "revert", "add metrics to", "document")
_TEST_NAMES = (
    "retries_on_reset",
    "drains_before_exit",
    "rejects_stale_lease",
    "flushes_on_shutdown",
    "honours_deadline",
    "parses_legacy_config",
    "rotates_without_gap",
    "backs_off_under_pressure",
)
_CODE_LINES = (
    "timeout = cfg.request_timeout_ms / 1000",
    "except TimeoutError:",
    "raise DeadlineExceeded('{c}')",
    "deadline = clock() + timeout",
    "self._timeout = timeout or DEFAULT_TIMEOUT",
    "log.warning('{c} timed out')",
)
_PATHS = ("objects", "sessions", "jobs", "leases", "manifests", "health", "metrics")
