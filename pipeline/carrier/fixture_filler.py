"""Realistic filler lines for tool outputs: logs, config keys, tables, listings, test output.

Why realistic filler: the fold has to pick fourteen needles out of logs, configs and command
output that look like a real infrastructure session, with many numbers, hosts and timestamps
of the same shapes. The filler never uses a fact label, so a label identifies its fact alone;
`fixture_session` rejects and redraws any step in which filler happens to reproduce a value.

All randomness comes from the one `Random` passed in; the session clock advances
monotonically so log timestamps read like one long working session. Whole outputs (which
command, head and tail lines) are assembled in `fixture_outputs`; prose in `fixture_prose`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from random import Random

from pipeline.carrier import fixture_words as w

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
        if deck.section_due(self.rng):
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


class KeyDeck:
    """Config keys of one output without repeats: plain keys, then section-prefixed ones.

    YAML files open a new section instead (keys are unique within a section).
    """

    def __init__(self, rng: Random) -> None:
        self.rng = rng
        self.round = 0
        self.cards: list[tuple[str, Callable[[Random], str]]] = []
        self.sections = 0
        self.just_opened = True  # the output's head opens the first section

    def section_due(self, rng: Random) -> bool:
        """Open a new YAML section: never twice in a row; always once the keys run out."""
        spent = self.round > 0 and not self.cards
        return not self.just_opened and (spent or rng.random() < 0.1)

    def section(self) -> str:
        """The next YAML section name ('server' is the file's first, given by the head)."""
        self.sections += 1
        self.round, self.cards, self.just_opened = 0, [], True
        if self.sections < len(_SECTIONS):
            return _SECTIONS[self.sections]
        return f"profile_{self.sections - len(_SECTIONS) + 2}"

    def draw(self) -> tuple[str, str]:
        if not self.cards:
            prefix = "" if self.round == 0 else f"{_SECTIONS[(self.round - 1) % len(_SECTIONS)]}_"
            suffix = "" if self.round <= len(_SECTIONS) else f"_{self.round}"
            self.cards = [(f"{prefix}{k}{suffix}", make) for k, make in _CONFIG_KEYS]
            self.rng.shuffle(self.cards)
            self.round += 1
        self.just_opened = False
        key, make = self.cards.pop()
        return key, make(self.rng)


_SECTIONS = (
    "server", "storage", "upstreams", "limits", "telemetry", "retries", "cache", "tls",
    "admission", "compaction", "replication", "scheduler", "quotas", "tracing", "auth", "gc",
)  # fmt: skip
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
