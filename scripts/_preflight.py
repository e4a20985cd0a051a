"""A submitted job's first command (scripts/submit): can this interpreter run the sweep?

    python scripts/_preflight.py default|explicit CLUSTER_RAY_VERSION

Prints one `error: ...` line on stderr and exits 2 if the interpreter is older than Python
3.11, lacks one of foldsweep's dependencies, or has another Ray version than the cluster;
otherwise prints START_MARKER with its path and working directory, and exits 0. `default`
means the interpreter is `python` on the cluster's PATH, `explicit` that it was named with
--python; the two get different advice.

Any Python may run this file (finding out which one is the point), so it keeps to Python 2
syntax, with type comments and %-formatting, and checks the version before anything else.
"""
# ruff: noqa: UP031

import os
import sys

START_MARKER = "foldsweep-preflight: ok"
MIN_PYTHON = (3, 11)
# Import names of pyproject's dependencies (test_cluster_submit checks them against it);
# omegaconf and yaml come with hydra-core. uvloop is left out: Ray uses it if installed.
REQUIRED_MODULES = (
    "ray",
    "pyarrow",
    "polars",
    "aiohttp",
    "tenacity",
    "hydra",
    "omegaconf",
    "yaml",
    "rich",
    "matplotlib",
    "numpy",
    "scipy",
    "jinja2",
    "orjson",
)
INSTALL = "with foldsweep installed (pip install -e .)"
WHO = {"default": "the cluster's python", "explicit": "the --python interpreter"}
HINT = {
    "default": "start the cluster from an environment %s or pass --python PATH" % INSTALL,
    "explicit": "give --python the path of an interpreter %s on the head node" % INSTALL,
}


def problem(cluster_ray):
    # type: (str) -> str
    """What this interpreter lacks for the sweep ('' if nothing)."""
    if sys.version_info[:2] < MIN_PYTHON:
        return "is Python %d.%d, foldsweep needs %d.%d+" % (sys.version_info[:2] + MIN_PYTHON)
    import importlib.util

    missing = [m for m in REQUIRED_MODULES if importlib.util.find_spec(m) is None]
    if missing:
        return "lacks " + ", ".join(missing)
    from importlib.metadata import version

    have = version("ray")
    if cluster_ray and have != cluster_ray:
        return "has ray %s but the cluster runs ray %s" % (have, cluster_ray)
    return ""


def error_line(mode, executable, what):
    # type: (str, str, str) -> str
    return "error: %s (%s) %s; %s" % (WHO[mode], executable, what, HINT[mode])


def main(argv):
    # type: (list[str]) -> int
    mode, cluster_ray = argv[0], argv[1] if len(argv) > 1 else ""
    what = problem(cluster_ray)
    if what:
        sys.stderr.write(error_line(mode, sys.executable, what) + "\n")
        return 2
    print("%s python=%s cwd=%s" % (START_MARKER, sys.executable, os.getcwd()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
