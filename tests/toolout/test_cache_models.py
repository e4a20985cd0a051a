"""The dated cache-model files and their strict loader."""

from __future__ import annotations

import copy
import datetime as dt
import re
from pathlib import Path
from typing import Any

import pytest

from jobs.toolout.inputs import CACHE_MODELS_DIR, load_cache_model, load_cache_models
from pipeline.toolout.cache_models import CacheModelError, UnknownPriceError, parse_cache_model


def _openai_like() -> dict[str, Any]:
    return {
        "name": "openai-test",
        "kind": "automatic_prefix",
        "as_of": "2026-12-01",
        "source": {"url": "https://example.org/caching", "title": "Caching"},
        "parameters": {
            "min_tokens": 1024,
            "step_tokens": 128,
            "ttl_seconds": 300,
            "discount": {"m": 0.5},
        },
        "prices": {
            "as_of": dt.date(2026, 7, 21),
            "source": {"url": "https://example.org/pricing", "title": "Pricing"},
            "models": {"m": {"input": 2.0, "output": 8.0}},
        },
    }


def _with(path: str, value: Any, data: dict[str, Any] | None = None) -> dict[str, Any]:
    """A copy of `data` with the dotted key set (or removed, for value ...)."""
    out = copy.deepcopy(data if data is not None else _openai_like())
    node = out
    *parents, last = path.split(".")
    for key in parents:
        node = node[key]
    if value is ...:
        del node[last]
    else:
        node[last] = value
    return out


def test_every_shipped_file_loads_and_is_dated_and_cited() -> None:
    models = load_cache_models()
    assert set(models) == {
        "anthropic",
        "openai",
        "deepseek",
        "gemini-implicit",
        "no-cache",
        "llama-server",
    }
    for model in models.values():
        assert isinstance(model.as_of, dt.date) and isinstance(model.prices_as_of, dt.date)
        assert model.source.url.startswith("https://") and model.source.title
        assert model.prices_source.url.startswith("https://")
        assert model.notes


def test_each_family_has_one_file_per_kind() -> None:
    kinds = {m.name: m.kind for m in load_cache_models().values()}
    assert kinds == {
        "anthropic": "explicit_breakpoints",
        "openai": "automatic_prefix",
        "deepseek": "prefix_units",
        "gemini-implicit": "automatic_prefix",
        "no-cache": "none",
        "llama-server": "automatic_prefix",
    }


def test_anthropic_file_writes_at_1_25x_and_reads_at_0_1x_with_5_minute_ttl() -> None:
    m = load_cache_models()["anthropic"]
    assert (m.max_breakpoints, m.lookback_blocks, m.ttl_seconds, m.refresh_on_read) == (
        4,
        20,
        300,
        True,
    )
    for model in m.models:
        p = m.prices_for(model)
        assert p.cache_write == pytest.approx(1.25 * p.input)
        assert p.cache_read == pytest.approx(0.1 * p.input)
    assert {m.min_tokens_for(x) for x in m.models} == {1024, 2048, 4096}


def test_openai_file_hits_from_1024_in_128_steps_with_a_discount_per_model() -> None:
    m = load_cache_models()["openai"]
    assert (m.step_tokens, m.min_tokens_for("gpt-4o")) == (128, 1024)
    shares = {x: 1 - m.prices_for(x).cache_read / m.prices_for(x).input for x in m.models}
    assert shares == pytest.approx({"gpt-4o": 0.5, "gpt-4.1": 0.75, "gpt-5": 0.9, "gpt-5.4": 0.9})
    assert all(m.prices_for(x).cache_write == m.prices_for(x).input for x in m.models)


def test_deepseek_file_is_the_seeds_table_verbatim() -> None:
    m = load_cache_models()["deepseek"]
    assert m.prices_as_of == dt.date(2026, 7, 21)
    pro, flash = m.prices_for("deepseek-v4-pro"), m.prices_for("deepseek-v4-flash")
    assert (pro.input, pro.cache_read, pro.output) == (0.435, 0.003625, 0.87)
    assert (flash.input, flash.cache_read, flash.output) == (0.14, 0.0028, 0.28)
    assert pro.cache_read / pro.input == pytest.approx(0.0083333, rel=1e-4)  # 0.83%
    assert pro.cache_write == pro.input  # no write fee
    assert (m.unit_tokens, m.output_cached) == (64, True)


def test_gemini_file_derives_the_hit_price_from_its_discount() -> None:
    m = load_cache_models()["gemini-implicit"]
    assert m.prices_for("gemini-2.5-flash").cache_read == 0.03
    assert m.min_tokens_for("gemini-2.5-pro") == 2048


def test_an_unpriced_model_raises_instead_of_costing_nothing() -> None:
    m = load_cache_models()["openai"]
    with pytest.raises(UnknownPriceError, match=r"'gpt-9'.*'openai'.*gpt-4o"):
        m.prices_for("gpt-9")
    with pytest.raises(UnknownPriceError):
        m.min_tokens_for("gpt-9")


@pytest.mark.parametrize(
    ("path", "value", "key"),
    [
        ("colour", "blue", "colour"),
        ("parameters.lookback_blocks", 20, "parameters.lookback_blocks"),
        ("prices.models.m.cached", 1.0, "prices.models.m.cached"),
        ("source.licence", "x", "source.licence"),
    ],
)
def test_unknown_keys_raise_naming_the_key(path: str, value: Any, key: str) -> None:
    with pytest.raises(CacheModelError, match=re.escape(f"f.yaml: {key}: unknown key")):
        parse_cache_model(_with(path, value), origin="f.yaml")


@pytest.mark.parametrize(
    ("path", "value", "key"),
    [
        ("kind", "magic", "kind"),
        ("as_of", "yesterday", "as_of"),
        ("as_of", dt.datetime(2026, 1, 1, 12), "as_of"),
        ("source.url", "http://example.org", "source.url"),
        ("parameters.ttl_seconds", -5, "parameters.ttl_seconds"),
        ("parameters.ttl_seconds", 0, "parameters.ttl_seconds"),
        ("parameters.step_tokens", 0, "parameters.step_tokens"),
        ("parameters.min_tokens", 10.5, "parameters.min_tokens"),
        ("parameters.min_tokens", True, "parameters.min_tokens"),
        ("parameters.discount.m", 1.5, "parameters.discount.m"),
        ("parameters.discount", {"m": 0.5, "n": 0.5}, "parameters.discount.n"),
        ("prices.models.m.input", -1, "prices.models.m.input"),
        ("prices.models.m.input", "2.0", "prices.models.m.input"),
        ("prices.models.m.output", float("nan"), "prices.models.m.output"),
        ("prices.models.m.cache_read", 1.5, "prices.models.m.cache_read"),
        ("prices.models.m.cache_write", 2.5, "prices.models.m.cache_write"),
        ("prices.models", {}, "prices.models"),
        ("parameters.step_tokens", ..., "parameters.step_tokens"),
        ("prices.source", ..., "prices.source"),
        ("name", "", "name"),
    ],
)
def test_bad_or_missing_values_raise_naming_the_key(path: str, value: Any, key: str) -> None:
    with pytest.raises(CacheModelError, match=re.escape(f"f.yaml: {key}: ")):
        parse_cache_model(_with(path, value), origin="f.yaml")


def test_error_is_a_value_error_with_the_key() -> None:
    with pytest.raises(ValueError) as info:
        parse_cache_model(_with("kind", "magic"), origin="f.yaml")
    assert isinstance(info.value, CacheModelError)
    assert (info.value.origin, info.value.key) == ("f.yaml", "kind")


def test_a_stated_cache_price_that_agrees_with_the_rule_loads() -> None:
    model = parse_cache_model(_with("prices.models.m.cache_read", 1.0))
    assert model.prices_for("m").cache_read == 1.0


def test_explicit_breakpoint_prices_must_match_their_multipliers() -> None:
    data = copy.deepcopy(load_raw("anthropic.yaml"))
    data["prices"]["models"]["claude-opus-4-6"]["cache_write"] = 6.0
    with pytest.raises(
        CacheModelError, match=re.escape("prices.models.claude-opus-4-6.cache_write")
    ):
        parse_cache_model(data, origin="anthropic.yaml")


def test_prefix_units_need_the_tables_hit_price() -> None:
    data = copy.deepcopy(load_raw("deepseek.yaml"))
    del data["prices"]["models"]["deepseek-v4-pro"]["cache_read"]
    with pytest.raises(CacheModelError, match=re.escape("deepseek-v4-pro.cache_read: required")):
        parse_cache_model(data, origin="deepseek.yaml")


def test_a_model_without_a_cache_takes_no_parameters_or_cache_prices() -> None:
    data = copy.deepcopy(load_raw("no-cache.yaml"))
    data["parameters"] = {"ttl_seconds": 300}
    with pytest.raises(CacheModelError, match=re.escape("parameters.ttl_seconds: unknown key")):
        parse_cache_model(data)
    data = copy.deepcopy(load_raw("no-cache.yaml"))
    data["prices"]["models"]["deepseek-v4-pro"]["cache_read"] = 0.1
    with pytest.raises(CacheModelError, match="cache_read: a model without a cache"):
        parse_cache_model(data)


def test_the_loader_names_the_file_of_a_bad_yaml(tmp_path: Path) -> None:
    bad = tmp_path / "broken.yaml"
    bad.write_text("name: [unclosed\n", encoding="utf-8")
    with pytest.raises(CacheModelError, match=re.escape("broken.yaml: <file>: not valid YAML")):
        load_cache_model(bad)


def test_the_loader_rejects_two_files_with_one_name(tmp_path: Path) -> None:
    text = (CACHE_MODELS_DIR / "openai.yaml").read_text(encoding="utf-8")
    (tmp_path / "a.yaml").write_text(text, encoding="utf-8")
    (tmp_path / "b.yaml").write_text(text, encoding="utf-8")
    with pytest.raises(CacheModelError, match=re.escape("b.yaml: name: 'openai' is defined twice")):
        load_cache_models(tmp_path)


def load_raw(name: str) -> dict[str, Any]:
    import yaml

    data: dict[str, Any] = yaml.safe_load((CACHE_MODELS_DIR / name).read_text(encoding="utf-8"))
    return data
