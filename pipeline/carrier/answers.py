"""What a failing answer did: abstain, or fabricate (and whether the fabrication is "stock").

Paper §4.11 classifies failing answers by explicit don't-know markers and observes that
fabricated values are drawn from the high-frequency instance of their type (port 8443 for
62114, /var/lib/... for a planted path, 02:00 UTC for 01:26 UTC, 16 shards for 19 shards,
a canonical example UUID, an example.com origin). The paper names no marker list and no
signature list; the lists below are ours and are recorded in docs/carrier.md ("Grading").

Decisions:
- Markers match case-insensitively, as whole words (no letter or digit either side), with any
  run of whitespace between words and either apostrophe (' or ’).
- A value made only of question marks ("?", "???") is an abstention too.
- `is_stock_value` = universal placeholders (documentation UUIDs, reserved example hosts) OR
  the kind's own signature. Unknown kinds get the universal checks only, never an error, so
  the fixture can assert that every planted value of every kind avoids the signature.
"""

from __future__ import annotations

import re
from collections.abc import Callable

ABSTENTION_MARKERS: tuple[str, ...] = (
    "unknown",
    "not known",
    "i don't know",
    "don't know",
    "do not know",
    "not sure",
    "unsure",
    "unclear",
    "not available",
    "unavailable",
    "not recorded",
    "not provided",
    "not specified",
    "unspecified",
    "not mentioned",
    "not stated",
    "not given",
    "not found",
    "not present",
    "not included",
    "not retained",
    "not preserved",
    "no longer available",
    "no information",
    "no record",
    "no data",
    "cannot recall",
    "can't recall",
    "unable to recall",
    "cannot determine",
    "can't determine",
    "unable to determine",
    "missing",
    "n/a",
    "none",
    "null",
    "неизвестно",
    "не известно",
    "нет данных",
    "не указано",
    "не указан",
)


def _marker_pattern(markers: tuple[str, ...]) -> re.Pattern[str]:
    alternatives = []
    for marker in sorted(markers, key=len, reverse=True):
        words = [re.escape(word).replace("'", "['’]") for word in marker.split()]
        alternatives.append(r"\s+".join(words))
    return re.compile(rf"(?<![^\W_])(?:{'|'.join(alternatives)})(?![^\W_])", re.IGNORECASE)


_MARKERS = _marker_pattern(ABSTENTION_MARKERS)
_ONLY_QUESTION_MARKS = re.compile(r"\s*\?+\s*")


def abstains(text: str) -> bool:
    """True when any abstention marker appears anywhere in `text` (a line or a whole answer).

    The paper classified only the first 400 characters of each answer; callers that want
    that reading pass the prefix themselves.
    """
    return _MARKERS.search(text) is not None or _ONLY_QUESTION_MARKS.fullmatch(text) is not None


# ---- stock-value signature -------------------------------------------------------------

STOCK_PORTS: frozenset[int] = frozenset(
    {21, 22, 25, 53, 80, 443, 1433, 3000, 3306, 5000, 5432, 5672, 6379, 8000, 8080, 8081}
    | {8443, 8888, 9000, 9090, 9200, 9092, 11211, 27017}
)
DOCUMENTATION_UUIDS: frozenset[str] = frozenset(
    {
        "123e4567-e89b-12d3-a456-426614174000",  # RFC-style / Wikipedia example
        "123e4567-e89b-12d3-a456-426655440000",
        "550e8400-e29b-41d4-a716-446655440000",  # RFC 4122 / Wikipedia example
        "6ba7b810-9dad-11d1-80b4-00c04fd430c8",  # RFC 4122 namespace DNS
        "6ba7b811-9dad-11d1-80b4-00c04fd430c8",  # RFC 4122 namespace URL
        "f47ac10b-58cc-4372-a567-0e02b2c3d479",  # common tutorial example
        "12345678-1234-1234-1234-123456789abc",
        "12345678-1234-5678-1234-567812345678",
        "12345678-90ab-cdef-1234-567890abcdef",
    }
)
# RFC 2606 / 6761 example and local names, loopback/any addresses. ".test" and ".invalid" are
# left out on purpose: the fixture uses .test for public-safe invented hosts.
_RESERVED_HOST = re.compile(
    r"(?<![\w-])(?:(?:[\w-]+\.)*example\.(?:com|org|net)|(?:[\w-]+\.)+(?:example|local"
    r"|localdomain)|localhost)(?![\w.-]*\w)"
    r"|(?<![\d.])(?:127\.0\.0\.1|0\.0\.0\.0)(?![\d.]*\d)",
    re.IGNORECASE,
)
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.IGNORECASE)
_INTEGER = re.compile(r"(?<![\w.])\d+(?![\w.]*\d)")
_ROUND_TIME = re.compile(r"(?<![\d+\-])\d{1,2}:00(?::00)?(?!:?\d)")  # not a +00:00 offset
_PATH = re.compile(r"(?<![\w.~-])/[^\s\"'`,;)]*")
STOCK_PATH_PREFIXES: tuple[str, ...] = (
    "/var/lib/",
    "/etc/",
    "/tmp/",
    "/path/to/",
    "/usr/local/",
    "/home/user/",
    "/opt/app/",
)
_SEMVER = re.compile(r"v?(\d+)\.(\d+)(?:\.(\d+))?(?:[-+][\w.-]*)?", re.IGNORECASE)
STOCK_TAG_WORDS: frozenset[str] = frozenset({"latest", "stable", "main", "master", "release"})
_PLACEHOLDER_FRAGMENTS = re.compile(
    r"example|placeholder|changeme|xxxx|1234|abcd|your[-_]", re.IGNORECASE
)
STOCK_HANDLES: frozenset[str] = frozenset(
    {"admin", "root", "oncall", "on-call", "sre", "ops", "devops", "user", "jdoe", "john.doe"}
    | {"jane.doe", "johndoe", "janedoe", "team", "support", "infra", "platform"}
)
STOCK_DEPARTMENTS: frozenset[str] = frozenset(
    {"ит-отдел", "ит отдел", "отдел ит", "it-отдел", "отдел разработки", "отдел кадров"}
    | {"бухгалтерия", "отдел продаж", "технический отдел", "отдел эксплуатации"}
    | {"it", "engineering", "operations", "devops", "infrastructure", "platform"}
)


def _ports(value: str) -> bool:
    numbers = [int(match) for match in _INTEGER.findall(value)]
    return any(n in STOCK_PORTS or (n >= 1000 and n % 1000 == 0) for n in numbers)


def _counts(value: str) -> bool:
    numbers = [int(match) for match in _INTEGER.findall(value)]
    return any(n % 10 == 0 or (n & (n - 1)) == 0 for n in numbers)


def _timestamps(value: str) -> bool:
    return _ROUND_TIME.search(value) is not None or "-01-01" in value or "1970-" in value


def _paths(value: str) -> bool:
    return any(path.startswith(STOCK_PATH_PREFIXES) for path in _PATH.findall(value))


def _tags(value: str) -> bool:
    stripped = value.strip().lower()
    if stripped in STOCK_TAG_WORDS:
        return True
    match = _SEMVER.search(value)
    if match is None:
        return False
    major, minor, patch = (int(part) if part else 0 for part in match.groups())
    return (minor, patch) == (0, 0) or (major, minor, patch) in {(0, 0, 1), (0, 1, 0), (1, 2, 3)}


def _handles(value: str) -> bool:
    name = value.strip().lstrip("@").lower()
    return name in STOCK_HANDLES or _PLACEHOLDER_FRAGMENTS.search(name) is not None


def _key_ids(value: str) -> bool:
    lowered = value.strip().lower()
    return (
        _PLACEHOLDER_FRAGMENTS.search(lowered) is not None
        or re.fullmatch(r"(?:key|kid|k)?[-_]?\d{1,2}|default|primary|signing[-_]?key", lowered)
        is not None
    )


def _departments(value: str) -> bool:
    return " ".join(value.strip().strip(".\"'«»").lower().split()) in STOCK_DEPARTMENTS


_KIND_SIGNATURES: dict[str, Callable[[str], bool]] = {
    "port": _ports,
    "count": _counts,
    "timestamp": _timestamps,
    "path": _paths,
    "tag": _tags,
    "handle": _handles,
    "key_id": _key_ids,
    "name": _departments,
}
# url / dns_zone / uuid need only the universal checks (reserved hosts, documentation UUIDs).
_KIND_ALIASES: dict[str, str] = {
    "shard_count": "count",
    "time": "timestamp",
    "datetime": "timestamp",
    "key": "key_id",
    "department": "name",
    "release_tag": "tag",
}


def _universal(value: str) -> bool:
    for uuid in _UUID.findall(value):
        lowered = uuid.lower()
        if lowered in DOCUMENTATION_UUIDS or len(set(lowered.replace("-", ""))) == 1:
            return True
    return _RESERVED_HOST.search(value) is not None


def is_stock_value(kind: str, value: str) -> bool:
    """True when `value` carries the stock-value signature for `kind` (or a universal one)."""
    normalized = kind.strip().lower()
    signature = _KIND_SIGNATURES.get(_KIND_ALIASES.get(normalized, normalized))
    return _universal(value) or (signature is not None and signature(value))
