"""Every project file that code, config or docs name exists (issue 33, item 7).

A path is a reference only while it leads somewhere: a docstring that sends a reader to a
moved or deleted doc is worse than none. This test reads the code (pipeline/, jobs/, scripts/,
tests/), the config (conf/) and the docs (README.md, docs/, data/*/README.md) and fails on
every repo-relative path among them that names a file the tree does not hold.

What counts as a path, chosen to rule out false positives rather than to catch every spelling:
- it starts with one of the project's top-level directories (`TOP_DIRS`) and ends in a file
  extension, or it is one of the top-level files (`TOP_FILES`);
- it is not part of a longer path (a run directory's `RUN_DIR/analysis/...`, a temporary
  `/tmp/...`, `$PWD/...`, a URL's `https://host/...`): no word character, `/`, `.`, `$`, `~`,
  `-` or `:` may come right before it;
- it is no glob, template or call: a path running into `*`, `<`, `{`, `/` or `(`, or holding
  a placeholder (`...`, `RUN_DIR`, `NAME`, `YYYY`), is a pattern or a function
  (`jobs/toolout/tables.load(...)`), not a file.
Deliberately hypothetical paths (a file a test writes itself, an example in a doc) go in
`ALLOWED`, each with the reason.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

TOP_DIRS = ("docs", "pipeline", "jobs", "examples", "conf", "scripts", "tests", "data")
TOP_FILES = ("README.md", "Makefile", "pyproject.toml")

PATH = re.compile(
    r"(?<![\w/.$~:-])"
    r"(?:\./)?"
    r"(?P<path>(?:" + "|".join(TOP_DIRS) + r")/[\w./-]*\.[A-Za-z][A-Za-z0-9]*"
    r"|" + "|".join(re.escape(name) for name in TOP_FILES) + r")"
    r"(?![\w*<{/(-])"
)
PLACEHOLDERS = ("...", "RUN_DIR", "NAME", "YYYY")

# Paths named on purpose although no such file exists, each with why.
ALLOWED: dict[str, str] = {
    "conf/arms/w.yaml": "tests/carrier/test_arms.py: the file of a made-up arm in an error",
    "conf/gateway.yaml": "tests/endpoints/test_local.py: a file a sample conversation reads",
    "data/transcripts/tau-bench/gpt-4o-retail.json": (
        "tests/toolout/test_importers.py: a tau-bench file name the importer is recognised by"
    ),
    "tests/test_x.py": "tests/toolout/test_policies_forced_exact.py: sample pytest output",
    "scripts/run.sh": "tests/traces/test_compression_facts.py: a path in sample text",
    "conf/study/tally.yaml": "docs/new-study.md: the config file its worked example creates",
    "examples/tally/__init__.py": "docs/new-study.md: a file its worked example creates",
}


def scanned_files() -> list[Path]:
    """The code, config and docs whose paths must resolve (never .venv, caches or run data)."""
    files = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    files += sorted(ROOT.glob("data/*/README.md"))
    files += sorted((ROOT / "conf").rglob("*.yaml"))
    for top in ("pipeline", "jobs", "examples", "tests"):
        files += sorted((ROOT / top).rglob("*.py"))
    files += sorted(p for p in (ROOT / "scripts").iterdir() if p.is_file())
    return [f for f in files if "__pycache__" not in f.parts]


def named_paths(text: str) -> list[tuple[int, str]]:
    """(line number, path) for every project path `text` names, globs and templates left out."""
    found = []
    for number, line in enumerate(text.splitlines(), start=1):
        for match in PATH.finditer(line):
            path = match.group("path")
            if any(word in path for word in PLACEHOLDERS):
                continue
            found.append((number, path))
    return found


def test_the_matcher_takes_project_paths_and_leaves_patterns_urls_and_run_dirs() -> None:
    line = (
        "see docs/engine.md, `conf/panel/recent.yaml` and README.md; not rows/*.parquet, "
        "data/cache-models/<provider>.yaml, RUN_DIR/analysis/report.md, /tmp/docs/x.md, "
        "https://example.org/docs/y.md, $PWD/tests/z.py, docs/{a,b}.md, docs/.../c.md, "
        "conf/study/NAME.yaml or jobs/toolout/tables.load(run_dir)"
    )
    assert [path for _, path in named_paths(line)] == [
        "docs/engine.md",
        "conf/panel/recent.yaml",
        "README.md",
    ]


def test_every_project_path_named_in_code_config_and_docs_exists() -> None:
    missing = [
        f"{source.relative_to(ROOT)}:{number}: {path}"
        for source in scanned_files()
        for number, path in named_paths(source.read_text(encoding="utf-8"))
        if path not in ALLOWED and not (ROOT / path).exists()
    ]
    assert not missing, "paths to files that do not exist:\n" + "\n".join(missing)
