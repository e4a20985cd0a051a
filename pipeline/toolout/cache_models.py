"""Provider prompt-cache models: dated data files (`data/cache-models/*.yaml`), parsed strictly.

A cache model is one provider family's caching rule plus its prices, as a documented provider
page stated them on a date (`as_of`, `source`); the rules are data so that a provider's change
is a new file, not a code change. Four kinds cover the families the study prices:

- `explicit_breakpoints` (Anthropic-like): the request marks breakpoints (at most
  `max_breakpoints`); a hit lands only on a block boundary where an earlier request wrote an
  entry, within `lookback_blocks` blocks before one of this request's breakpoints; writes cost
  `write_multiplier` × input, reads `read_multiplier` × input.
- `automatic_prefix` (OpenAI-like, Gemini implicit): every prompt is cached; a hit is the
  shared prefix rounded down to `step_tokens`, and none below the model's minimum; no write
  fee; reads cost (1 − discount) × input, the discount per model.
- `prefix_units` (DeepSeek-like): hits land on the end of an earlier request's input (and,
  with `output_cached`, of its output) or on the `unit_tokens` grid; no write fee; the hit
  price is the table's.
- `none`: nothing is cached; every input token is billed as input.

Every file key is checked: an unknown key, a missing one or a bad value raises
`CacheModelError` naming the file and the key. Prices are USD per million tokens; a table's
explicit cache price must agree with the rule's multiplier or discount (a typo in either
fails the load). Pure: the caller reads the YAML (jobs/toolout/inputs.py) and hands the
mapping in.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, cast, get_args

Kind = Literal["explicit_breakpoints", "automatic_prefix", "prefix_units", "none"]
KINDS: tuple[Kind, ...] = get_args(Kind)

_TOP_KEYS = {"name", "kind", "as_of", "source", "notes", "parameters", "prices"}
_REQUIRED_TOP = {"name", "kind", "as_of", "source", "prices"}
_SOURCE_KEYS = {"url", "title"}
_PRICE_TABLE_KEYS = {"as_of", "source", "models"}
_PRICE_KEYS = {"input", "output", "cache_read", "cache_write"}
_COMMON_PARAMS = {"min_tokens", "ttl_seconds", "refresh_on_read"}
_KIND_PARAMS: dict[str, set[str]] = {
    "explicit_breakpoints": _COMMON_PARAMS
    | {"max_breakpoints", "lookback_blocks", "write_multiplier", "read_multiplier"},
    "automatic_prefix": _COMMON_PARAMS | {"step_tokens", "discount"},
    "prefix_units": _COMMON_PARAMS | {"unit_tokens", "output_cached"},
    "none": set(),
}
_REL_TOLERANCE = (
    1e-9  # a published price and its rule agree to float precision, or the file is wrong
)


class CacheModelError(ValueError):
    """A bad cache-model file: names the file, the key and the problem in one line."""

    def __init__(self, origin: str, key: str, problem: str) -> None:
        super().__init__(f"{origin}: {key}: {problem}")
        self.origin = origin
        self.key = key
        self.problem = problem


class UnknownPriceError(KeyError):
    """No price for a model under a cache model: accounting fails closed instead of using 0."""

    def __init__(self, cache_model: str, model: str, priced: tuple[str, ...]) -> None:
        super().__init__(
            f"no price for model {model!r} in cache model {cache_model!r} "
            f"(priced: {', '.join(priced) or 'none'}); add it to the cache model's file"
        )
        self.cache_model = cache_model
        self.model = model

    def __str__(self) -> str:  # KeyError would quote the whole message
        return str(self.args[0])


@dataclass(frozen=True)
class Source:
    """The provider page a file follows."""

    url: str
    title: str


@dataclass(frozen=True)
class ModelPrices:
    """USD per million tokens, resolved by the rule (cache_write = input without a write fee)."""

    input: float  # uncached input (a cache miss)
    output: float
    cache_read: float  # a cache hit
    cache_write: float  # a token written to the cache (explicit_breakpoints only bills it)


@dataclass(frozen=True)
class CacheModel:
    """One provider family's caching rule and prices, as of a date."""

    name: str
    kind: Kind
    as_of: dt.date
    source: Source
    prices_as_of: dt.date
    prices_source: Source
    prices: dict[str, ModelPrices]
    min_tokens: dict[str, int]  # per priced model: the smallest cacheable prefix
    ttl_seconds: float | None = None  # None: entries never expire in the model
    refresh_on_read: bool = True
    step_tokens: int = 1  # automatic_prefix: hits in multiples of this
    unit_tokens: int = 1  # prefix_units: the fixed-interval grid
    output_cached: bool = False  # prefix_units: the end of a model output is a hit position
    max_breakpoints: int = 0  # explicit_breakpoints
    lookback_blocks: int = 0  # explicit_breakpoints
    notes: str = field(default="", compare=False)

    @property
    def models(self) -> tuple[str, ...]:
        return tuple(sorted(self.prices))

    def prices_for(self, model: str) -> ModelPrices:
        """The model's prices; an unpriced model raises `UnknownPriceError` (never 0)."""
        try:
            return self.prices[model]
        except KeyError:
            raise UnknownPriceError(self.name, model, self.models) from None

    def min_tokens_for(self, model: str) -> int:
        self.prices_for(model)
        return self.min_tokens[model]


def parse_cache_model(data: Mapping[str, Any], *, origin: str = "<mapping>") -> CacheModel:
    """A `CacheModel` from one parsed file; `origin` (the file) prefixes every error."""
    p = _Parser(origin)
    p.keys(data, "", _TOP_KEYS, _REQUIRED_TOP)
    name = p.text(data["name"], "name")
    kind_raw = p.text(data["kind"], "kind")
    if kind_raw not in KINDS:
        raise CacheModelError(origin, "kind", f"{kind_raw!r} is not one of {', '.join(KINDS)}")
    kind: Kind = kind_raw
    notes = p.text(data["notes"], "notes", allow_empty=True) if "notes" in data else ""
    params_raw = data.get("parameters", {})
    params = p.mapping(params_raw if params_raw is not None else {}, "parameters")
    allowed = _KIND_PARAMS[kind]
    required = set() if kind == "none" else (allowed - {"refresh_on_read", "discount"})
    if kind == "automatic_prefix":
        required.add("discount")
    p.keys(params, "parameters", allowed, required)

    prices_raw = p.mapping(data["prices"], "prices")
    p.keys(prices_raw, "prices", _PRICE_TABLE_KEYS, _PRICE_TABLE_KEYS)
    models_raw = p.mapping(prices_raw["models"], "prices.models")
    if not models_raw:
        raise CacheModelError(origin, "prices.models", "no model is priced")
    models = tuple(str(m) for m in models_raw)

    ttl = _ttl(p, params) if kind != "none" else None
    model = CacheModel(
        name=name,
        kind=kind,
        as_of=p.date(data["as_of"], "as_of"),
        source=p.source(data["source"], "source"),
        prices_as_of=p.date(prices_raw["as_of"], "prices.as_of"),
        prices_source=p.source(prices_raw["source"], "prices.source"),
        prices=_prices(p, kind, params, models_raw),
        min_tokens=(
            _per_model_int(p, params, "min_tokens", models)
            if kind != "none"
            else dict.fromkeys(models, 0)
        ),
        ttl_seconds=ttl,
        refresh_on_read=p.flag(params.get("refresh_on_read", True), "parameters.refresh_on_read"),
        step_tokens=p.count(params.get("step_tokens", 1), "parameters.step_tokens", minimum=1),
        unit_tokens=p.count(params.get("unit_tokens", 1), "parameters.unit_tokens", minimum=1),
        output_cached=p.flag(params.get("output_cached", False), "parameters.output_cached"),
        max_breakpoints=p.count(
            params.get("max_breakpoints", 0),
            "parameters.max_breakpoints",
            minimum=1 if kind == "explicit_breakpoints" else 0,
        ),
        lookback_blocks=p.count(params.get("lookback_blocks", 0), "parameters.lookback_blocks"),
        notes=notes,
    )
    return model


def _ttl(p: _Parser, params: Mapping[str, Any]) -> float | None:
    raw = params["ttl_seconds"]
    if raw is None:
        return None
    return p.number(raw, "parameters.ttl_seconds", positive=True)


def _per_model_int(
    p: _Parser, params: Mapping[str, Any], key: str, models: tuple[str, ...]
) -> dict[str, int]:
    raw = params[key]
    where = f"parameters.{key}"
    if not isinstance(raw, Mapping):
        value = p.count(raw, where)
        return dict.fromkeys(models, value)
    _cover(p, raw, where, models)
    return {m: p.count(raw[m], f"{where}.{m}") for m in models}


def _cover(p: _Parser, raw: Mapping[str, Any], where: str, models: tuple[str, ...]) -> None:
    """A per-model parameter names exactly the priced models (a typo must not fall through)."""
    extra = sorted(set(map(str, raw)) - set(models))
    missing = sorted(set(models) - set(map(str, raw)))
    if extra:
        raise CacheModelError(p.origin, f"{where}.{extra[0]}", "not a priced model")
    if missing:
        raise CacheModelError(p.origin, f"{where}.{missing[0]}", "missing for a priced model")


def _prices(
    p: _Parser, kind: Kind, params: Mapping[str, Any], models_raw: Mapping[str, Any]
) -> dict[str, ModelPrices]:
    models = tuple(str(m) for m in models_raw)
    discounts: dict[str, float] = {}
    if kind == "automatic_prefix":
        raw = params["discount"]
        if isinstance(raw, Mapping):
            _cover(p, raw, "parameters.discount", models)
            discounts = {m: p.fraction(raw[m], f"parameters.discount.{m}") for m in models}
        else:
            discounts = dict.fromkeys(models, p.fraction(raw, "parameters.discount"))
    write_x = read_x = 1.0
    if kind == "explicit_breakpoints":
        write_x = p.number(params["write_multiplier"], "parameters.write_multiplier")
        read_x = p.number(params["read_multiplier"], "parameters.read_multiplier")

    resolved: dict[str, ModelPrices] = {}
    for m in models:
        where = f"prices.models.{m}"
        entry = p.mapping(models_raw[m], where)
        p.keys(entry, where, _PRICE_KEYS, {"input", "output"})
        values = {k: p.number(entry[k], f"{where}.{k}") for k in entry}
        base = values["input"]
        rule_read: float | None
        if kind == "explicit_breakpoints":
            rule_read, rule_write = base * read_x, base * write_x
        elif kind == "automatic_prefix":
            rule_read, rule_write = base * (1.0 - discounts[m]), base
        elif kind == "prefix_units":
            rule_read, rule_write = None, base  # the table states the hit price
            if "cache_read" not in values:
                raise CacheModelError(p.origin, f"{where}.cache_read", "required for prefix_units")
        else:
            if "cache_read" in values or "cache_write" in values:
                key = "cache_read" if "cache_read" in values else "cache_write"
                raise CacheModelError(p.origin, f"{where}.{key}", "a model without a cache")
            rule_read, rule_write = base, base
        read = _agree(p, f"{where}.cache_read", values.get("cache_read"), rule_read)
        write = _agree(p, f"{where}.cache_write", values.get("cache_write"), rule_write)
        resolved[m] = ModelPrices(
            input=base, output=values["output"], cache_read=read, cache_write=write
        )
    return resolved


def _agree(p: _Parser, where: str, stated: float | None, rule: float | None) -> float:
    if stated is None:
        assert rule is not None  # prefix_units requires cache_read above
        return float(f"{rule:.12g}")  # 0.3 * (1 - 0.9) is 0.03, not 0.029999999999999992
    if rule is not None and not math.isclose(stated, rule, rel_tol=_REL_TOLERANCE, abs_tol=1e-12):
        raise CacheModelError(p.origin, where, f"{stated} disagrees with the rule's {rule:.10g}")
    return stated


@dataclass(frozen=True)
class _Parser:
    """Typed readers that name the offending key."""

    origin: str

    def fail(self, key: str, problem: str) -> CacheModelError:
        return CacheModelError(self.origin, key, problem)

    def keys(
        self, data: Mapping[str, Any], where: str, allowed: set[str], required: set[str]
    ) -> None:
        prefix = f"{where}." if where else ""
        for key in data:
            if key not in allowed:
                raise self.fail(
                    f"{prefix}{key}",
                    f"unknown key (allowed: {', '.join(sorted(allowed)) or 'none'})",
                )
        for key in sorted(required):
            if key not in data:
                raise self.fail(f"{prefix}{key}", "required")

    def mapping(self, raw: Any, key: str) -> Mapping[str, Any]:
        if not isinstance(raw, Mapping):
            raise self.fail(key, f"must be a mapping, got {type(raw).__name__}")
        return cast(Mapping[str, Any], raw)

    def text(self, raw: Any, key: str, *, allow_empty: bool = False) -> str:
        if not isinstance(raw, str) or (not allow_empty and not raw.strip()):
            raise self.fail(key, f"must be a non-empty string, got {raw!r}")
        return raw

    def date(self, raw: Any, key: str) -> dt.date:
        if isinstance(raw, dt.datetime):
            raise self.fail(key, "must be a date (YYYY-MM-DD), not a timestamp")
        if isinstance(raw, dt.date):
            return raw
        if isinstance(raw, str):
            try:
                return dt.date.fromisoformat(raw)
            except ValueError:
                pass
        raise self.fail(key, f"must be a date (YYYY-MM-DD), got {raw!r}")

    def source(self, raw: Any, key: str) -> Source:
        data = self.mapping(raw, key)
        self.keys(data, key, _SOURCE_KEYS, _SOURCE_KEYS)
        url = self.text(data["url"], f"{key}.url")
        if not url.startswith("https://"):
            raise self.fail(f"{key}.url", f"must be an https:// URL, got {url!r}")
        return Source(url=url, title=self.text(data["title"], f"{key}.title"))

    def number(self, raw: Any, key: str, *, positive: bool = False) -> float:
        if isinstance(raw, bool) or not isinstance(raw, int | float) or not math.isfinite(raw):
            raise self.fail(key, f"must be a finite number, got {raw!r}")
        if raw < 0 or (positive and raw == 0):
            raise self.fail(key, f"must be {'> 0' if positive else '>= 0'}, got {raw!r}")
        return float(raw)

    def fraction(self, raw: Any, key: str) -> float:
        value = self.number(raw, key)
        if value > 1:
            raise self.fail(key, f"must be a fraction in [0, 1], got {raw!r}")
        return value

    def count(self, raw: Any, key: str, *, minimum: int = 0) -> int:
        if isinstance(raw, bool) or not isinstance(raw, int) or raw < minimum:
            raise self.fail(key, f"must be an integer >= {minimum}, got {raw!r}")
        return raw

    def flag(self, raw: Any, key: str) -> bool:
        if not isinstance(raw, bool):
            raise self.fail(key, f"must be true or false, got {raw!r}")
        return raw
