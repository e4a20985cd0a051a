"""The shipped chat templates, read once for the visibility tests."""

from __future__ import annotations

import functools
from pathlib import Path

TEMPLATES_DIR = Path(__file__).resolve().parents[2] / "data" / "chat-templates"

QWEN3 = "Qwen-Qwen3-0.6B"
KIMI = "moonshotai-Kimi-K2-Thinking"
R2E_PRESERVE = "R2E-Gym-qwen3-preserve-thinking"
R2E_VARIANT = "R2E-Gym-chat_template-qwen3-variant"
R1_DISTILL = "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B"
V31 = "deepseek-ai-DeepSeek-V3.1"
GEMMA = "gemma-turns"


@functools.cache
def shipped() -> dict[str, str]:
    """Template name (file stem) -> text, for every shipped `.jinja`."""
    return {p.stem: p.read_text(encoding="utf-8") for p in sorted(TEMPLATES_DIR.glob("*.jinja"))}
