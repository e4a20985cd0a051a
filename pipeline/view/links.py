"""Where a page links to: URLs of the local server, or anchors inside one exported file.

Pages are rendered by the same templates for both; only this object differs. The export's
anchors carry a units filter in the fragment (`#units?verdict=invalid&reason=R`), which the
page's script applies in the browser, since a file has no server to page for it.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from urllib.parse import quote, urlencode

from pipeline.view.runs import Run


class Links:
    """The server's URLs."""

    static = False

    def index(self) -> str:
        return "/"

    def overview(self, run: Run) -> str:
        return f"/run/{run.index}/"

    def units(self, run: Run, **params: object) -> str:
        query = urlencode({k: str(v) for k, v in params.items() if v is not None})
        return f"/run/{run.index}/units" + (f"?{query}" if query else "")

    def unit(self, run: Run, row_id: str, **params: object) -> str:
        extra = {k: str(v) for k, v in params.items() if v is not None}
        return f"/run/{run.index}/unit?" + urlencode({"row": row_id, **extra})

    def compare(self, **params: object) -> str:
        query = urlencode({k: str(v) for k, v in params.items() if v is not None})
        return "/compare" + (f"?{query}" if query else "")

    def figure(self, run: Run, name: str) -> str | None:
        return f"/run/{run.index}/figure/{quote(name)}"

    def status(self, run: Run) -> str | None:
        """What a running run's overview polls (None: a file, which nothing can refresh)."""
        return f"/run/{run.index}/status"

    def decision(self, **params: object) -> str:
        query = urlencode({k: str(v) for k, v in params.items() if v is not None})
        return "/decision" + (f"?{query}" if query else "")

    def table(self, run: Run, source: str, where: Sequence[tuple[str, str]]) -> str | None:
        """The cited table, filtered to the cited rows (None: not a table the page can show)."""
        if not source.endswith(".parquet"):
            return None
        query = urlencode(list(where))
        return f"/run/{run.index}/table/{quote(source)}" + (f"?{query}" if query else "")

    def table_anchor(self, run: Run, source: str) -> str | None:
        return None


@dataclass
class ExportLinks(Links):
    """Anchors within the exported file; figures as data: URIs (read through the guard)."""

    unit_ids: dict[str, str] = field(default_factory=dict)
    read_figure: Callable[[Run, str], bytes | None] | None = None
    table_ids: dict[tuple[int, str], str] = field(default_factory=dict)  # cited tables
    static = True

    def index(self) -> str:
        return "#overview"

    def overview(self, run: Run) -> str:
        return "#overview"

    def units(self, run: Run, **params: object) -> str:
        query = urlencode({k: str(v) for k, v in params.items() if v is not None and k != "page"})
        return "#units" + (f"?{query}" if query else "")

    def unit(self, run: Run, row_id: str, **params: object) -> str:
        anchor = self.unit_ids.get(row_id)
        return f"#{anchor}" if anchor else "#units"

    def compare(self, **params: object) -> str:
        return "#overview"

    def decision(self, **params: object) -> str:
        return "#decision"

    def table(self, run: Run, source: str, where: Sequence[tuple[str, str]]) -> str | None:
        anchor = self.table_anchor(run, source)
        if anchor is None:
            return None
        query = urlencode(list(where))
        return f"#{anchor}" + (f"?{query}" if query else "")

    def table_anchor(self, run: Run, source: str) -> str | None:
        return self.table_ids.get((run.index, source))

    def status(self, run: Run) -> str | None:
        return None

    def figure(self, run: Run, name: str) -> str | None:
        data = self.read_figure(run, name) if self.read_figure else None
        if data is None:
            return None
        return "data:image/png;base64," + base64.b64encode(data).decode("ascii")
