"""The fifty planted facts: labels, value shapes, and the rules every drawn value obeys.

Decisions the paper leaves open (recorded in docs/carrier.md, "Facts (14 graded, 36
distractors)" and "Avoiding stock values"):
- The 14 graded labels follow §3.1's list; the 36 distractors cover the classes §3.1 names
  (cluster ids, tenant codes, licence keys, image digests) plus other ports, paths, timestamps,
  URLs and names, so the graded values do not stand out by shape.
- Values are drawn, never listed: ports in 20000-65000 away from stock and round patterns,
  non-round shard counts with their unit word, random version-4 UUIDs, timestamps whose minute
  and second are never round, invented names under `.internal` and `.test`.
- No value is a substring of another (all pairs, graded or not), so an answer line holding one
  value can never be mistaken for holding another; a collision is redrawn from the same
  stream, which keeps the result deterministic.
"""

from __future__ import annotations

import datetime as dt
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from random import Random

from pipeline.carrier import fixture_words as w


@dataclass(frozen=True)
class DrawnFact:
    label: str
    value: str
    kind: str
    graded: bool


ValueMaker = Callable[[Random, dt.date], str]

# --- stock values (the fabrication signature of paper §4.11) -------------------------------

# fmt: off
STOCK_PORTS = frozenset({
    21, 22, 25, 53, 80, 443, 1433, 1521, 2181, 2379, 3000, 3306, 4000, 5000, 5432, 5672, 5900,
    6379, 6443, 7000, 8000, 8008, 8080, 8081, 8088, 8443, 8888, 9000, 9090, 9092, 9200, 9300,
    11211, 15672, 25565, 27017, 27018, 28017, 32400, 33060, 49152, 50000, 50051, 50070, 60000,
    61616, 65535,
})
DOC_UUIDS = frozenset({
    "123e4567-e89b-12d3-a456-426614174000", "550e8400-e29b-41d4-a716-446655440000",
    "00000000-0000-0000-0000-000000000000", "ffffffff-ffff-ffff-ffff-ffffffffffff",
    "f47ac10b-58cc-4372-a567-0e02b2c3d479", "6ba7b810-9dad-11d1-80b4-00c04fd430c8",
})
# fmt: on
STOCK_DOMAINS = ("example.com", "example.org", "example.net", "localhost", "foo.bar", "acme.")
ROUND_MINUTES = frozenset({0, 15, 30, 45})
_CLOCK = re.compile(r"(?<![+\-\d])(\d{2}):(\d{2})(?::(\d{2}))?\b")


def stock_reason(kind: str, value: str) -> str | None:
    """Why `value` looks like a stock or placeholder value, or None if it does not."""
    lowered = value.lower()
    for domain in STOCK_DOMAINS:
        if domain in lowered:
            return f"stock domain {domain}"
    check = _STOCK_CHECKS.get(kind)
    return check(value) if check else None


def _port_reason(value: str) -> str | None:
    port = int(value)
    if port in STOCK_PORTS:
        return "well-known port"
    return "round port" if _is_round_number(port) else None


def _count_reason(value: str) -> str | None:
    number = int(value.split(maxsplit=1)[0])
    round_count = number < 11 or number % 4 == 0 or number % 5 == 0
    return "round count" if round_count or len(set(str(number))) == 1 else None


def _uuid_reason(value: str) -> str | None:
    return "documentation UUID" if value in DOC_UUIDS else None


def _timestamp_reason(value: str) -> str | None:
    for match in _CLOCK.finditer(value):
        if int(match.group(2)) in ROUND_MINUTES:
            return "round minute"
        if match.group(3) is not None and int(match.group(3)) == 0:
            return "round second"
    return None


_STOCK_CHECKS: dict[str, Callable[[str], str | None]] = {
    "port": _port_reason,
    "count": _count_reason,
    "uuid": _uuid_reason,
    "timestamp": _timestamp_reason,
}


def _is_round_number(number: int) -> bool:
    digits = str(number)
    ascending = "0123456789"
    return (
        number % 100 == 0
        or (len(digits) >= 4 and len(set(digits)) <= 2)
        or any(digits[i] == digits[i + 1] == digits[i + 2] for i in range(len(digits) - 2))
        or any(
            digits[i : i + 4] in ascending or digits[i : i + 4] in ascending[::-1]
            for i in range(len(digits) - 3)
        )
    )


# --- value shapes ---------------------------------------------------------------------------

_WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
SESSION_EPOCH = dt.date(2026, 2, 2)  # session dates fall in the 20 weeks after this day


def _port(rng: Random, _day: dt.date) -> str:
    return str(rng.randint(20000, 65000))


def _moment(rng: Random, day: dt.date) -> dt.datetime:
    date = day + dt.timedelta(days=rng.randint(-9, 9))
    minute = rng.choice([m for m in range(1, 60) if m not in ROUND_MINUTES])
    return dt.datetime(
        date.year, date.month, date.day, rng.randint(0, 23), minute, rng.randint(1, 59)
    )


def _ts_minutes_utc(rng: Random, day: dt.date) -> str:  # 2026-03-14 01:26 UTC
    return _moment(rng, day).strftime("%Y-%m-%d %H:%M") + " UTC"


def _ts_date_utc(rng: Random, day: dt.date) -> str:  # Sat 14 Mar 2026 17:43:09 UTC
    t = _moment(rng, day)  # names from our own tables: strftime %a/%b follow the locale
    return f"{_WEEKDAYS[t.weekday()]} {t.day:02d} {_MONTHS[t.month - 1]} {t.year} {t:%H:%M:%S} UTC"


def _ts_iso_utc(rng: Random, day: dt.date) -> str:  # 2026-03-14T09:17:52 UTC
    return _moment(rng, day).strftime("%Y-%m-%dT%H:%M:%S") + " UTC"


def _ts_zulu(rng: Random, day: dt.date) -> str:
    return _moment(rng, day).strftime("%Y-%m-%dT%H:%M:%SZ")


def _ts_offset(rng: Random, day: dt.date) -> str:
    return _moment(rng, day).strftime("%Y-%m-%d %H:%M:%S") + "+00:00"


def _ts_clf(rng: Random, day: dt.date) -> str:
    t = _moment(rng, day)
    return f"{t.day:02d}/{_MONTHS[t.month - 1]}/{t.year}:{t:%H:%M:%S} +0000"


def _count(unit: str) -> ValueMaker:
    return lambda rng, _day: f"{rng.randint(11, 97)} {unit}"


def _uuid(rng: Random, _day: dt.date) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def _path(roots: tuple[str, ...], subs: tuple[str, ...], exts: tuple[str, ...]) -> ValueMaker:
    def make(rng: Random, _day: dt.date) -> str:
        name = f"{w.invented_word(rng)}-{w.hex_string(rng, 4)}.{rng.choice(exts)}"
        return f"/{rng.choice(roots)}/{w.invented_word(rng)}/{rng.choice(subs)}/{name}"

    return make


def _origin_url(rng: Random, _day: dt.date) -> str:
    host = f"origin-{w.hex_string(rng, 4)}.{w.invented_word(rng)}-cdn.internal"
    return f"https://{host}/{rng.choice(('assets', 'static', 'blobs', 'bundles'))}/"


def _mirror_url(rng: Random, _day: dt.date) -> str:
    return f"https://mirror.{w.invented_word(rng)}.test/{w.invented_word(rng)}/pkgs"


def _dns_zone(rng: Random, _day: dt.date) -> str:
    return f"{w.invented_word(rng)}{rng.randint(11, 97)}.{w.invented_word(rng)}.internal"


def _registry_host(rng: Random, _day: dt.date) -> str:
    return f"registry-{w.hex_string(rng, 3)}.{w.invented_word(rng)}.test"


def _key_id(rng: Random, _day: dt.date) -> str:
    return f"kid-{rng.choice(('ed25519', 'p256', 'rsa3072'))}-{w.hex_string(rng, 12)}"


def _handle(rng: Random, _day: dt.date) -> str:
    return f"@{w.given_name(rng)}.{w.invented_word(rng)}"


def _release_tag(rng: Random, _day: dt.date) -> str:
    return (
        f"v{rng.randint(2, 9)}.{rng.randint(11, 47)}.{rng.randint(3, 29)}"
        f"-{w.invented_word(rng)}.{rng.randint(2, 9)}"
    )


def _department(rng: Random, _day: dt.date) -> str:
    return w.department_name(rng)


def _fmt(template: str) -> ValueMaker:
    """A value from a template: {w} word, {h4} hex, {a4} licence group, {n4} digits."""

    def make(rng: Random, _day: dt.date) -> str:
        fields = {
            "w": w.invented_word(rng),
            "w2": w.invented_word(rng),
            "h4": w.hex_string(rng, 4),
            "h6": w.hex_string(rng, 6),
            "h12": w.hex_string(rng, 12),
            "h64": w.hex_string(rng, 64),
            "a3": w.alnum_group(rng, 3),
            "a4": w.alnum_group(rng, 4),
            "a4b": w.alnum_group(rng, 4),
            "a4c": w.alnum_group(rng, 4),
            "n2": str(rng.randint(11, 97)),
            "n4": str(rng.randint(1013, 9871)),
            "n6": str(rng.randint(100003, 989999)),
            "b43": "".join(rng.choice(w.UPPER_ALNUM + "abcdefghkmnpqrstuvwxyz") for _ in range(43)),
        }
        return template.format(**fields)

    return make


# --- the fifty facts ------------------------------------------------------------------------

GRADED_SPECS: tuple[tuple[str, str, ValueMaker], ...] = (
    ("ingress port", "port", _port),
    ("admin port", "port", _port),
    ("state path", "path", _path(("opt", "srv", "var/lib"), ("state", "run"), ("lock", "db"))),
    ("shard count", "count", _count("shards")),
    ("deployment UUID", "uuid", _uuid),
    ("cutover timestamp", "timestamp", _ts_minutes_utc),
    ("snapshot timestamp", "timestamp", _ts_date_utc),
    ("rollback deadline", "timestamp", _ts_iso_utc),
    ("cache origin URL", "url", _origin_url),
    ("DNS zone", "dns_zone", _dns_zone),
    ("signing-key id", "key_id", _key_id),
    ("on-call handle", "handle", _handle),
    ("release tag", "release_tag", _release_tag),
    ("department name", "department", _department),
)
DISTRACTOR_SPECS: tuple[tuple[str, str, ValueMaker], ...] = (
    ("primary cluster id", "cluster_id", _fmt("cl-{w}-{h4}")),
    ("standby cluster id", "cluster_id", _fmt("cl-{w}-{h4}")),
    ("billing tenant code", "tenant_code", _fmt("TN-{a3}-{n4}")),
    ("analytics tenant code", "tenant_code", _fmt("TN-{a3}-{n4}")),
    ("sandbox tenant code", "tenant_code", _fmt("TN-{a3}-{n4}")),
    ("build-farm licence key", "licence_key", _fmt("LK-{a4}-{a4b}-{a4c}")),
    ("profiler licence key", "licence_key", _fmt("LK-{a4}-{a4b}-{a4c}")),
    ("log-shipper licence key", "licence_key", _fmt("LK-{a4}-{a4b}-{a4c}")),
    ("api image digest", "image_digest", _fmt("sha256:{h64}")),
    ("worker image digest", "image_digest", _fmt("sha256:{h64}")),
    ("sidecar image digest", "image_digest", _fmt("sha256:{h64}")),
    ("metrics port", "port", _port),
    ("debug port", "port", _port),
    ("health-check port", "port", _port),
    ("backup path", "path", _path(("srv", "var/backups"), ("archive", "dumps"), ("tar.zst",))),
    ("audit log path", "path", _path(("var/log",), ("audit", "trail"), ("jsonl", "log"))),
    ("secrets mount path", "path", _path(("run", "mnt"), ("secrets", "vault"), ("pem", "env"))),
    ("maintenance window start", "timestamp", _ts_zulu),
    ("certificate expiry", "timestamp", _ts_offset),
    ("last key rotation", "timestamp", _ts_clf),
    ("replica count", "count", _count("replicas")),
    ("request trace UUID", "uuid", _uuid),
    ("mirror URL", "url", _mirror_url),
    ("artifact registry host", "host", _registry_host),
    ("escalation contact", "handle", _handle),
    ("canary build tag", "build_tag", _fmt("build-{n4}-{w}")),
    ("partner team name", "department", _department),
    ("change ticket", "ticket", _fmt("CHG-{n6}")),
    ("commit sha", "commit", _fmt("{h12}")),
    ("retired key fingerprint", "fingerprint", _fmt("SHA256:{b43}")),
    ("node pool name", "name", _fmt("pool-{w}-{n2}")),
    ("queue name", "name", _fmt("{w}.{w2}.v{n2}")),
    ("feature flag", "name", _fmt("ff_{w}_{w2}")),
    ("storage bucket", "name", _fmt("{w}-{w2}-{h4}")),
    ("service account", "account", _fmt("svc-{w}@{w2}.iam.internal")),
    (
        "subnet CIDR",
        "cidr",
        lambda rng, _day: f"10.{rng.randint(16, 250)}.{4 * rng.randint(3, 61)}.0/22",
    ),
)
MIN_PORT_GAP = 100  # ports this close could be "reconstructed" from one another


def draw_facts(rng: Random) -> tuple[DrawnFact, ...]:
    """Draw all fifty values: not stock, no value a substring of another, ports spread out."""
    day = SESSION_EPOCH + dt.timedelta(days=rng.randint(0, 139))
    accepted: list[DrawnFact] = []
    specs = [(s, True) for s in GRADED_SPECS] + [(s, False) for s in DISTRACTOR_SPECS]
    for (label, kind, make), graded in specs:
        for _ in range(200):
            value = make(rng, day)
            if stock_reason(kind, value) is None and _compatible(kind, value, accepted):
                accepted.append(DrawnFact(label, value, kind, graded))
                break
        else:  # pragma: no cover - would mean a value space far too small: a bug
            raise AssertionError(f"could not draw a value for {label!r}")
    return tuple(accepted)


def _compatible(kind: str, value: str, accepted: list[DrawnFact]) -> bool:
    for other in accepted:
        if value in other.value or other.value in value:
            return False
        if kind == "port" == other.kind and abs(int(value) - int(other.value)) < MIN_PORT_GAP:
            return False
    return True


def label_key(label: str) -> str:
    """The identifier form of a label used in config files: 'signing-key id' -> signing_key_id."""
    return re.sub(r"[^a-z0-9]+", "_", label.lower()).strip("_")
