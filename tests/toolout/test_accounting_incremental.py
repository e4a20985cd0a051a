"""Issue 20: the replay's incremental accounting bills exactly what the general form bills."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from jobs.toolout.inputs import load_cache_models
from pipeline.toolout.accounting import account, account_incremental
from pipeline.toolout.importers import import_file
from pipeline.toolout.policies import build_policy
from pipeline.toolout.replay import replay
from pipeline.toolout.runner import cache_requests
from pipeline.toolout.tokens import estimate_tokens
from tests.toolout import read, shipped

POLICIES = Path(__file__).resolve().parents[2] / "conf" / "toolout" / "policies"
MODELS = {
    "anthropic": "claude-sonnet-4-5",
    "openai": "gpt-5",
    "deepseek": "deepseek-v4-pro",
    "gemini-implicit": "gemini-2.5-flash",
    "no-cache": "deepseek-v4-pro",
}


@pytest.mark.parametrize("policy", ["control", "keyword", "swe_agent_last_5", "openhands_masking"])
def test_incremental_and_general_accounting_agree_to_the_last_bit(policy: str) -> None:
    chosen = build_policy(yaml.safe_load((POLICIES / f"{policy}.yaml").read_text()))
    caches = load_cache_models()
    sources = [f for corpus in ("swe-agent", "openhands") for f in shipped(corpus)[:3]]
    for source in sources:
        for transcript in import_file(read(source), source).transcripts[:2]:
            requests = replay(transcript, chosen, estimate_tokens)
            for name, model in MODELS.items():
                general = account(cache_requests(requests), caches[name], model)
                incremental = account_incremental(requests, caches[name], model)
                assert incremental == general, (transcript.id, name)
