"""cache.* config: scopes, durations and the shared directory are checked before anything."""

from __future__ import annotations

import pytest

from pipeline.config import load
from pipeline.config.schema import CacheConfig, ttl_seconds
from pipeline.config.strict import ConfigError


def test_the_default_is_the_runs_own_cache_for_a_week() -> None:
    cache = load([]).cache
    assert (cache.scope, cache.dir, ttl_seconds(cache.ttl)) == ("run", None, 7 * 86400)


@pytest.mark.parametrize(("text", "seconds"), [("90", 90), ("30m", 1800), ("12h", 43200),
                                               ("1w", 604800), ("2D", 172800)])  # fmt: skip
def test_durations(text: str, seconds: int) -> None:
    assert ttl_seconds(text) == seconds


@pytest.mark.parametrize("text", ["", "0", "-5m", "soon", "1.5h", "7y"])
def test_a_bad_ttl_is_one_line(text: str) -> None:
    with pytest.raises(ConfigError, match=r"cache\.ttl must be a positive duration"):
        ttl_seconds(text)


def test_an_unknown_scope_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"cache\.scope must be run, shared or off"):
        CacheConfig(scope="disk")  # type: ignore[arg-type]


def test_a_dir_without_the_shared_scope_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"cache\.dir is used only with cache\.scope=shared"):
        CacheConfig(dir="/tmp/x")


def test_an_unknown_cache_key_is_refused_on_the_command_line() -> None:
    with pytest.raises(ConfigError):
        load(["cache.scop=off"])


def test_scope_off_on_the_command_line_is_the_word_not_a_boolean() -> None:
    assert load(["cache.scope=off"]).cache.scope == "off"
