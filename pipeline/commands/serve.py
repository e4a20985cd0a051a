"""`python -m pipeline serve sim|local|replay [options]`: an endpoint until SIGINT or SIGTERM.

`serve sim` starts one simulated endpoint per configuration (pseudo-model profiles from
`profiles_for(--configs, --sim-seed)`, planted facts from the fixture of `--scenario`/`--seed`)
and prints one line per server on stdout, `BASE_URL MODEL`, flushed as soon as it listens.
With `--port N` and several configs the servers take N, N+1, ...; port 0 picks free ports.
On exit it prints each server's counters as one JSON line on stderr. The API key is read from
the variable named by `--api-key-env` and never printed. `serve local` parses its options here
and delegates to `pipeline.endpoints.local_serve.serve_local`. `serve replay DIR [--port N]
[--order cycle|fixed] [--file NAME]` serves the recordings under DIR (every status; the
order is `pipeline.endpoints.replay`'s), prints `BASE_URL MODEL` per served model, and on
exit one JSON line on stderr: how many times each recording was served.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from omegaconf import OmegaConf

from pipeline.carrier.config import ScenarioConfig
from pipeline.commands.args import CommandParser
from pipeline.config.load import available, conf_dir
from pipeline.config.strict import build
from pipeline.endpoints.replay import ReplayServer
from pipeline.endpoints.sim import FAULT_KINDS, SimOptions, SimServer
from pipeline.simulated import SimBehaviour
from pipeline.usererror import UserError

_USAGE = (
    "usage: python -m pipeline serve sim|local|replay [options]  (serve sim --help for options)"
)


def _parser() -> argparse.ArgumentParser:
    p = CommandParser("serve", description="simulated endpoints")
    p.add_argument("--port", type=int, default=0, help="first port; 0 = free ports")
    p.add_argument("--configs", type=int, default=1, help="simulated configurations")
    p.add_argument("--latency-s", type=float, default=0.0, help="added per reply")
    p.add_argument("--fault-rate", type=float, default=0.0, help="injected fault rate")
    p.add_argument("--fault-mix", default="", help="comma-separated fault kinds (default all)")
    p.add_argument("--stall-s", type=float, default=30.0, help="how long a timeout fault stalls")
    p.add_argument("--rpm-limit", type=float, default=None, help="enforced requests/minute")
    p.add_argument("--model-faults", action="store_true", help="empty/refusal/bad JSON replies")
    p.add_argument("--model-fault-rate", type=float, default=0.1)
    p.add_argument("--api-key-env", default=None, help="variable holding the required key")
    p.add_argument("--scenario", default="small", help="fixture scenario for planted facts")
    p.add_argument("--seed", type=int, default=1, help="fixture seed for planted facts")
    p.add_argument("--sim-seed", type=int, default=7, help="seed of profiles, replies, faults")
    return p


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(_USAGE)
        return 0 if argv else 2
    kind, rest = argv[0], argv[1:]
    if kind == "local":
        return _serve_local(rest)
    if kind == "replay":
        return _serve_replay(rest)
    if kind != "sim":
        raise UserError(f"serve: unknown endpoint kind '{kind}'; use sim, local or replay")
    args = _parser().parse_args(rest)
    if args.configs < 1:
        raise UserError("serve sim: --configs must be at least 1")
    return asyncio.run(_serve(_build_servers(args)))


def _serve_local(argv: list[str]) -> int:
    # lazy: the local-model module and its optional dependencies load only when asked
    from pipeline.endpoints.local import API_KEY_ENV
    from pipeline.endpoints.local_serve import FAMILIES, serve_local

    parser = CommandParser(
        "serve local",
        description="Serve the embedded panel's local models (OpenAI-compatible, loopback).",
    )
    parser.add_argument("--model", choices=FAMILIES, default="smollm2")
    parser.add_argument(
        "--port", type=int, help="port of the first server; the next take the following ports"
    )
    parser.add_argument("--log-dir", type=Path, help="server logs (default: a new temp dir)")
    parser.add_argument(
        "--print-key", action="store_true", help=f"print `export {API_KEY_ENV}=KEY` on stderr"
    )
    args = parser.parse_args(argv)
    return serve_local(args.model, port=args.port, log_dir=args.log_dir, print_key=args.print_key)


def _serve_replay(argv: list[str]) -> int:
    from pipeline.endpoints.recording import load_recordings
    from pipeline.endpoints.replay import ORDERS, ReplayOptions, ReplayServer, served_models

    parser = CommandParser(
        "serve replay",
        description="Serve recorded provider replies (OpenAI-compatible, loopback).",
    )
    parser.add_argument("dir", type=Path, help="the recordings directory")
    parser.add_argument("--port", type=int, default=0, help="port; 0 = a free port")
    parser.add_argument("--order", choices=ORDERS, default="cycle", help="cycle or fixed")
    parser.add_argument("--file", default=None, help="the recording --order fixed serves")
    args = parser.parse_args(argv)
    try:
        models = served_models(load_recordings(args.dir), args.order, args.file)
    except ValueError as exc:
        raise UserError(f"serve replay: {exc}") from None
    server = ReplayServer(models, ReplayOptions(port=args.port))
    return asyncio.run(_serve_replay_until_stopped(server))


async def _serve_replay_until_stopped(server: ReplayServer) -> int:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        try:
            url = await server.start()
        except OSError as exc:
            raise UserError(f"serve replay: cannot listen: {exc.strerror or exc}") from None
        for model in server.models:
            print(f"{url} {model}", flush=True)
        await stop.wait()
    finally:
        await server.stop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
    print(json.dumps({"served": server.served()}), file=sys.stderr, flush=True)
    return 0


def _build_servers(args: argparse.Namespace) -> list[SimServer]:
    try:
        options = SimOptions(
            latency_s=args.latency_s,
            fault_rate=args.fault_rate,
            fault_mix=_fault_mix(args.fault_mix),
            stall_s=args.stall_s,
            rpm_limit=args.rpm_limit,
            model_faults=args.model_faults,
            model_fault_rate=args.model_fault_rate,
            api_key=_api_key(args.api_key_env),
            seed=args.sim_seed,
        )
    except ValueError as exc:
        raise UserError(f"serve sim: {exc}") from None
    return [
        SimServer(model, replace(options, port=args.port + i if args.port else 0))
        for i, model in enumerate(_sim_models(args))
    ]


def _fault_mix(text: str) -> tuple[str, ...]:
    kinds = tuple(k.strip() for k in text.split(",") if k.strip())
    return kinds or FAULT_KINDS


def _api_key(variable: str | None) -> str | None:
    if variable is None:
        return None
    value = os.environ.get(variable)
    if not value:
        raise UserError(f"serve sim: environment variable {variable} (--api-key-env) is not set")
    return value


def _sim_models(args: argparse.Namespace) -> Sequence[SimBehaviour]:
    """The carrier pseudo-model's profiles, handed the fixture's planted facts (it is told
    what to look for)."""
    # lazy: the generator is only needed once a scenario is actually served
    from pipeline.carrier.fixture import generate
    from pipeline.carrier.sim_model import CarrierSimModel, profiles_for

    path = conf_dir() / "scenario" / f"{args.scenario}.yaml"
    if not path.is_file():
        names = ", ".join(available("scenario"))
        raise UserError(f"serve sim: unknown scenario '{args.scenario}'; available: {names}")
    data = OmegaConf.to_container(OmegaConf.load(path), resolve=True)
    planted = tuple(generate(build(ScenarioConfig, data, "scenario"), args.seed).planted)
    return [CarrierSimModel(p, planted) for p in profiles_for(args.configs, args.sim_seed)]


async def _serve(servers: list[SimServer]) -> int:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        for server in servers:
            try:
                url = await server.start()
            except OSError as exc:
                raise UserError(f"serve sim: cannot listen: {exc.strerror or exc}") from None
            print(f"{url} {server.model}", flush=True)
        await stop.wait()
    finally:
        for server in servers:
            await server.stop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
    for server in servers:
        counters = {"model": server.model, **server.counters().as_dict()}
        print(json.dumps(counters), file=sys.stderr, flush=True)
    return 0
