"""The run-directory error, in a leaf so the config can raise it without loading the store.

`pipeline.config` reads a run directory's recorded config (`config_from_manifest`) and refuses
a key it does not know with this error; the store (which loads Polars and Arrow) re-exports it
under the same name, so every reader of a run directory raises and catches the one class.
"""

from __future__ import annotations

from pipeline.usererror import UserError


class RunDirError(UserError):
    """A run directory is missing, corrupt or incompatible; the message says how to fix it."""
