"""Operator and assistant prose for the synthetic session (facts stated by label).

Operator turns are tasks or short nudges ("ok, keep going"); assistant turns announce a tool
call or comment on its output. A fact carried in prose always names its label next to its
value, as a real operator or agent would, so the recall turn's label refers to one sentence.
"""

from __future__ import annotations

from random import Random

from pipeline.carrier import fixture_words as w
from pipeline.carrier.fixture_filler import Scene

_TASKS = (
    "Can you find out why {svc} on {host} keeps restarting?",
    "We're seeing elevated latency on {svc}. Take a look and tell me what you find.",
    "Please check whether {svc} picked up the config change from this morning.",
    "Audit the {svc} rollout on {host} before the maintenance window, please.",
    "Something is off with {svc} since the last deploy. Dig in.",
    "Look into the retry storm between {svc} and {svc2}.",
    "Check disk usage and log volume for {svc} on {host}.",
    "Can you confirm {svc2} is healthy after the node drain on {host}?",
)
_NUDGES = (
    "ok, continue",
    "go on",
    "keep going",
    "thanks. next?",
    "fine, proceed",
    "ok. check {host} as well",
    "makes sense, carry on",
    "good. what else?",
)
_USER_FACTS = (
    "FYI the {label} is {value}; do not change it.",
    "Before you go on: the {label} is {value}.",
    "Use {value} as the {label}.",
    "Note the {label}: {value}.",
    "For the record, {label} = {value}.",
)
_NUDGE_FACTS = ("ok. btw the {label} is {value}", "go on. {label}: {value}")
_PRE_CALL = (
    "Let me {intent}.",
    "Next I'll {intent}.",
    "I'll {intent} to narrow this down.",
    "To confirm, I'll {intent}.",
)
_OBSERVATIONS = (
    "the {comp} on {host} is retrying against {svc2} with '{reason}'",
    "nothing unusual",
    "a burst of '{reason}' errors, then recovery",
    "{svc} is healthy but its {comp} is falling behind",
    "the {comp} restarted {n} times in the window",
    "the config matches what the operator described",
    "two pods on {host} are still on the previous build",
    "the {comp} backlog is draining slowly",
)
_NEXT_STEPS = (
    "Next I'll check {svc2}.",
    "That rules out the {comp}.",
    "I want to compare this with {host}.",
    "This looks related to the earlier '{reason}' errors.",
    "I'll keep an eye on the {comp} while I continue.",
    "",
)
_ASSISTANT_FACTS = (
    "Noting for later: the {label} is {value}.",
    "Confirmed, the {label}: {value}.",
    "For the runbook, the {label} is {value}.",
    "Recording the {label} ({value}) before moving on.",
)


def _slots(rng: Random, scene: Scene) -> dict[str, str]:
    svc, svc2 = rng.sample(scene.services, 2)
    return {
        "svc": svc,
        "svc2": svc2,
        "host": rng.choice(scene.hosts),
        "comp": rng.choice(w.COMPONENTS),
        "reason": rng.choice(w.LOG_REASONS),
        "n": str(rng.randint(2, 14)),
    }


def operator_turn(
    rng: Random, scene: Scene, facts: list[tuple[str, str]], task: bool, brief: bool = False
) -> str:
    """A task (or a short nudge) stating `facts` as (label, value) pairs.

    `brief` (a step over its token share) drops the nudge in front of stated facts.
    """
    slots = _slots(rng, scene)
    if not task and len(facts) <= 1:
        if facts:
            label, value = facts[0]
            return rng.choice(_NUDGE_FACTS).format(label=label, value=value)
        return rng.choice(_NUDGES).format(**slots)
    text = [] if brief and not task else [rng.choice(_TASKS if task else _NUDGES).format(**slots)]
    if text and not task:
        text[0] = text[0][0].upper() + text[0][1:] + "."
    text += [rng.choice(_USER_FACTS).format(label=lb, value=v) for lb, v in facts]
    return " ".join(text)


def pre_call(rng: Random, intent: str) -> str:
    return rng.choice(_PRE_CALL).format(intent=intent)


def analysis(rng: Random, scene: Scene, facts: list[tuple[str, str]], brief: bool = False) -> str:
    """The assistant's comment on a tool output, with `facts` stated among its sentences.

    `brief` (a step over its token share) keeps only the facts (or one observation).
    """
    slots = _slots(rng, scene)
    stated = [rng.choice(_ASSISTANT_FACTS).format(label=lb, value=v) for lb, v in facts]
    if brief and stated:
        return " ".join(stated)
    sentences = [f"The output shows {rng.choice(_OBSERVATIONS).format(**slots)}.", *stated]
    if brief:
        return " ".join(sentences)
    if rng.random() < 0.5:
        sentences.append(f"Also {rng.choice(_OBSERVATIONS).format(**_slots(rng, scene))}.")
    sentences.append(rng.choice(_NEXT_STEPS).format(**slots))
    return " ".join(s for s in sentences if s)
