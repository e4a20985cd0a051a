"""The fold-and-recall study (seed 001) as pure protocol logic: no HTTP, no Ray, no disk.

Modules: fixture (deterministic session), arms (policies from conf/arms), carrier (reply ->
carrier), ledger (the hybrid arm's code-written ledger), trajectory (the fold-and-recall state
machine over a ChatClient), grade (label-bound grader and carrier audit), validity (the one
validity rule), prompts, tokens, chat (the ChatClient protocol).
"""

from pipeline.carrier.arms import Arm, build_arms
from pipeline.carrier.fixture import Fixture, generate
from pipeline.carrier.grade import Grade, grade
from pipeline.carrier.trajectory import TrajectoryInputs, TrajectoryResult, run_trajectory
from pipeline.carrier.validity import Validity, ValidityInputs, decide
from pipeline.chat.messages import ChatClient, ChatMessage, ChatRequest, ChatResponse, Usage

__all__ = [
    "Arm",
    "ChatClient",
    "ChatMessage",
    "ChatRequest",
    "ChatResponse",
    "Fixture",
    "Grade",
    "TrajectoryInputs",
    "TrajectoryResult",
    "Usage",
    "Validity",
    "ValidityInputs",
    "build_arms",
    "decide",
    "generate",
    "grade",
    "run_trajectory",
]
