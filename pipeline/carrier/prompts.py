"""System prompts and the fold / recall message layout.

Decisions the paper leaves open (recorded in docs/carrier.md):
- The `fixed_headings` prompt is one byte string shared by j, q, m, p, t, u (and k, l, x); the
  paper fixes only that it is identical across its central arms and asks for five sections.
- The fold user message is identical for every arm. The representation reaches the model only
  through `response_format`, so prompt text never differs between arms that share a prompt id.
- The recall turn has its own neutral system prompt, identical for every arm, so recall
  differences come from the carrier alone.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

HEADINGS: tuple[str, ...] = ("Goal", "Progress", "Key facts", "Open questions", "Next steps")

PREVIOUS_SUMMARY_MARKER = "## Previous summary"
CHUNK_MARKER = "## New transcript chunk"
RECALL_MARKER = "## Recall"
NO_SUMMARY = "(none)"

_MEMORY_INTRO = (
    "You maintain the running memory of a long-running operations agent. Each turn you receive "
    "the previous summary and a new chunk of the session transcript, and you write a "
    "replacement summary. Nothing else is kept: the transcript is discarded after this turn, "
    "so anything you leave out is lost for good. Preserve every identifier, port, path, URL, "
    "host, zone, timestamp, count, key id, handle, tag and name exactly as written, character "
    "for character, including unit words."
)

SYSTEM_PROMPTS: dict[str, str] = {
    "fixed_headings": (
        _MEMORY_INTRO
        + " Organize the summary under these five headings, in this order:\n"
        + "\n".join(f"## {h}" for h in HEADINGS)
    ),
    "unstructured_prose": (
        _MEMORY_INTRO + " Write the summary as plain prose paragraphs, without headings or lists."
    ),
    "deployed": (
        "You are a helpful assistant that summarizes conversations. Merge the previous summary "
        "and the new messages into one concise summary of the conversation so far."
    ),
}

RECALL_SYSTEM_PROMPT = (
    "You are an operations agent resuming work from your saved memory. Answer only from the "
    "memory you are given. Copy values exactly as they appear there."
)

FOLD_INSTRUCTION = (
    "## Instruction\nWrite the replacement summary now. It replaces everything above; anything "
    "you leave out is lost."
)

RECALL_INSTRUCTION = (
    "Using only the memory above, give the exact value for each label below. Answer with "
    "exactly one line per label, in the form LABEL: value, copying the value verbatim "
    "(including unit words). If the memory does not contain the value, write LABEL: unknown."
)


def prompt_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def fold_message(previous_carrier: str, transcript: str) -> str:
    """The user message of one fold: previous carrier plus the new chunk(s), nothing else."""
    carried = previous_carrier if previous_carrier.strip() else NO_SUMMARY
    return (
        f"{PREVIOUS_SUMMARY_MARKER}\n{carried}\n\n{CHUNK_MARKER}\n{transcript}\n\n"
        f"{FOLD_INSTRUCTION}"
    )


def recall_message(carrier: str, labels: Sequence[str]) -> str:
    """The recall user message: the final carrier, then one `- LABEL` line per graded label."""
    memory = carrier if carrier.strip() else NO_SUMMARY
    asked = "\n".join(f"- {label}" for label in labels)
    return f"## Memory\n{memory}\n\n{RECALL_MARKER}\n{RECALL_INSTRUCTION}\n{asked}"
