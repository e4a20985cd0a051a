"""The endpoints a sweep starts itself: simulated, replay or local llama.cpp servers.

Hosted and user endpoints need nothing started. Either way, the result is the panel's
EndpointConfigs with their base URLs filled in, plus whatever the servers counted.
Simulated servers run in a child process by default (`SimServerProcess`), so they do not
compete with the coordinator for the driver's GIL; `sim_servers="thread"` keeps them in this
process, for callers that instrument them in place (scripts/bench_ratelimit.py).
What a simulated server answers is the study's: the caller passes one `SimBehaviour` per
endpoint (`sim_models`), already named after its endpoint's configuration and model.
A replay panel gets one ReplayServer (pipeline/endpoints/replay.py) on a private loop in this
process for all its configurations: each configuration's model is served its provider's
recordings (pipeline/endpoints/replay_panel.py); it answers without computing anything.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

from pipeline.config.schema import EndpointConfig, RunConfig
from pipeline.endpoints.loop_thread import LoopThread
from pipeline.simulated import SimBehaviour
from pipeline.usererror import UserError


class EndpointServers:
    """Context manager: start what the panel kind needs, fill base URLs, stop at exit."""

    def __init__(
        self,
        kind: str,
        endpoints: Sequence[EndpointConfig],
        cfg: RunConfig,
        log_dir: Path,
        *,
        sim_models: Sequence[SimBehaviour] = (),
        sim_servers: Literal["process", "thread"] = "process",
    ) -> None:
        if sim_servers not in ("process", "thread"):
            raise ValueError(f"sim_servers must be 'process' or 'thread', not {sim_servers!r}")
        self.kind = kind
        self.sim_servers = sim_servers
        self.endpoints = tuple(endpoints)
        self.sim_models = tuple(sim_models)
        if kind == "sim":
            _check_sim_models(self.sim_models, self.endpoints)
        self.cfg = cfg
        self.log_dir = log_dir
        self._sim: Any = None
        self._replay: Any = None
        self._local: Any = None
        self._loop: LoopThread | None = None
        self.restarts: list[dict[str, Any]] = []
        # One line naming why a started server can no longer serve (e.g. a crash loop); the
        # sweep stops when it is set and exits non-zero with it.
        self.fatal: str | None = None

    def __enter__(self) -> EndpointServers:
        if self.kind == "sim":
            self._start_sim()
        elif self.kind == "local":
            self._start_local()
        elif self.kind == "replay":
            self._start_replay()
        return self

    def _start_replay(self) -> None:
        from pipeline.endpoints.replay import ReplayServer
        from pipeline.endpoints.replay_panel import servable, served_by_model

        models = served_by_model(self.endpoints, servable(self.cfg.replay))
        self._replay = ReplayServer(models)
        self._loop = LoopThread("replay-server")
        try:
            url = self._loop.call(self._replay.start())
        except BaseException:
            self._loop.close()
            raise
        self.endpoints = tuple(dataclasses.replace(ep, base_url=url) for ep in self.endpoints)

    def _start_sim(self) -> None:
        from pipeline.endpoints.sim import SimOptions, SimServerThread
        from pipeline.endpoints.sim_process import SimServerProcess, SimServerSpec

        sim = self.cfg.sim
        key = None
        if sim.api_key_env:
            key = os.environ.get(sim.api_key_env)
            if not key:
                raise UserError(f"{sim.api_key_env} is not set: export it or drop sim.api_key_env")
        options = SimOptions(
            latency_s=sim.latency_s,
            fault_rate=sim.fault_rate,
            rpm_limit=sim.rpm_limit,
            model_faults=sim.model_faults,
            api_key=key,
            seed=sim.seed,
            stall_s=sim.stall_s,
        )
        specs = [SimServerSpec(model, options) for model in self.sim_models]
        if self.sim_servers == "process":
            self._sim = SimServerProcess(specs)
        else:
            self._sim = SimServerThread([spec.build() for spec in specs])
        urls = self._sim.start()
        self.endpoints = tuple(
            dataclasses.replace(ep, base_url=url)
            for ep, url in zip(self.endpoints, urls, strict=True)
        )

    def _start_local(self) -> None:
        from pipeline.endpoints.local import API_KEY_ENV, build_servers
        from pipeline.endpoints.local_pool import LocalServerPool

        servers = build_servers(self.endpoints, self.log_dir)
        # Ray's processes start after this and inherit the key; it is never written anywhere.
        os.environ[API_KEY_ENV] = servers[0].api_key
        self._loop = LoopThread("local-servers")
        self._local = LocalServerPool(servers, on_restart=self._on_restart, on_fatal=self._fatal)
        try:
            self._loop.call(self._local.start())
        except BaseException:
            self._loop.call(self._local.stop())
            self._loop.close()
            raise
        self.endpoints = tuple(
            dataclasses.replace(
                ep, base_url=self._local.base_url(ep.config_id), api_key_env=API_KEY_ENV
            )
            for ep in self.endpoints
        )

    def _fatal(self, message: str) -> None:
        self.fatal = message

    def _on_restart(self, event: Any) -> None:
        self.restarts.append(
            {f.name: str(getattr(event, f.name)) for f in dataclasses.fields(event)}
        )

    def describe(self) -> dict[str, Any]:
        """What the servers this sweep started are, for the manifest (local panels only), each
        with its `identity`: what its replies depend on, the response cache's name for it."""
        if self._local is None:
            return {}
        described: dict[str, Any] = self._local.describe()
        for config_id, identity in self._local.identities().items():
            described[config_id] = {**described[config_id], "identity": identity}
        return described

    def counters(self) -> dict[str, Any]:
        if self._replay is not None:  # recording name -> times served (read on its loop)
            return {"served": dict(self._replay.served())}
        if self._sim is None:
            return {}
        return {
            ep.config_id: c.as_dict()
            for ep, c in zip(self.endpoints, self._sim.counters(), strict=True)
        }

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._sim is not None:
            self._sim.stop()
        if self._local is not None and self._loop is not None:
            self._loop.call(self._local.stop())
            self._loop.close()
        if self._replay is not None and self._loop is not None:
            self._loop.call(self._replay.stop())
            self._loop.close()


def _check_sim_models(models: Sequence[SimBehaviour], endpoints: Sequence[EndpointConfig]) -> None:
    """One model per endpoint, in endpoint order, named as its endpoint; else a caller bug."""
    if len(models) != len(endpoints):
        raise ValueError(
            f"a sim panel needs one sim model per endpoint: {len(models)} models "
            f"for {len(endpoints)} endpoints"
        )
    for model, ep in zip(models, endpoints, strict=True):
        if (model.config_id, model.served_model) != (ep.config_id, ep.model):
            raise ValueError(
                f"sim model {model.config_id}/{model.served_model} is in the place of "
                f"endpoint {ep.config_id}/{ep.model}"
            )
