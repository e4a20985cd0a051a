"""Rule policies built from data, and the loader for every policy file.

A rule policy (conf/toolout/policies/NAME.yaml, `kind: rules`, the default) is Torana's
`tool_policies` list: ordered, first-match, case-insensitive `fnmatch` globs over the tool
name. The forced-exact layer runs first, whatever the rules say; an unmatched tool stays exact
(`unmatched`). Modes: exact, deterministic (optionally `first_pass`, with a `rerun` text),
keyword, model, source (accepted, behaves as exact: `source_is_exact`, as Torana does since
its aged-source markers caused re-read loops).

Decisions the seed leaves open: a glob is matched with `fnmatch.fnmatchcase` on the lower-
cased name and pattern (Torana uses Go's path.Match, where `*` does not cross `/`; tool names
have no `/`); an empty tool name stays exact (`no_tool_name`), as Torana skips it; `first_pass`
and `rerun` are allowed only on deterministic rules (Torana ignores them elsewhere; a file
that sets them elsewhere is a mistake); mode names must be lower case.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from functools import cached_property
from typing import Any, Literal, cast, get_args

from pipeline.toolout.policies.base import (
    NEVER,
    NEXT_REQUEST,
    ModelSummaries,
    OutputView,
    Policy,
    Recheck,
    Rendering,
    exact,
)
from pipeline.toolout.policies.forced_exact import forced_exact
from pipeline.toolout.policies.modes import render_deterministic, render_keyword, render_model
from pipeline.toolout.policies.peers import PEER_KINDS, build_peer
from pipeline.toolout.policies.spec import PolicyConfigError, check_keys, flag, text

RuleMode = Literal["exact", "deterministic", "keyword", "model", "source"]
RULE_MODES: tuple[str, ...] = get_args(RuleMode)


@dataclass(frozen=True)
class Rule:
    """One ordered rule: a case-insensitive glob over tool names and what to do with a match."""

    match: str
    mode: RuleMode
    first_pass: bool = False  # deterministic only: compact from the first exposure
    rerun: str = ""  # deterministic only: the recovery instruction ("" = Torana's default)

    def matches(self, tool_name: str) -> bool:
        return fnmatchcase(tool_name.lower(), self.match.lower())


@dataclass(frozen=True)
class RulePolicy:
    """Torana's compactor arms: forced-exact layer, then the first matching rule's mode."""

    name: str
    rules: tuple[Rule, ...]
    description: str = ""
    summaries: ModelSummaries = field(default_factory=ModelSummaries)
    gate_params: Mapping[str, float] = field(default_factory=dict)  # for the gate's builder
    stable: bool = True  # deterministic/keyword are pure; model reuses `previous`

    @cached_property
    def _matched(self) -> dict[str, tuple[int, Rule, str] | None]:
        """The first matching rule by tool name, with its label (`rules[i] glob`, the
        rendering's detail), filled as names are asked: a transcript has a handful of names,
        and each is asked on every render."""
        return {}

    def _match(self, tool_name: str) -> tuple[int, Rule, str] | None:
        matched = self._matched
        if tool_name in matched:
            return matched[tool_name]
        found = next(
            (
                (i, r, f"rules[{i}] {r.match}")
                for i, r in enumerate(self.rules)
                if r.matches(tool_name)
            ),
            None,
        )
        matched[tool_name] = found
        return found

    def rule_for(self, tool_name: str) -> tuple[int, Rule] | None:
        found = self._match(tool_name)
        return None if found is None else (found[0], found[1])

    def render(self, view: OutputView) -> Rendering:  # noqa: PLR0911 - one return per mode
        if not view.tool_name:
            return exact(view, "no_tool_name")
        forced = forced_exact(view.tool_name, view.content)
        if forced is not None:
            return exact(view, forced.reason, forced.evidence)
        found = self._match(view.tool_name)
        if found is None:
            return exact(view, "unmatched")
        _, rule, where = found
        if rule.mode == "exact":
            return exact(view, "rule_exact", where)
        if rule.mode == "source":
            return exact(view, "source_is_exact", where)
        if rule.mode == "deterministic":
            return render_deterministic(view, rule.first_pass, rule.rerun, where)
        if rule.mode == "keyword":
            return render_keyword(view, where)
        return render_model(view, self.summaries, where)

    def recheck(self, view: OutputView, rendering: Rendering) -> Recheck:
        """Ask again on the next request only while a later exposure can change the text.

        A compacted text never changes (stable); the forced-exact layer, exact and source
        rules and a decided deterministic or keyword rendering are pure functions of the
        output. Waiting for a first exposure, and a model candidate the gate or summariser
        kept exact (the gate prices the output's position, which moves), are asked again.
        """
        if rendering.changed:
            return NEVER
        if rendering.reason == "first_exposure":
            return NEXT_REQUEST
        if rendering.reason in ("no_tool_name", "unmatched", "gate_closed"):
            return NEVER
        if forced_exact(view.tool_name, view.content) is not None:
            return NEVER
        found = self.rule_for(view.tool_name)
        return NEXT_REQUEST if found is not None and found[1].mode == "model" else NEVER


# -- building from data ---------------------------------------------------------------------

_RULE_KEYS = frozenset({"match", "mode", "first_pass", "rerun"})
_GATE_KEYS = frozenset({"expected_applications"})


def _rule(where: str, data: Any) -> Rule:
    if not isinstance(data, Mapping):
        raise PolicyConfigError(f"{where}: expected a mapping with match and mode")
    check_keys(where, data, _RULE_KEYS)
    if "match" not in data or "mode" not in data:
        raise PolicyConfigError(f"{where}: match and mode are required")
    match = text(where, data, "match").strip()
    if not match:
        raise PolicyConfigError(f"{where}: match must be a non-empty glob")
    mode = text(where, data, "mode")
    if mode not in RULE_MODES:
        raise PolicyConfigError(
            f"{where}: unknown mode {mode!r}; expected one of {', '.join(RULE_MODES)}"
        )
    if mode != "deterministic" and ("first_pass" in data or "rerun" in data):
        raise PolicyConfigError(f"{where}: first_pass and rerun apply to deterministic rules only")
    return Rule(
        match, cast(RuleMode, mode), flag(where, data, "first_pass"), text(where, data, "rerun")
    )


def _gate_params(where: str, spec: Mapping[str, Any], rules: tuple[Rule, ...]) -> dict[str, float]:
    if "gate" not in spec:
        return {}
    gate = spec["gate"]
    if not isinstance(gate, Mapping):
        raise PolicyConfigError(f"{where}: gate must be a mapping")
    check_keys(f"{where}: gate", gate, _GATE_KEYS)
    if not any(r.mode == "model" for r in rules):
        raise PolicyConfigError(f"{where}: gate is set but no rule has mode model")
    params: dict[str, float] = {}
    for key, value in gate.items():
        if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
            raise PolicyConfigError(f"{where}: gate.{key} must be a positive number, not {value!r}")
        params[str(key)] = value
    return params


def build_rule_policy(
    name: str, spec: Mapping[str, Any], summaries: ModelSummaries | None = None
) -> RulePolicy:
    where = f"policy {name!r}"
    check_keys(where, spec, {"name", "kind", "description", "rules", "gate"})
    raw_rules = spec.get("rules")
    if not isinstance(raw_rules, list) or not raw_rules:
        raise PolicyConfigError(f"{where}: rules must be a non-empty list")
    rules = tuple(_rule(f"{where}: rules[{i}]", r) for i, r in enumerate(raw_rules))
    return RulePolicy(
        name=name,
        rules=rules,
        description=text(where, spec, "description"),
        summaries=summaries or ModelSummaries(),
        gate_params=_gate_params(where, spec, rules),
    )


def build_policy(spec: Mapping[str, Any], *, summaries: ModelSummaries | None = None) -> Policy:
    """One policy from its file's mapping; `kind` picks rules (the default), control or a peer.

    `summaries` reaches the model mode of rule policies; the other kinds ignore it.
    """
    if not isinstance(spec, Mapping):
        raise PolicyConfigError(f"policy: expected a mapping, got {type(spec).__name__}")
    name = spec.get("name")
    if not isinstance(name, str) or not name.strip():
        raise PolicyConfigError(f"policy: name must be a non-empty string, not {name!r}")
    kind = spec.get("kind", "rules")
    if kind == "rules":
        return build_rule_policy(name, spec, summaries)
    if kind in PEER_KINDS:
        return build_peer(name, kind, spec)
    kinds = ", ".join(["rules", *PEER_KINDS])
    raise PolicyConfigError(f"policy {name!r}: unknown kind {kind!r}; expected one of {kinds}")


def load_policies(
    specs: Iterable[Mapping[str, Any]], *, summaries: ModelSummaries | None = None
) -> dict[str, Policy]:
    """Every policy, by name in the order given; a name defined twice is an error."""
    policies: dict[str, Policy] = {}
    for spec in specs:
        policy = build_policy(spec, summaries=summaries)
        if policy.name in policies:
            raise PolicyConfigError(f"policy {policy.name!r}: defined twice")
        policies[policy.name] = policy
    return policies
