"""Typed configuration: Hydra composition converted once into frozen dataclasses."""

from pipeline.config.load import available, compose_dict, conf_dir, load
from pipeline.config.schema import (
    AnalysisConfig,
    BudgetConfig,
    EndpointConfig,
    EndpointOverride,
    LimitGroup,
    Limits,
    LocalModelSpec,
    PanelConfig,
    Prices,
    RayConfig,
    RetryConfig,
    RunConfig,
    SimConfig,
    TimeoutConfig,
)
from pipeline.config.strict import ConfigError, build

__all__ = [
    "AnalysisConfig",
    "BudgetConfig",
    "ConfigError",
    "EndpointConfig",
    "EndpointOverride",
    "LimitGroup",
    "Limits",
    "LocalModelSpec",
    "PanelConfig",
    "Prices",
    "RayConfig",
    "RetryConfig",
    "RunConfig",
    "SimConfig",
    "TimeoutConfig",
    "available",
    "build",
    "compose_dict",
    "conf_dir",
    "load",
]
