"""Template visibility (seed 002, issue 12 part 1): which stored reasoning a chat template keeps.

Pure: templates arrive as text, GGUF metadata through a `read(n)` callable; the study's glue
does the file and HTTP work. `matrix` renders the shape matrix through templates into flat
records, `classify` classes each template from them; `records_for` turns a live server's
render of `shape_body(shape)` into the same records, and `disagreements` pairs the two.
"""

from pipeline.traces.visibility.agreement import disagreements, prompt_agreement
from pipeline.traces.visibility.classify import TemplateClass, as_rows, classify
from pipeline.traces.visibility.gguf import GGUFError, chat_template, chat_templates
from pipeline.traces.visibility.render import FIXED_NOW, Rendered, render
from pipeline.traces.visibility.shapes import TOOLS, Secret, Shape, all_shapes, switch_settings
from pipeline.traces.visibility.visibility import (
    RENDERER,
    Record,
    column_names,
    matrix,
    probe,
    records_for,
    shape_body,
)
from pipeline.traces.visibility.wire import Presence, presence, request_body

__all__ = [
    "FIXED_NOW",
    "RENDERER",
    "TOOLS",
    "GGUFError",
    "Presence",
    "Record",
    "Rendered",
    "Secret",
    "Shape",
    "TemplateClass",
    "all_shapes",
    "as_rows",
    "chat_template",
    "chat_templates",
    "classify",
    "column_names",
    "disagreements",
    "matrix",
    "presence",
    "probe",
    "prompt_agreement",
    "records_for",
    "render",
    "request_body",
    "shape_body",
    "switch_settings",
]
