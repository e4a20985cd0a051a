"""The run viewer: read-only pages over run directories, served locally or exported as one file.

`open_runs` opens run directories through `pipeline.store`; `build_app` is the aiohttp app
(`pipeline.commands.view` binds it to 127.0.0.1); `write_export` writes the self-contained HTML
file. Pages are rendered by `pipeline.view.pages` from the Jinja2 templates in `templates/`;
`pipeline.view.guard.inside` is the one check every file read passes.
"""

from pipeline.view.export import export_html, write_export
from pipeline.view.guard import PathRefused, inside
from pipeline.view.runs import Run, open_runs
from pipeline.view.server import HOST, build_app

__all__ = [
    "HOST",
    "PathRefused",
    "Run",
    "build_app",
    "export_html",
    "inside",
    "open_runs",
    "write_export",
]
