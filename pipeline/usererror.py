"""Errors a user can fix from the message alone; the CLI prints them as one line.

Every such error class derives from UserError (ConfigError registers itself here), so the CLI
can print it without a traceback, while bugs still crash loudly.
"""

from __future__ import annotations


class UserError(Exception):
    """Bad input: the message says what was wrong and how to fix it."""
