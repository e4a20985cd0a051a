"""Where the studies are registered: `[tool.foldsweep.studies]` in the checkout's pyproject.toml.

One line a study, `NAME = "module:ATTRIBUTE"`, so adding a study edits pyproject.toml (its
registration and its import contract) and the docs, never code under `pipeline/` or `jobs/`
(docs/new-study.md). The table is read, not installed metadata: a new line counts without a
reinstall, the same way conf/study/NAME.yaml does.
"""

from __future__ import annotations

import tomllib
from functools import cache
from pathlib import Path

from pipeline.usererror import UserError

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"
TABLE = "[tool.foldsweep.studies]"


class StudyRegistrationError(UserError):
    """A definition that cannot be registered: a taken name, or not a StudyDefinition."""


@cache
def entries(path: Path = PYPROJECT) -> dict[str, tuple[str, str]]:
    """name -> (module, attribute) of every registered study; one line on a malformed table."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise StudyRegistrationError(
            f"cannot read {path} ({exc.strerror or exc}): the studies are registered in its "
            f"{TABLE} table; run foldsweep from its checkout"
        ) from None
    except tomllib.TOMLDecodeError as exc:
        raise StudyRegistrationError(f"{path} is not valid TOML ({exc}); fix it") from None
    table = data.get("tool", {}).get("foldsweep", {}).get("studies", {})
    if not isinstance(table, dict):
        raise StudyRegistrationError(f"{path}: {TABLE} must be a table of NAME = 'module:ATTR'")
    found: dict[str, tuple[str, str]] = {}
    for name, target in table.items():
        module, colon, attribute = (
            target.partition(":") if isinstance(target, str) else ("", "", "")
        )
        if not (colon and module and attribute):
            raise StudyRegistrationError(
                f"{path} {TABLE}: {name} = {target!r} is not 'module:ATTRIBUTE' "
                f'(e.g. {name} = "examples.{name}:DEFINITION")'
            )
        found[name] = (module, attribute)
    return found
