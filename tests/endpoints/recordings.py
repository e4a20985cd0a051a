"""Hand-written recordings for the recording and replay tests (`handwritten: true`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pipeline.endpoints.recording import FORMAT


def chat_body(content: str, prompt: int, completion: int, cached: int = 0) -> str:
    """An OpenAI-shaped chat completion body, as raw text."""
    usage = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": cached},
    }
    choice = {"index": 0, "message": {"role": "assistant", "content": content}}
    return json.dumps(
        {
            "id": "x",
            "object": "chat.completion",
            "choices": [{**choice, "finish_reason": "stop"}],
            "usage": usage,
        }
    )


def recording(
    provider: str = "openrouter",
    *,
    status: int = 200,
    body: str | None = None,
    headers: dict[str, str] | None = None,
    model: str | None = "vendor/model-a",
    **extra: Any,
) -> dict[str, Any]:
    """One recording document (a dict), with a request body naming `model` when given."""
    return {
        "format": FORMAT,
        "provider": provider,
        "host": "openrouter.ai",
        "source": "tests",
        "handwritten": True,
        "request": None if model is None else {"model": model, "messages": []},
        "response": {
            "status": status,
            "headers": {"content-type": "application/json"} if headers is None else headers,
            "body": chat_body("hello", 10, 2) if body is None else body,
        },
        **extra,
    }


def write(directory: Path, name: str, doc: Any) -> Path:
    path = directory / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc), encoding="utf-8")
    return path
