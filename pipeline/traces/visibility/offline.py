"""A user's templates classed offline, without a server (`traces classify`, `study.templates`).

For each template: its default class (`classify`), the class under every switch setting it
tests (a value the template refuses listed apart, as `values_not_accepted`), the message
fields and switches it reads (`reads`), whether it drops tool calls, and the
shapes it cannot render with the error. The renders go through the injected `Renderer` (the
command passes a `sandbox.RenderSandbox`). Pure apart from that.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pipeline.traces.visibility.classify import (
    NOT_ACCEPTED,
    TemplateClass,
    classify_template,
    refusal,
    setting_rows,
)
from pipeline.traces.visibility.reads import template_reads
from pipeline.traces.visibility.sandbox import Renderer
from pipeline.traces.visibility.visibility import matrix


@dataclass(frozen=True)
class OfflineClass:
    name: str
    source: str
    sha256: str
    chars: int
    template_class: TemplateClass
    per_setting: tuple[dict[str, object], ...]
    message_fields: tuple[str, ...]
    switches: tuple[str, ...]
    not_accepted: tuple[tuple[str, str], ...] = ()  # (setting, the template's refusal)

    def as_json(self) -> dict[str, object]:
        c = self.template_class
        return {
            "template": self.name,
            "source": self.source,
            "sha256": self.sha256,
            "chars": self.chars,
            "class": c.visibility,
            "unrenderable_reason": c.unrenderable_reason or None,
            "dialects_read": list(c.dialects_read),
            "fields_read": list(self.message_fields),
            "switches_read": list(self.switches),
            "tool_calls_dropped": c.tool_calls_dropped,
            "switch_effects": list(c.switch_effects),
            "shapes_rendered": c.shapes_rendered,
            "shapes_crashed": c.shapes_crashed,
            "cannot_render": [
                {"shape": x.shape, "error": f"{x.error_type}: {x.error_message}"} for x in c.crashes
            ],
            "per_switch_setting": [
                {
                    "switches": r["switches"] or "(default)",
                    "class": r["visibility"],
                    "unrenderable_reason": r["unrenderable_reason"] or None,
                }
                for r in self.per_setting
                if r["visibility"] != NOT_ACCEPTED
            ],
            "values_not_accepted": [
                {"switches": label, "error": error} for label, error in self.not_accepted
            ],
        }


def classify_offline(
    templates: Mapping[str, str], sources: Mapping[str, str], renderer: Renderer
) -> list[OfflineClass]:
    """Every template's offline class (name order); the matrix plants every dialect any reads."""
    records = matrix(templates, renderer=renderer, sources=sources)
    out = []
    for name in sorted(templates):
        mine = [r for r in records if r["template"] == name]
        reads = template_reads(templates[name])
        rows = tuple(setting_rows(mine))
        refused = [str(r["switches"]) for r in rows if r["visibility"] == NOT_ACCEPTED]
        out.append(
            OfflineClass(
                name=name,
                source=sources.get(name, "user"),
                sha256=str(mine[0]["template_sha256"]) if mine else "",
                chars=len(templates[name]),
                template_class=classify_template(name, mine),
                per_setting=rows,
                message_fields=reads.message_fields,
                switches=tuple(s.name for s in reads.switches),
                not_accepted=tuple((label, refusal(mine, label)) for label in refused),
            )
        )
    return out
