"""Where two renderers of the same template disagree (offline Jinja2 vs a live server's engine).

llama.cpp renders templates with its own C++ Jinja engine, so the same template file and the
same request body can give another prompt. Records of both renderers (same columns, their
`renderer` differs) are paired on (template, shape, switches, secret). A pair disagrees when
one rendered and the other failed, or when the secret reached one prompt and not the other.
Prompts that differ byte-wise but agree on every secret are not a disagreement about
visibility; `prompt_agreement` counts, per renderer and template, the renders whose bytes
matched.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from pipeline.traces.visibility.visibility import RENDERER

Record = Mapping[str, object]
KEY_COLUMNS = ("template", "shape", "switches", "secret")


def _key(record: Record) -> tuple[object, ...]:
    return tuple(record[c] for c in KEY_COLUMNS)


def disagreements(records: Iterable[Record], baseline: str = RENDERER) -> list[dict[str, object]]:
    """One row per (other renderer, key) whose render outcome or secret survival differs.

    Columns: the key columns, `baseline`, `renderer`, `baseline_rendered`, `rendered`,
    `baseline_in_rendered`, `in_rendered`, `baseline_error`, `error`.
    """
    chosen = list(records)
    base = {_key(r): r for r in chosen if r["renderer"] == baseline}
    rows: list[dict[str, object]] = []
    for other in chosen:
        mine = base.get(_key(other))
        if other["renderer"] == baseline or mine is None:
            continue
        if (mine["rendered"], mine["in_rendered"]) == (other["rendered"], other["in_rendered"]):
            continue
        rows.append(
            {
                **{c: other[c] for c in KEY_COLUMNS},
                "baseline": baseline,
                "renderer": other["renderer"],
                "baseline_rendered": mine["rendered"],
                "rendered": other["rendered"],
                "baseline_in_rendered": mine["in_rendered"],
                "in_rendered": other["in_rendered"],
                "baseline_error": mine["error_type"],
                "error": other["error_type"],
            }
        )
    return rows


def prompt_agreement(
    records: Iterable[Record], baseline: str = RENDERER
) -> list[dict[str, object]]:
    """Per (renderer, template): paired renders, and how many gave byte-identical prompts.

    A render is one (template, shape, switches); crashed renders count as pairs, never as
    identical.
    """
    chosen = list(records)
    base = {_key(r)[:3]: r for r in chosen if r["renderer"] == baseline}
    counts: dict[tuple[object, object], list[int]] = {}
    seen: set[tuple[object, ...]] = set()
    for other in chosen:
        render_key = _key(other)[:3]
        mine = base.get(render_key)
        if (
            other["renderer"] == baseline
            or mine is None
            or (other["renderer"], *render_key) in seen
        ):
            continue
        seen.add((other["renderer"], *render_key))
        tally = counts.setdefault((other["renderer"], other["template"]), [0, 0])
        tally[0] += 1
        both_rendered = bool(mine["rendered"]) and bool(other["rendered"])
        tally[1] += both_rendered and mine["prompt_sha256"] == other["prompt_sha256"]
    return [
        {"renderer": renderer, "template": template, "renders": n, "identical": same}
        for (renderer, template), (n, same) in sorted(
            counts.items(), key=lambda item: (str(item[0][0]), str(item[0][1]))
        )
    ]
