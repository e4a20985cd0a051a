"""Trace compression (seed 002, issue 12 part 2): the pure core.

Items (real traces from parsed corpus JSON, a user's JSONL, synthetic ones with planted
facts), length bands and a stratified sampler, fact extraction, summariser arms as data with
their greedy requests, the metrics of one summary, and the decoding checks. No I/O: the glue
reads files and calls models; everything here is a function of values.

Entry points: `items.load_real(parsed, path)`, `items.from_jsonl(text, name)`,
`generator.generate(seed, length)`, `bands.stratified_sample(items, n, seed)`,
`arms.load_arm(spec)` / `arms.load_arms(specs)`, `arms.build_request(arm, trace)`,
`arms.finish(arm, trace, model_text)`, `metrics.score(trace, summary)`,
`greedy.inspect_body(body)`, `greedy.compare_runs(a, b)`.
"""

from pipeline.traces.compression.arms import (
    SUMMARY_SEED,
    Arm,
    ArmSpec,
    Sampling,
    SummaryRequest,
    build_request,
    finish,
    load_arm,
    load_arms,
    select,
)
from pipeline.traces.compression.bands import (
    DEFAULT_EDGES,
    BandCount,
    Sample,
    band_of,
    labels,
    stratified_sample,
)
from pipeline.traces.compression.facts import KINDS, Fact, FactKind, extract
from pipeline.traces.compression.generator import (
    GENERATOR_VERSION,
    SyntheticTrace,
    band_lengths,
    generate,
)
from pipeline.traces.compression.greedy import (
    DecodingCheck,
    RepeatCheck,
    compare_runs,
    inspect_body,
)
from pipeline.traces.compression.items import (
    TraceFileError,
    TraceItem,
    dedupe,
    from_jsonl,
    from_openhands,
    from_openhands_jsonl,
    from_reasoning_fixture,
    from_swe_agent,
    load_real,
    origin_of,
)
from pipeline.traces.compression.metrics import COLUMNS, Record, score

__all__ = [
    "COLUMNS",
    "DEFAULT_EDGES",
    "GENERATOR_VERSION",
    "KINDS",
    "SUMMARY_SEED",
    "Arm",
    "ArmSpec",
    "BandCount",
    "DecodingCheck",
    "Fact",
    "FactKind",
    "Record",
    "RepeatCheck",
    "Sample",
    "Sampling",
    "SummaryRequest",
    "SyntheticTrace",
    "TraceFileError",
    "TraceItem",
    "band_lengths",
    "band_of",
    "build_request",
    "compare_runs",
    "dedupe",
    "extract",
    "finish",
    "from_jsonl",
    "from_openhands",
    "from_openhands_jsonl",
    "from_reasoning_fixture",
    "from_swe_agent",
    "generate",
    "inspect_body",
    "labels",
    "load_arm",
    "load_arms",
    "load_real",
    "origin_of",
    "score",
    "select",
    "stratified_sample",
]
