"""Compaction policies as data: the arms of the tool-output study.

`build_policy(spec)` turns one conf/toolout/policies/NAME.yaml mapping into a `Policy`;
`load_policies(specs)` builds them all. The replay asks `policy.render(view)` for every tool
output visible in every request (base.py states the contract). Kinds: `rules` (Torana's
forced-exact layer, then ordered first-match globs: exact, deterministic, keyword, model,
source), `control`, and the peer replicas in peers.py. Pure: no I/O, no model calls.
"""

from pipeline.toolout.policies.base import (
    Gate,
    Mode,
    ModelSummaries,
    OutputRef,
    OutputView,
    Policy,
    Rendering,
    Summariser,
)
from pipeline.toolout.policies.forced_exact import MIN_ELIGIBLE_BYTES, ForcedExact, forced_exact
from pipeline.toolout.policies.modes import deterministic_replacement, keyword_extract, worthwhile
from pipeline.toolout.policies.peers import (
    ClearToolUses,
    ControlPolicy,
    LastNObservations,
    ObservationMasking,
    TruncateOnArrival,
)
from pipeline.toolout.policies.rules import Rule, RulePolicy, build_policy, load_policies
from pipeline.toolout.policies.spec import PolicyConfigError

__all__ = [
    "MIN_ELIGIBLE_BYTES",
    "ClearToolUses",
    "ControlPolicy",
    "ForcedExact",
    "Gate",
    "LastNObservations",
    "Mode",
    "ModelSummaries",
    "ObservationMasking",
    "OutputRef",
    "OutputView",
    "Policy",
    "PolicyConfigError",
    "Rendering",
    "Rule",
    "RulePolicy",
    "Summariser",
    "TruncateOnArrival",
    "build_policy",
    "deterministic_replacement",
    "forced_exact",
    "keyword_extract",
    "load_policies",
    "worthwhile",
]
