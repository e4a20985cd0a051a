"""The argument parser every subcommand uses: argument errors become one-line UserErrors."""

from __future__ import annotations

import argparse
from typing import NoReturn

from pipeline.usererror import UserError


class CommandParser(argparse.ArgumentParser):
    """Argument errors become a UserError, so the CLI prints one line like every other."""

    def __init__(self, name: str, description: str | None = None) -> None:
        super().__init__(prog=f"python -m pipeline {name}", description=description)
        self.command = name

    def error(self, message: str) -> NoReturn:
        raise UserError(f"{self.command}: {message}")
