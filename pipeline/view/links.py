"""Where a page links to: URLs of the local server, or anchors inside one exported file.

Pages are rendered by the same templates for both; only this object differs. The export's
anchors carry a units filter in the fragment (`#units?verdict=invalid&reason=R`), which the
page's script applies in the browser, since a file has no server to page for it. In an export
of several runs each run's anchors start with `r{index}-` (`#r1-units`, `#r1-u3`), and the
runs' own pages are `#index`, `#compare` and `#decision`.

A unit page that shows one view of several (a transcript of many) links the others through
`view`: the server's URL, or in an export the anchor of that view's own section, for the
first `views_per_unit` views a unit's pages ask for, and None past that cap (the page then
names the view without a link, and says how many the file holds).
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

    def view(self, run: Run, row_id: str, **params: object) -> str | None:
        """Another view of a unit's page (`transcript=T`); None: the file does not hold it."""
        return self.unit(run, row_id, **params)

    @property
    def views_per_unit(self) -> int | None:
        """How many views of one unit an export holds (None: the server shows every one)."""
        return None

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


View = tuple[tuple[str, str], ...]  # a unit page's parameters, sorted


@dataclass
class ExportLinks(Links):
    """Anchors within the exported file; figures as data: URIs (read through the guard)."""

    unit_ids: dict[tuple[int, str], str] = field(default_factory=dict)  # (run, row_id)
    read_figure: Callable[[Run, str], bytes | None] | None = None
    table_ids: dict[tuple[int, str], str] = field(default_factory=dict)  # cited tables
    several: bool = False  # several runs: anchors carry the run's index
    cap: int = 1  # views per unit (`view`)
    views: dict[str, list[View]] = field(default_factory=dict)  # unit anchor: views linked
    static = True

    def prefix(self, run: Run) -> str:
        """What starts each of the run's anchors."""
        return f"r{run.index}-" if self.several else ""

    def index(self) -> str:
        return "#index" if self.several else "#overview"

    def overview(self, run: Run) -> str:
        return f"#{self.prefix(run)}overview"

    def units(self, run: Run, **params: object) -> str:
        query = urlencode({k: str(v) for k, v in params.items() if v is not None and k != "page"})
        return f"#{self.prefix(run)}units" + (f"?{query}" if query else "")

    def unit(self, run: Run, row_id: str, **params: object) -> str:
        anchor = self.unit_ids.get((run.index, row_id))
        return f"#{anchor}" if anchor else f"#{self.prefix(run)}units"

    def view(self, run: Run, row_id: str, **params: object) -> str | None:
        anchor = self.unit_ids.get((run.index, row_id))
        if anchor is None:
            return None
        wanted = tuple(sorted((k, str(v)) for k, v in params.items() if v is not None))
        kept = self.views.setdefault(anchor, [])
        if wanted not in kept:
            if len(kept) >= self.cap:
                return None
            kept.append(wanted)
        return f"#{anchor}-v{kept.index(wanted)}"

    @property
    def views_per_unit(self) -> int | None:
        return self.cap

    def compare(self, **params: object) -> str:
        return "#compare" if self.several else "#overview"

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
