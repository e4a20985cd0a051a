"""Panel kind `offline`: configurations priced without an endpoint (replay studies)."""

from __future__ import annotations

import asyncio

import pytest

from pipeline.chat.errors import RequestRejected
from pipeline.chat.messages import ChatMessage, ChatRequest
from pipeline.config.schema import EndpointConfig, PanelConfig, RunConfig
from pipeline.config.strict import ConfigError
from pipeline.endpoints.offline import OfflineClient
from pipeline.endpoints.panels import materialize


def _cfg(*configs: EndpointConfig) -> RunConfig:
    return RunConfig(panel=PanelConfig(name="offline", kind="offline", configs=configs))


def test_offline_panel_keeps_its_declared_configurations() -> None:
    panel = materialize(_cfg(EndpointConfig("deepseek:v4-pro", "v4-pro", "deepseek")))
    assert [c.config_id for c in panel.configs] == ["deepseek:v4-pro"]


@pytest.mark.parametrize(
    "config",
    [
        EndpointConfig("a", "m", "f", base_url="http://127.0.0.1:9/v1"),
        EndpointConfig("a", "m", "f", api_key_env="SOME_KEY"),
    ],
)
def test_offline_configuration_naming_an_endpoint_is_refused_in_one_line(
    config: EndpointConfig,
) -> None:
    with pytest.raises(ConfigError, match="offline panel") as caught:
        materialize(_cfg(config))
    assert "\n" not in str(caught.value)


def test_offline_client_refuses_every_request_without_retry() -> None:
    request = ChatRequest((ChatMessage("user", "hi"),), max_tokens=1)
    with pytest.raises(RequestRejected, match="offline"):
        asyncio.run(OfflineClient("a").complete(request))
