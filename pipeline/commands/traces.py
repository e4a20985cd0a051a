"""`python -m pipeline traces scan PATH ...` and `python -m pipeline traces classify FILE ...`.

`scan` reads reasoning traces (SWE-agent `.traj`, OpenHands events or output JSONL, recorded
provider replies, or the documented `{"id", "text"[, "source"]}` JSONL; folders are walked) and
prints the seed-002 bloat scan: count, length median/p90/p99/max, the share at or above each
band edge, UTF-8 bytes of reasoning per session, and the shares of self-correction, hedging
and repetition (pattern heuristics). `--json` prints one object, `--figures DIR` writes
`trace_lengths.png` and `trace_quality.png`. A file over `--max-file-mb` (64, as
`study.max_file_mb`) is refused unread; a file under a folder that cannot be scanned (a FIFO,
a device, a symlink loop, over the cap, an unrecognised JSON) is one `warning: skipped` line on
stderr and the rest is scanned (issue 32); a file named on the command line is one `error:`.

`classify` classes chat templates offline, no server: a `.jinja` (or any text) file, or a
`.gguf` whose metadata carries the template. It prints each template's class, the fields and
switches it reads, whether it drops tool calls, the shapes it cannot render, and its class per
switch setting. Renders run in a bounded sandbox (time, memory, output size). A text file
that reads no `messages` is not a chat template: one line, exit 2 (issue 32).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from pipeline.commands.args import CommandParser
from pipeline.traces.compression.bands import DEFAULT_EDGES, check_edges, labels
from pipeline.traces.scan import QUALITIES, ScanResult, scan
from pipeline.usererror import UserError


def _scan_parser() -> argparse.ArgumentParser:
    s = CommandParser("traces scan", description="length and quality scan of reasoning traces")
    s.add_argument("paths", nargs="+", type=Path, help="trace files or folders")
    s.add_argument(
        "--edges",
        default=",".join(map(str, DEFAULT_EDGES)),
        help="band edges in characters, comma-separated (default 1000,4000,16000)",
    )
    s.add_argument("--json", action="store_true", help="print one JSON object")
    s.add_argument("--figures", type=Path, help="write the two PNG figures into this folder")
    s.add_argument(
        "--max-file-mb",
        type=float,
        default=64.0,
        help="a trace file over this is refused unread (default 64, as study.max_file_mb)",
    )
    return s


def _classify_parser() -> argparse.ArgumentParser:
    c = CommandParser("traces classify", description="class chat templates offline (no server)")
    c.add_argument("files", nargs="+", type=Path, help=".jinja template files or .gguf weights")
    c.add_argument("--json", action="store_true", help="print one JSON array")
    return c


USAGE = "usage: python -m pipeline traces {scan PATH ... | classify FILE ...} [--json]"


def _edges(text: str) -> tuple[int, ...]:
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise UserError(
            f"traces scan --edges {text!r}: give whole numbers, e.g. 1000,4000"
        ) from None
    return check_edges(values)


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f}%"


def _num(value: object) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:,.0f}"
    return f"{value:,}" if isinstance(value, int) else str(value)


def scan_lines(result: ScanResult, files: int, empty: list[str]) -> list[str]:
    """The human-readable scan (what `traces scan` prints)."""
    s = result.summary()
    per = s["bytes_per_session"]
    assert isinstance(per, dict)
    shares = result.share_at_least
    lines = [
        f"traces: {_num(result.count)} ({_num(result.duplicates_removed)} repeated texts removed) "
        f"in {_num(s['sessions'])} sessions, from {files} files",
        f"length (characters): median {_num(s['median_chars'])}, p90 {_num(s['p90_chars'])}, "
        f"p99 {_num(s['p99_chars'])}, max {_num(s['max_chars'])}; total {_num(s['chars_total'])}",
        "at or above each band edge: "
        + ", ".join(f"{e:,} chars {_pct(shares(e))}" for e in result.edges),
        f"reasoning per session (UTF-8 bytes): median {_num(per['median'])}, "
        f"mean {_num(per['mean'])}, max {_num(per['max'])}",
        "quality (pattern heuristics, docs/traces.md): "
        + ", ".join(f"{q.replace('_', '-')} {_pct(result.quality_share(q))}" for q in QUALITIES),
        "",
        f"{'band':<8} {'traces':>7} {'share':>7} {'self-corr':>9} {'hedging':>8} {'repeat':>7}",
    ]
    for row in result.by_band():
        lines.append(
            f"{row.band:<8} {row.traces:>7} {_pct(row.share):>7} {_pct(row.self_correction):>9} "
            f"{_pct(row.hedging):>8} {_pct(row.repetition):>7}"
        )
    if empty:
        lines += ["", f"files with no trace ({len(empty)}): " + ", ".join(empty)]
    return lines


def _scan(args: argparse.Namespace) -> int:
    from pipeline.studies._trace_files import read_paths
    from pipeline.user_files import MB

    edges = _edges(args.edges)
    if not args.max_file_mb > 0:  # NaN too
        raise UserError(f"traces scan --max-file-mb {args.max_file_mb}: give a size above 0")
    found = read_paths(args.paths, edges, int(args.max_file_mb * MB))
    for skip in found.skipped:
        print(f"warning: skipped {str(skip.path)!r}: {skip.reason}", file=sys.stderr)
    per_file = found.files
    if not per_file and found.skipped:
        raise UserError(
            f"traces scan: no readable trace file; see the {len(found.skipped)} skipped above"
        )
    if not per_file:
        raise UserError("traces scan: no .traj, .jsonl or .json file under the given paths")
    items = [item for _, found in per_file for item in found]
    empty = [str(path) for path, found in per_file if not found]
    result = scan(items, edges)
    if args.figures is not None:
        _figures(result, args.figures)
    if args.json:
        skipped = [{"path": str(s.path), "reason": s.reason} for s in found.skipped]
        summary = {"files": len(per_file), "files_without_traces": empty, "files_skipped": skipped}
        print(json.dumps({**result.summary(), **summary}))
    else:
        print("\n".join(scan_lines(result, len(per_file), empty)))
    return 0


def _figures(result: ScanResult, folder: Path) -> None:
    import dataclasses

    import polars as pl

    from jobs.figures_common import save_figure
    from jobs.traces.scan_figures import SCAN_SCHEMA, length_histogram, quality_by_band

    folder.mkdir(parents=True, exist_ok=True)
    frame = pl.DataFrame([dataclasses.asdict(r) for r in result.records], schema=SCAN_SCHEMA)
    save_figure(
        length_histogram(frame, result.edges), folder / "trace_lengths.png", simulated=False
    )
    save_figure(
        quality_by_band(frame, labels(result.edges)), folder / "trace_quality.png", simulated=False
    )
    print(
        f"figures: {folder / 'trace_lengths.png'}, {folder / 'trace_quality.png'}", file=sys.stderr
    )


def _templates(files: list[Path]) -> tuple[dict[str, str], dict[str, str]]:
    from pipeline.studies.traces import TEMPLATE_DIR, read_template
    from pipeline.traces.visibility.gguf import chat_templates

    texts: dict[str, str] = {}
    sources: dict[str, str] = {}
    for path in files:
        if path.suffix == ".gguf":
            if not path.is_file():
                raise UserError(f"traces classify: {path} is not a file")
            with path.open("rb") as handle:
                found = chat_templates(handle)
            if not found:
                raise UserError(f"traces classify: {path} carries no chat template")
            named = {f"gguf:{path.stem}" + (f".{k}" if k else ""): t for k, t in found.items()}
            source = "gguf"
        else:
            named = {path.stem: read_template(path, "traces classify")}
            source = "shipped" if path.resolve().parent == TEMPLATE_DIR else "user"
        for name, text in named.items():
            if name in texts:
                raise UserError(f"traces classify: two templates are named {name!r}; rename one")
            texts[name], sources[name] = text, source
    return texts, sources


def _join(values: object) -> str:
    return ", ".join(map(str, values)) if isinstance(values, list) else str(values)


def classify_lines(classes: list[dict[str, object]]) -> list[str]:
    lines: list[str] = []
    for c in classes:
        reason = f" ({c['unrenderable_reason']})" if c["unrenderable_reason"] else ""
        lines += [
            f"{c['template']} [{c['source']}, sha256 {str(c['sha256'])[:12]}]: "
            f"{c['class']}{reason}",
            f"  fields read: {_join(c['fields_read']) or '(none found)'}",
            f"  reasoning read from: {_join(c['dialects_read']) or '(none)'}",
            f"  switches read: {_join(c['switches_read']) or '(none)'}",
            f"  drops tool calls: {'yes' if c['tool_calls_dropped'] else 'no'}",
        ]
        crashes = c["cannot_render"]
        assert isinstance(crashes, list)
        lines.append(f"  shapes it cannot render: {len(crashes)} of "
                     f"{int(str(c['shapes_rendered'])) + len(crashes)}")  # fmt: skip
        lines += [f"    {x['shape']}: {x['error']}" for x in crashes[:8]]
        if len(crashes) > 8:
            lines.append(f"    ... {len(crashes) - 8} more (--json lists every one)")
        settings = c["per_switch_setting"]
        assert isinstance(settings, list)
        lines.append("  class per switch setting:")
        for s in settings:
            why = f" ({s['unrenderable_reason']})" if s["unrenderable_reason"] else ""
            lines.append(f"    {s['switches']}: {s['class']}{why}")
        refused = c.get("values_not_accepted") or []
        assert isinstance(refused, list)
        if refused:  # the template refused these values itself: no class of it (issue 32)
            lines.append("  values not accepted:")
            lines += [f"    {v['switches']}: {v['error']}" for v in refused]
    return lines


def _classify(args: argparse.Namespace) -> int:
    from pipeline.traces.visibility.offline import classify_offline
    from pipeline.traces.visibility.sandbox import RenderSandbox

    texts, sources = _templates(args.files)
    with RenderSandbox() as sandbox:
        classes = [c.as_json() for c in classify_offline(texts, sources, sandbox)]
    print(json.dumps(classes) if args.json else "\n".join(classify_lines(classes)))
    return 0


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0 if argv else 2
    action, rest = argv[0], argv[1:]
    if action == "scan":
        return _scan(_scan_parser().parse_args(rest))
    if action == "classify":
        return _classify(_classify_parser().parse_args(rest))
    raise UserError(f"traces: unknown action {action!r}; {USAGE}")
