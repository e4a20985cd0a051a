"""A stand-in for the llama-server binary: a stdlib HTTP server that can die on cue.

Written to an executable file by `write_standin`, so the code under test spawns it exactly as
it spawns llama-server (argv, environment, process group). The mode is read from
`standin.json` next to the executable (the server's environment is an allow-list, so an
environment variable would not reach it); `mode` picks a behaviour:

    ok                    /health 200, /props, completions answered
    sigill_on_completion  the first POST /v1/chat/completions kills the process with SIGILL,
                          as a build with AMX instructions does on a CPU that traps them
    http_500              completions answer 500
"""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

STANDIN = r"""
import http.server, json, os, resource, signal, sys
argv = sys.argv[1:]
port = int(argv[argv.index("--port") + 1])
with open(os.path.join(os.path.dirname(os.path.abspath(sys.argv[0])), "standin.json")) as f:
    settings = json.load(f)
mode = settings["mode"]
with open(settings["argv_log"], "a") as f:
    record = {"argv": argv, "key": os.environ.get("LLAMA_API_KEY"), "env": sorted(os.environ)}
    f.write(json.dumps(record) + "\n")

class H(http.server.BaseHTTPRequestHandler):
    def _send(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
    def do_GET(self):
        if self.path == "/health":
            self._send(200, {"status": "ok"})
        elif self.path == "/props":
            self._send(200, {"total_slots": 2, "chat_template": "{{ x }}",
                             "default_generation_settings": {"n_ctx": 8192}})
        else:
            self._send(404, {})
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if mode == "sigill_on_completion":
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # no core file in the cwd
            os.kill(os.getpid(), signal.SIGILL)
        if mode == "http_500":
            self._send(500, {"error": {"message": "boom"}})
            return
        self._send(200, {"choices": [{"message": {"role": "assistant", "content": "OK"},
                                      "finish_reason": "stop"}],
                         "usage": {"prompt_tokens": 3, "completion_tokens": 1}})
    def log_message(self, *args):
        pass

print("stand-in llama-server listening", flush=True)
http.server.HTTPServer(("127.0.0.1", port), H).serve_forever()
"""


def write_standin(directory: Path) -> Path:
    """An executable stand-in `llama-server` under `directory`; returns its path."""
    path = directory / "llama-server"
    path.write_text(f"#!{sys.executable}\n{STANDIN}")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def standin_env(directory: Path, mode: str) -> dict[str, str]:
    """Environment that makes the code under test spawn the stand-in in `mode`."""
    settings = {"mode": mode, "argv_log": str(directory / "argv.jsonl")}
    (directory / "standin.json").write_text(json.dumps(settings))
    return {
        "FOLDSWEEP_LLAMA_SERVER": str(write_standin(directory)),
        "PATH": os.environ.get("PATH", ""),
    }
