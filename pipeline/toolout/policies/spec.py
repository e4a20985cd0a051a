"""Reading a policy file's mapping: one-line errors naming the policy, the place and the problem.

Schema first (STYLE habit 6): unknown keys are rejected with the allowed ones listed, and a
value of the wrong type (a bool where an int belongs, a string where a list belongs) fails
here, before any replay starts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pipeline.usererror import UserError


class PolicyConfigError(UserError, ValueError):
    """A policy file is wrong: one line naming the policy, the rule index and the problem."""


def check_keys(where: str, data: Mapping[str, Any], allowed: Iterable[str]) -> None:
    """Reject unknown keys, naming them and the allowed ones."""
    allowed = set(allowed)
    unknown = sorted(str(k) for k in set(data) - allowed)
    if unknown:
        raise PolicyConfigError(
            f"{where}: unknown key(s) {', '.join(unknown)}; allowed: {', '.join(sorted(allowed))}"
        )


def text(where: str, data: Mapping[str, Any], key: str, default: str = "") -> str:
    value = data.get(key, default)
    if not isinstance(value, str):
        raise PolicyConfigError(f"{where}: {key} must be a string, not {value!r}")
    return value


def flag(where: str, data: Mapping[str, Any], key: str, default: bool = False) -> bool:
    value = data.get(key, default)
    if not isinstance(value, bool):
        raise PolicyConfigError(f"{where}: {key} must be true or false, not {value!r}")
    return value


def count(where: str, data: Mapping[str, Any], key: str, default: int, *, at_least: int) -> int:
    """An integer >= at_least (a bool is not an integer here)."""
    value = data.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < at_least:
        raise PolicyConfigError(f"{where}: {key} must be an integer >= {at_least}, not {value!r}")
    return value


def names(where: str, data: Mapping[str, Any], key: str) -> tuple[str, ...]:
    """A list of non-empty strings (globs or names)."""
    value = data.get(key, [])
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) and v for v in value):
        raise PolicyConfigError(f"{where}: {key} must be a list of non-empty strings")
    return tuple(value)
