"""Strict conversion of plain mappings into frozen dataclasses.

Why: Hydra lets a misspelt key through as a new node; a misspelt key deep in the code silently
becomes a default. Converting once, at the entry point, and rejecting every unknown key turns
that into an error that names the key and the valid alternatives. The same holds for values: a
`Literal[...]` field accepts only its choices, and the dataclasses check their ranges in
`__post_init__` (with `check_range`), so a bad value fails here, before anything starts.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from collections.abc import Mapping
from typing import Any, Literal, TypeVar, get_args, get_origin

from pipeline.usererror import UserError

T = TypeVar("T")


class ConfigError(UserError, ValueError):
    """A configuration value or key is wrong; the message says what and how to fix it."""


def check_range(
    key: str,
    value: float | None,
    *,
    at_least: float | None = None,
    above: float | None = None,
    at_most: float | None = None,
) -> None:
    """Raise a one-line ConfigError naming `key`, `value` and the allowed range; None passes.

    `at_least`/`at_most` are inclusive bounds, `above` an exclusive lower bound. A value must
    also be finite: NaN passes no comparison's intent and an infinity (YAML's `.inf`, or
    `1e309`) is no number a config means (issue 32 §7: `budget.usd=inf` was "no limit").
    """
    if value is None:
        return
    low_ok = (at_least is None or value >= at_least) and (above is None or value > above)
    finite = math.isfinite(value)
    if finite and low_ok and (at_most is None or value <= at_most):
        return
    if at_least is not None and at_most is not None:
        allowed = f"between {at_least:g} and {at_most:g}"
    elif above is not None:
        allowed = f"greater than {above:g}"
    elif at_least is not None:
        allowed = f"at least {at_least:g}"
    else:
        allowed = f"at most {at_most:g}"
    number = "" if finite else "a finite number "
    raise ConfigError(f"{key} must be {number}{allowed}, not {value!r}")


def build(cls: type[T], data: Any, path: str = "") -> T:
    """Build dataclass `cls` from `data`, rejecting unknown keys and wrong types."""
    if not isinstance(data, Mapping):
        raise ConfigError(f"{path or 'config'}: expected a mapping, got {type(data).__name__}")
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    unknown = sorted(set(data) - set(fields))
    if unknown:
        where = f"{path}." if path else ""
        raise ConfigError(
            f"unknown config key {where}{unknown[0]!s}; valid keys here are: "
            f"{', '.join(sorted(fields))}"
        )
    kwargs: dict[str, Any] = {}
    for name, field in fields.items():
        sub = f"{path}.{name}" if path else name
        if name in data:
            kwargs[name] = _coerce(hints[name], data[name], sub)
        elif field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING:
            raise ConfigError(f"missing required config key {sub}")
    return cls(**kwargs)


def _coerce(tp: Any, value: Any, path: str) -> Any:  # noqa: PLR0911, PLR0912 - one branch per type form
    origin = get_origin(tp)
    if origin is Literal:
        return _one_of(get_args(tp), value, path)
    if origin in (typing.Union, types.UnionType):
        args = get_args(tp)
        if value is None and type(None) in args:
            return None
        errors = []
        for arg in args:
            if arg is type(None):
                continue
            try:
                return _coerce(arg, value, path)
            except ConfigError as exc:
                errors.append(str(exc))
        raise ConfigError(errors[0] if errors else f"{path}: invalid value {value!r}")
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        return build(tp, value, path)
    if origin is tuple:
        args = get_args(tp)
        if not isinstance(value, list | tuple):
            raise ConfigError(f"{path}: expected a list, got {value!r}")
        inner = args[0] if args else Any
        return tuple(_coerce(inner, v, f"{path}[{i}]") for i, v in enumerate(value))
    if origin in (dict, Mapping) or tp is dict:
        if not isinstance(value, Mapping):
            raise ConfigError(f"{path}: expected a mapping, got {value!r}")
        args = get_args(tp)
        vt = args[1] if len(args) == 2 else Any
        return {str(k): _coerce(vt, v, f"{path}.{k}") for k, v in value.items()}
    if tp is Any:
        return value
    if tp is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if tp is bool and not isinstance(value, bool):
        raise ConfigError(f"{path}: expected true or false, got {value!r}")
    if tp is int and (isinstance(value, bool) or not isinstance(value, int)):
        raise ConfigError(f"{path}: expected an integer, got {value!r}")
    if isinstance(tp, type) and not isinstance(value, tp):
        raise ConfigError(f"{path}: expected {tp.__name__}, got {value!r}")
    return value


def _one_of(choices: tuple[Any, ...], value: Any, path: str) -> Any:
    # Compare types too: YAML's `1` must not pass as `True`, nor `true` as `1`.
    if any(type(value) is type(c) and value == c for c in choices):
        return value
    names = ", ".join(sorted(str(c) for c in choices))
    raise ConfigError(f"{path or 'value'}: {value!r} is not one of {names}")
