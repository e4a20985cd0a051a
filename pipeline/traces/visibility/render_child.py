"""The sandbox's child process: one render job a line in, one answer a line out (see `sandbox`).

Run as `python -m pipeline.traces.visibility.render_child MEMORY_BYTES`; it imports only the
renderer, never the package's other modules, and limits its own address space first.
"""

from __future__ import annotations

import json
import sys
from datetime import datetime

from pipeline.traces.visibility.render import render


def _serve(memory_bytes: int) -> None:
    """The child's loop: one job a line in, one answer a line out, until stdin closes."""
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    templates: dict[str, str] = {}
    sys.stdout.buffer.write(b"ready\n")
    sys.stdout.buffer.flush()
    for line in sys.stdin.buffer:
        job = json.loads(line)
        if "template" in job:
            templates[job["sha"]] = job["template"]
        outcome = render(
            templates[job["sha"]],
            job["messages"],
            tools=job["tools"],
            add_generation_prompt=job["add_generation_prompt"],
            extra=job["extra"],
            now=datetime.fromisoformat(job["now"]),
        )
        answer = {
            "prompt": outcome.prompt,
            "error_type": outcome.error_type,
            "error_message": outcome.error_message,
        }
        sys.stdout.buffer.write(json.dumps(answer).encode() + b"\n")
        sys.stdout.buffer.flush()


if __name__ == "__main__":
    _serve(int(sys.argv[1]))
