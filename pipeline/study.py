"""The Study interface: what a study gives the engine, and the values they exchange.

The engine (`pipeline/sweep`, `pipeline/store`, `pipeline/endpoints`) drives any study through
this module and imports no study package (import-linter holds that line). A study is two
objects:

- a `StudyDefinition`, registered by name (`pipeline.studies`), that knows the study's tables,
  its default panel and its analysis, as two members with one meaning for every study:
  `analyze` runs the jobs and writes the analysis outputs, `render` draws the report from those
  outputs alone. When to run which (the nothing-ran report of a run without rows, analysing
  first a run never analysed, refusing outputs older than the tables) is decided once, for
  every study, by the registry. It needs no config, so `query`, `analyze` and `report` work
  from a run directory alone. Its `name` is the only place the study's name is written. The
  CLI resolves it once and hands it down (with the configured study) to the engine and the
  jobs, which never look a study up;
- a configured `Study`, built from the composed `study` config node before anything starts. It
  plans the arms (or policies), says what each endpoint must be probed for, builds the unit
  runner inside each EndpointWorker, says what a lost attempt's row still records and supplies
  the simulated endpoints' model behaviour. It is pickled to the Ray actors, so it is a frozen
  value.

A unit is one attempt of one planned (configuration, arm, execution group, repeat); the engine
owns its key columns, dispatch, retries, budgets, the run directory and the manifest, and it
treats every study alike; it writes the record of a lost attempt (`lost_unit`) the same way
for every study. Pure: this module imports only the chat seam, the validity vocabulary and the
simulated-reply values.
"""

from __future__ import annotations

from array import array
from collections.abc import Collection, Iterator, Mapping, MutableSequence, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, NamedTuple, Protocol, overload, runtime_checkable

from pipeline.chat.messages import ChatClient
from pipeline.config.schema import EndpointConfig
from pipeline.simulated import SimBehaviour
from pipeline.study_validity import infrastructure

Record = dict[str, Any]
ColumnType = Literal["string", "int32", "int64", "float64", "bool", "timestamp"]


class Column(NamedTuple):
    """One column of a table a study owns (the store maps the type to Arrow)."""

    name: str
    type: ColumnType


@dataclass(frozen=True)
class TableSpec:
    """A study table: records of one attempt, committed with that attempt's row (by row_id).

    The engine adds `run_id` and `row_id` as the first two columns; `columns` are the rest.
    """

    name: str
    columns: tuple[Column, ...]
    sort_keys: tuple[str, ...] = ("row_id",)
    # columns an earlier version of the study did not write: a part without them still reads,
    # with nulls there, so an older run directory opens, analyzes and resumes
    added_later: frozenset[str] = frozenset()


class UnitKey(NamedTuple):
    """The experimental unit; every attempt of a unit shares it."""

    config_id: str
    arm: str
    execution_group: int
    repeat: int


@dataclass(frozen=True)
class UnitSpec:
    """One attempt of one planned unit: the columns every study shares."""

    run_id: str
    config_id: str
    model: str
    family: str
    arm: str  # the arm (carrier) or policy a unit runs under
    execution_group: int
    repeat: int
    schedule_position: int
    attempt: int = 0

    @property
    def key(self) -> UnitKey:
        return UnitKey(self.config_id, self.arm, self.execution_group, self.repeat)

    @property
    def row_id(self) -> str:
        return f"{self.config_id}/{self.arm}/g{self.execution_group}/r{self.repeat}/a{self.attempt}"


@dataclass(frozen=True)
class UnitOutcome:
    """What the engine needs of a finished attempt from its study: validity and retry.

    `retryable` marks an infrastructure fault (the engine re-runs the unit as a new attempt);
    a unit invalidated by the arm's own behaviour is never retried. The bill (requests,
    tokens, cost, cache hits) is not here: the engine counts it at the request boundary
    (pipeline/sweep/boundary.py) for every study, so no study computes it.
    """

    valid: bool
    invalid_reason: str | None = None
    retryable: bool = False
    error_detail: str | None = None


# The compact buffer of a column that is never null: 8 (or 4) bytes a value, no Python object
# per value; an array pickles as its bytes, and the sink hands it to Arrow without a copy.
_TYPECODES: Mapping[ColumnType, str] = {"int32": "i", "int64": "q", "float64": "d"}
_ITEMSIZE: Mapping[ColumnType, int] = {"int32": 4, "int64": 8, "float64": 8}


class Columns(Sequence[Record]):
    """A table's records held by column: one list (or array) per column, all of one length.

    What a unit with many records returns instead of a list of dicts (the tool-output study's
    turns: hundreds of thousands per unit at corpus scale). It is a `Sequence[Record]`, so
    anything that reads records still can, but the engine takes its columns as they are: it
    adds `run_id` and `row_id` as two constant columns rather than copying every record, the
    actor pickles one list per column instead of one dict per record, and the sink writes it
    as Arrow columns (pipeline/sweep/sink.py). A numeric column that is never null may be an
    `array.array` (`Columns.buffers`): its values read back as the same ints and floats. Pure:
    no Arrow in an actor.
    """

    __slots__ = ("columns", "length")

    def __init__(self, columns: Mapping[str, MutableSequence[Any]]) -> None:
        lengths = {len(values) for values in columns.values()}
        if len(lengths) > 1:
            raise ValueError(f"columns of unequal length: {sorted(lengths)}")
        self.columns: dict[str, MutableSequence[Any]] = dict(columns)
        self.length = lengths.pop() if lengths else 0

    def __len__(self) -> int:
        return self.length

    @overload
    def __getitem__(self, index: int) -> Record: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[Record]: ...
    def __getitem__(self, index: int | slice) -> Record | Sequence[Record]:
        if isinstance(index, slice):
            return Columns({name: values[index] for name, values in self.columns.items()})
        if not -self.length <= index < self.length:
            raise IndexError(index)
        return {name: values[index] for name, values in self.columns.items()}

    def __iter__(self) -> Iterator[Record]:
        names = list(self.columns)
        for values in zip(*self.columns.values(), strict=True):
            yield dict(zip(names, values, strict=True))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Columns) and self.columns == other.columns

    __hash__ = None  # type: ignore[assignment]  # mutable lists inside

    def __repr__(self) -> str:
        return f"Columns({len(self.columns)} columns x {self.length})"

    def __reduce__(self) -> tuple[type[Columns], tuple[dict[str, MutableSequence[Any]]]]:
        return Columns, (self.columns,)

    @staticmethod
    def buffers(
        columns: Sequence[Column], nullable: Collection[str] = ()
    ) -> dict[str, MutableSequence[Any]]:
        """Empty buffers for `columns`: an array for a numeric column not in `nullable` (it
        must then hold only ints, or floats, never None), a list for every other."""
        out: dict[str, MutableSequence[Any]] = {}
        for column in columns:
            code = _TYPECODES.get(column.type)
            if code is None or column.name in nullable:
                out[column.name] = []
            else:
                buffer = array(code)
                out[column.name] = buffer if buffer.itemsize == _ITEMSIZE[column.type] else []
        return out

    def with_leading(self, constants: Mapping[str, Any]) -> Columns:
        """The same records with `constants` as their first columns (one value each)."""
        leading = {name: [value] * self.length for name, value in constants.items()}
        return Columns({**leading, **self.columns})


@dataclass(frozen=True)
class UnitResult:
    """An attempt's outcome, its own columns of the rows table and its tables' records."""

    outcome: UnitOutcome
    row: Record  # exactly the study's row columns
    tables: Mapping[str, Sequence[Record]] = field(default_factory=dict)


@dataclass(frozen=True)
class UnitContext:
    """What the engine decides for an attempt: its sampling seed and temperature."""

    seed: int
    temperature: float


class UnitRunner(Protocol):
    """Runs units inside an EndpointWorker over its ChatClient (the worker's only network)."""

    @property
    def steps_per_unit(self) -> int | None:
        """Requests of `step_purpose` one unit sends (progress display); None if unknown."""
        ...

    @property
    def step_purpose(self) -> str:
        """The ChatRequest.purpose the progress display counts as a step (carrier: fold)."""
        ...

    @property
    def requests_per_unit(self) -> int | None:
        """Requests one unit sends when nothing fails (the ETA's basis); None if unknown."""
        ...

    async def run(self, spec: UnitSpec, client: ChatClient, context: UnitContext) -> UnitResult:
        """One attempt. Infrastructure faults end as an invalid, retryable outcome, not raised."""
        ...


@dataclass(frozen=True)
class ProbePlan:
    """What each endpoint must be probed for before any unit runs.

    `shapes` maps each arm to the request shapes it sends (`plain`, `schema`); the engine adds
    the endpoint's own (`context_length`, `reasoning_disabled` where reasoning is controlled).
    """

    shapes: Mapping[str, frozenset[str]]
    context_tokens: int  # the largest prompt plus reply any unit sends


@dataclass(frozen=True)
class StudyInputs:
    """What a study's units read, fixed before anything starts and kept in the run directory.

    `files` are written to RUN_DIR/NAME on a new run and must be unchanged on resume; `digest`
    (a SHA-256) goes into the manifest and the study's rows; `label` names the run directory.
    """

    label: str
    digest: str | None = None
    files: Mapping[str, bytes] = field(default_factory=dict)
    record: Mapping[str, Any] = field(default_factory=dict)  # manifest extra.inputs
    warnings: tuple[str, ...] = ()  # one line each, printed before anything starts


@dataclass(frozen=True)
class ProgressLabels:
    """What the progress display calls a unit and a step (carrier: trajectories, folds).

    `priced_requests` and `priced_cost_usd` name the study's own row columns holding work it
    prices without sending (toolout: every replayed request at its cache model's prices);
    the display sums them over collected rows and shows them apart, labelled "priced
    offline", beside what was sent and paid (issue 32 §18). None: the study prices nothing
    it does not send."""

    unit: str = "units"
    step: str = "steps"
    priced_requests: str | None = None
    priced_cost_usd: str | None = None


class Study(Protocol):
    """A configured study: a frozen, picklable value (it is shipped to the Ray actors).

    It carries no name: the definition it was configured by is the study's identity."""

    @property
    def progress_labels(self) -> ProgressLabels: ...

    @property
    def inputs(self) -> StudyInputs: ...

    def arms(self) -> Sequence[str]:
        """The arms (or policies) to plan, in plan order."""
        ...

    def probe_plan(self) -> ProbePlan: ...

    def execution_groups(self, endpoints: Sequence[EndpointConfig]) -> int:
        """How many execution groups each (configuration, arm, repeat) is planned in, on a
        panel of `endpoints`: 1 unless a study splits its work into smaller units (the
        tool-output study's offline replay: shards of the corpus, so a unit's memory is
        bounded by its shard, not by the corpus). A unit's runner reads its share from
        `spec.execution_group`; the groups are consecutive from the config's own."""
        ...

    @property
    def order_matters(self) -> bool:
        """Whether the order units run in can change their results (carrier: carryover).

        The sweep warns about an unclosed schedule only when it does; a deterministic replay
        gives the same result in any order."""
        ...

    @property
    def panel_kinds(self) -> frozenset[str] | None:
        """The panel kinds the study can run on (None: any); others are refused up front."""
        ...

    def runner(self, endpoint: EndpointConfig) -> UnitRunner:
        """Called once per EndpointWorker, for the endpoint it serves; may build caches shared
        by that worker's units."""
        ...

    def lost_row(self, spec: UnitSpec) -> Record:
        """The row columns an attempt whose worker died mid-flight still records (the
        carrier: its inputs and zero counts, as for any attempt that ended before its first
        fold); every other row column is null (`lost_unit`). `NullLostRow`: none."""
        ...

    def sim_models(self, endpoints: Sequence[tuple[str, str]], seed: int) -> list[SimBehaviour]:
        """One simulated model per (config_id, served model) for `+panel=sim`."""
        ...


class OneGroup:
    """`Study.execution_groups` for a study whose units never split: one group per sweep."""

    def execution_groups(self, endpoints: Sequence[EndpointConfig]) -> int:
        return 1


class NullLostRow:
    """`Study.lost_row` for a study whose lost attempt records null in every row column."""

    def lost_row(self, spec: UnitSpec) -> Record:
        return {}


class StudyDefaults(OneGroup, NullLostRow):
    """The `Study` members most studies leave as they are, so a new study writes only what is
    its own (docs/new-study.md): one execution group, a lost attempt's row all null, any panel,
    units whose order may matter (the safe guess: the sweep then checks its schedule) and the
    progress line's plain words."""

    panel_kinds: frozenset[str] | None = None
    order_matters: bool = True

    @property
    def progress_labels(self) -> ProgressLabels:
        return ProgressLabels()


class DefinitionDefaults:
    """The `StudyDefinition` members most studies leave as they are: the embedded local panel
    by default, no paired arm contrasts, and no pages of its own (the generic unit page)."""

    default_panel: str | None = None
    uses_contrasts: bool = False
    pages: StudyPages | None = None


def lost_unit(row_columns: Sequence[Column], known: Mapping[str, Any], detail: str) -> UnitResult:
    """The record of an attempt whose worker died mid-flight, for every study alike: invalid
    and retryable (`infrastructure:worker_lost`, the unit runs again as a new attempt), its row
    columns null but those the study still knows (`known`, its `Study.lost_row`), no table
    records."""
    outcome = UnitOutcome(False, infrastructure("worker_lost"), True, error_detail=detail)
    return UnitResult(outcome, {column.name: known.get(column.name) for column in row_columns})


@runtime_checkable
class StudyDefinition(Protocol):
    """A study as registered: its tables and its analysis, without any config.

    A definition may also have `pages`, a `StudyPages` (or None): its own views in the viewer.
    It is optional, so it is no member here; the viewer reads it with `getattr` and shows a
    definition without one through the generic unit page.

    It may also have `decide(run_dir, layout, options) -> StudyDecision` (pipeline.decision):
    what its run says a user should do, from its analysis outputs alone. Also optional, read
    with `getattr` by `python -m pipeline decide`, which refuses a run of a study without it.

    And `describe() -> ArmDescriptions`: what each of its arms (or policies) is, in one line,
    for every arm it can plan, read with `getattr` by `python -m pipeline list` and by the
    viewer (legends and tooltips); a study without it shows its arms by name alone."""

    @property
    def name(self) -> str:
        """`study=NAME`, the manifest's `study` and conf/study/NAME.yaml's file name."""
        ...

    @property
    def default_panel(self) -> str | None:
        """The panel `sweep` uses when none is given (None: the embedded local panel); known
        before the config is composed, so the one composition includes it."""
        ...

    @property
    def row_columns(self) -> tuple[Column, ...]:
        """The study's own columns of the rows table (after the shared ones)."""
        ...

    @property
    def tables(self) -> tuple[TableSpec, ...]: ...

    def configure(self, node: Mapping[str, Any]) -> Study:
        """Convert the composed `study` node; raise ConfigError in one line on bad input."""
        ...

    def analyze(self, run_dir: Path, analysis: Any, layout: Any) -> None:
        """Every job of the study, writing the analysis outputs under RUN_DIR/analysis/; no
        report.

        `analysis` is the run's AnalysisConfig (contrasts, bootstrap), `layout` its Layout
        (pipeline.store.layout; `Any` here because this module reads no tables). Called only
        for a run with rows: the registry (pipeline.studies) writes the report of a run in
        which nothing ran, for every study alike.
        """
        ...

    def render(self, run_dir: Path, layout: Any) -> Path:
        """The run's report.md (and its figures) from the analysis outputs alone; returns
        its path. It never analyzes: the registry runs `analyze` first for a run with no
        record of an analysis and refuses outputs older than the tables
        (pipeline.store.analysis_inputs).
        Called only for a run with rows (as `analyze`).
        """
        ...

    @property
    def uses_contrasts(self) -> bool:
        """Whether `analysis.contrasts` (paired arm contrasts such as q_vs_j) mean anything to
        this study; `analyze --contrasts` is refused for a study where they do not."""
        ...


class ArmDescriptions(NamedTuple):
    """A study's arms and what each is (a definition's optional `describe()`).

    `kind` is what the study calls them, plural (`arms`, `policies`): the `list` command's
    kind and the viewer's legend title. `by_name` maps every arm the study can plan, pseudo
    arms included (an oracle, a visibility check), to its one-line description."""

    kind: str
    by_name: Mapping[str, str]


class UnitPage(NamedTuple):
    """A study's view of one unit: the template that draws it and what that template reads
    as `u` (the viewer adds the run, the row, its attempts and its requests)."""

    template: str
    context: Mapping[str, Any]


class RunSection(NamedTuple):
    """A page of a run that only its study has (the carrier's fixture chunks, which its unit
    pages link to): the export shows it once, as the section `anchor`, after the units."""

    anchor: str
    title: str
    template: str
    context: Mapping[str, Any]


class StudyPages(Protocol):
    """What a study shows in the viewer (`pipeline view`) beyond the pages every study shares.

    The viewer names no study: it renders these with its own templates in reach, so a study's
    template may `{% include "unit_header.html" %}`. `run` is the viewer's open run and `links`
    its links (server URLs or the export's anchors); they are `Any` here because this module
    reads no tables.

    It may also have `overview_sections(run, links) -> Sequence[RunSection]`: sections the run
    overview shows after its counts, each drawn by the study's template (the carrier's facts
    most often lost). Optional, read with `getattr`: a study without it adds nothing there. The
    overview is drawn on every visit, so a section bounds its own reads."""

    @property
    def templates(self) -> Path:
        """The folder of the study's Jinja templates (their names must not be the viewer's)."""
        ...

    @property
    def preload(self) -> Sequence[str]:
        """The study's tables its unit pages read by row: the export holds them in memory."""
        ...

    def unit(self, run: Any, row: Mapping[str, Any], params: Mapping[str, str]) -> UnitPage:
        """One unit's page; `params` are the request's (a view to show, such as `shape`)."""
        ...

    def run_sections(self, run: Any, links: Any) -> Sequence[RunSection]:
        """The run's pages only this study has, in the order the export shows them."""
        ...
