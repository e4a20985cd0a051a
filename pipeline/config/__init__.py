"""Typed configuration: Hydra composition converted once into frozen dataclasses."""

from pipeline.config.load import available, compose_dict, conf_dir, load
from pipeline.config.schema import (
    AnalysisConfig,
    ArmConfig,
    BudgetConfig,
    EndpointConfig,
    EndpointOverride,
    FieldSpec,
    LedgerSpec,
    Limits,
    LocalModelSpec,
    PanelConfig,
    Prices,
    RayConfig,
    RetryConfig,
    RunConfig,
    ScenarioConfig,
    SimConfig,
    TimeoutConfig,
)
from pipeline.config.strict import ConfigError, build

__all__ = [
    "AnalysisConfig",
    "ArmConfig",
    "BudgetConfig",
    "ConfigError",
    "EndpointConfig",
    "EndpointOverride",
    "FieldSpec",
    "LedgerSpec",
    "Limits",
    "LocalModelSpec",
    "PanelConfig",
    "Prices",
    "RayConfig",
    "RetryConfig",
    "RunConfig",
    "ScenarioConfig",
    "SimConfig",
    "TimeoutConfig",
    "available",
    "build",
    "compose_dict",
    "conf_dir",
    "load",
]
