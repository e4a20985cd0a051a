"""The tables of one run directory: the engine's (rows, events, plan) joined with a study's.

A run directory holds one study's run, so its layout is a function of the study alone
(`layout_for`): the rows table is the shared columns plus the study's own, and each study
table is committed in the same batch as the rows it belongs to (see pipeline.store.parts).
Readers and writers take the layout explicitly; nothing in the store names a study.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pyarrow as pa

from pipeline.store.schemas import (
    EVENTS,
    PLAN,
    REQUESTS,
    ROW_KEY,
    ROW_OUTCOME,
    rows_schema,
    study_table_schema,
)
from pipeline.study import Column, TableSpec
from pipeline.usererror import UserError

ROWS_SORT = ("config_id", "arm", "execution_group", "repeat", "attempt")
PLAN_SORT = ("config_id", "execution_group", "repeat", "schedule_position")


class UnknownTable(UserError, KeyError):
    """A table name the run directory's study does not have (a user typo or a bug)."""

    def __str__(self) -> str:
        return str(self.args[0])


@dataclass(frozen=True)
class Layout:
    """Schemas and sort keys of every part table, and which ones commit with a rows batch."""

    schemas: Mapping[str, pa.Schema]  # rows, events and the study's tables (not the plan)
    sort_keys: Mapping[str, tuple[str, ...]]
    children: tuple[str, ...]  # the study's tables: written before rows, in one batch

    @property
    def tables(self) -> tuple[str, ...]:
        return tuple(self.schemas)

    def schema(self, table: str) -> pa.Schema:
        """The schema of `table` (`plan` included); UnknownTable names the valid ones."""
        if table == "plan":
            return PLAN
        try:
            return self.schemas[table]
        except KeyError:
            raise UnknownTable(
                f"unknown table {table!r}; tables are plan, {', '.join(self.schemas)}"
            ) from None

    def sort_key(self, table: str) -> tuple[str, ...]:
        return PLAN_SORT if table == "plan" else self.sort_keys[table]


def layout_for(row_columns: Sequence[Column], tables: Sequence[TableSpec]) -> Layout:
    """The layout of a run of a study with these own row columns and tables."""
    if clash := sorted({c.name for c in row_columns} & {n for n, _ in [*ROW_KEY, *ROW_OUTCOME]}):
        raise ValueError(f"a study's row columns may not be named like shared columns {clash}")
    schemas: dict[str, pa.Schema] = {"rows": rows_schema(row_columns)}
    sort_keys: dict[str, tuple[str, ...]] = {"rows": ROWS_SORT}
    for table in tables:
        if table.name in ("rows", "events", "plan", "requests"):
            raise ValueError(f"a study table may not be called {table.name!r}")
        schemas[table.name] = study_table_schema(table)
        sort_keys[table.name] = table.sort_keys
    schemas["events"] = EVENTS
    sort_keys["events"] = ("seq",)
    # the engine's record of every request, written on its own like events: an attempt the
    # budget cut has requests and no row
    schemas["requests"] = REQUESTS
    sort_keys["requests"] = ("row_id", "session", "position", "attempt_in_request")
    return Layout(schemas, sort_keys, tuple(t.name for t in tables))
