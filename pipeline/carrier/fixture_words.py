"""Word lists the fixture draws from: invented names, Cyrillic department parts, services.

Why invented words: planted values must be non-derivable and public-safe. Names built from
syllables ("kestrel"-like but not real products, people or companies) cannot be guessed from a
model's prior and do not point at anyone. Tuples, never sets: iteration order is part of the
output and must not depend on hashing.
"""

from __future__ import annotations

from random import Random

# fmt: off
SYLLABLES_HEAD = (
    "kes", "tar", "quil", "bran", "vel", "dor", "mar", "cal", "fen", "hol", "lin", "nor",
    "pel", "ros", "sil", "tor", "wen", "yar", "zel", "bel", "cor", "dun", "gal", "har",
    "jor", "kel", "mor", "ost", "rav", "sor",
)
SYLLABLES_TAIL = (
    "trel", "wick", "moor", "nock", "den", "ford", "lowe", "mere", "sby", "ton", "vale",
    "dell", "holt", "ridge", "wyn", "stead", "brook", "crest", "fall", "gate", "hurst",
    "marsh", "thorn", "well",
)
GIVEN_HEAD = ("il", "dor", "mi", "ya", "te", "ra", "so", "ka", "ve", "lu", "ne", "za", "o", "e")
GIVEN_TAIL = ("vana", "reth", "lka", "mira", "dan", "sha", "rin", "vel", "tka", "nor", "lis")

# Cyrillic department names: head noun + plural-genitive adjective + plural-genitive noun
# (+ an optional singular-genitive tail), which keeps every combination grammatical.
DEPT_HEADS = ("Отдел", "Служба", "Группа", "Сектор", "Лаборатория", "Управление")
DEPT_ADJECTIVES = (
    "сетевых", "облачных", "резервных", "внутренних", "распределённых", "платёжных",
    "почтовых", "складских", "аналитических", "периферийных", "мобильных", "архивных",
    "транзитных", "учётных",
)
DEPT_NOUNS = (
    "сервисов", "хранилищ", "кластеров", "каналов", "журналов", "реестров", "шлюзов",
    "очередей", "платформ", "интеграций", "каталогов", "маршрутов", "витрин", "узлов",
)
DEPT_TAILS = ("", "", " и телеметрии", " и мониторинга", " и аудита", " и доставки")

SERVICES = (
    "ingest-gateway", "ledger-writer", "edge-router", "blob-indexer", "session-broker",
    "metrics-relay", "quota-keeper", "search-frontend", "billing-sync", "report-renderer",
    "auth-proxy", "schema-registry", "job-scheduler", "thumbnailer", "webhook-fanout",
)
COMPONENTS = (
    "planner", "compactor", "replicator", "watchdog", "supervisor", "reaper", "collector",
    "dispatcher", "migrator", "resolver", "throttler", "snapshotter",
)
LOG_VERBS = (
    "flushed segment", "renewed lease", "retrying upstream", "accepted connection",
    "closed idle connection", "rotated log file", "compacted index", "evicted cache entry",
    "acquired lock", "released lock", "scheduled job", "finished job", "synced manifest",
    "rejected request", "reloaded config", "opened snapshot", "checkpointed offsets",
)
LOG_REASONS = (
    "deadline exceeded", "connection reset by peer", "no healthy upstream", "lease expired",
    "quota exceeded", "stale read", "checksum mismatch", "backpressure", "context canceled",
    "too many open files", "dns lookup timed out", "tls handshake timeout",
)
# fmt: on
HEX = "0123456789abcdef"
UPPER_ALNUM = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # no I, O, 0, 1: licence-key alphabet


def invented_word(rng: Random) -> str:
    """A pronounceable invented word such as 'quilmarsh'."""
    return rng.choice(SYLLABLES_HEAD) + rng.choice(SYLLABLES_TAIL)


def given_name(rng: Random) -> str:
    return rng.choice(GIVEN_HEAD) + rng.choice(GIVEN_TAIL)


def hex_string(rng: Random, length: int) -> str:
    return "".join(rng.choice(HEX) for _ in range(length))


def alnum_group(rng: Random, length: int) -> str:
    return "".join(rng.choice(UPPER_ALNUM) for _ in range(length))


def department_name(rng: Random) -> str:
    """A grammatical Cyrillic department name, e.g. 'Служба резервных шлюзов и аудита'."""
    head = rng.choice(DEPT_HEADS)
    return f"{head} {rng.choice(DEPT_ADJECTIVES)} {rng.choice(DEPT_NOUNS)}{rng.choice(DEPT_TAILS)}"
