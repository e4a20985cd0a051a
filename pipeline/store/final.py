"""The final-attempt rule, stated once for the sweep (resume, outcome counts) and the jobs.

A unit (`UnitKey`: config_id, arm, execution_group, repeat) may have several attempts; its
outcome is the row with the highest `attempt`. Earlier attempts are neither outcomes nor
missing. The sweep never writes two rows with one key and attempt, nor a row without an
attempt number or a validity verdict, so either is a corrupt run directory (RunDirError that
names the fix), never a tie to break.
"""

from __future__ import annotations

import polars as pl

from pipeline.store.reader import RunDirError
from pipeline.study import UnitKey

KEY: tuple[str, ...] = UnitKey._fields
"""The columns of a unit's key."""


def final_rows(rows: pl.LazyFrame) -> pl.DataFrame:
    """The rows that are their unit's final attempt, in ``rows``' order (collected).

    ``rows`` needs the key columns, ``attempt``, ``valid`` and ``row_id``; every other column
    is passed through. Raises RunDirError on a duplicated (key, attempt) or a null attempt or
    validity verdict.
    """
    frame = rows.collect()
    _check(frame)
    return frame.filter(pl.col("attempt") == pl.col("attempt").max().over(KEY))


def _check(frame: pl.DataFrame) -> None:
    unverdicted = frame.filter(pl.col("attempt").is_null() | pl.col("valid").is_null())
    if unverdicted.height:
        row_id = unverdicted.item(0, "row_id")
        raise RunDirError(
            f"row {row_id} has no attempt number or validity verdict; the rows part is corrupt"
        )
    duplicated = (
        frame.group_by(*KEY, "attempt")
        .agg(pl.len().alias("rows"))
        .filter(pl.col("rows") > 1)
        .sort(*KEY, "attempt")
    )
    if duplicated.height:
        first = duplicated.row(0, named=True)
        key = UnitKey(*(first[name] for name in KEY))
        raise RunDirError(
            f"two rows share {key} attempt {first['attempt']}; the run dir holds a duplicated "
            "part: delete the later copy from rows/ and the study's table folders, then resume"
        )
