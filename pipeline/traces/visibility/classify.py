"""Class a template by which stored reasoning its rendered prompt keeps.

The evidence is the template's records (`visibility.matrix`) that rendered, under the default
switches (none passed), in the dialects the template reads. A dialect is *read* when at least
one secret stored under it reaches the prompt in some default render; a template that reads no
dialect is `never`. Over that evidence, a secret's position is three facts: it is on a
tool-call turn (T), a user turn follows it (U), a plain assistant reply follows it (P). The
visibility class is the first rule that every piece of evidence obeys:

- `never`: no secret survives.
- `always`: every secret survives.
- `after_last_user`: a secret survives exactly when no user turn follows it (not U). The Qwen3
  rule: reasoning is kept on assistant turns after the last real user message, so a tool loop
  keeps it while open and loses it when a new user question arrives.
- `until_plain_reply`: a secret survives exactly when it is on a tool-call turn and no plain
  reply follows it (T and not P), whether or not a user turn follows. The Kimi-K2 rule: the
  last assistant turn without tool calls and everything before it lose their reasoning.
- `irregular`: none of the above fits (the report shows the template's rows);
  `unrenderable`: no default render succeeded, so there is no evidence; `unrenderable_reason`
  says why: the bound hit (`recursion`, `time`, `output_size`, `memory`) when every failed
  render hit the same one, else `template_error` (the template's own error, e.g. a syntax
  error or `raise_exception`), or `mixed`.

`classify_setting` classes the records of one switch setting the same way (the class per
switch value, issue 21); `classify_template` is the default setting's class plus the facts
below. A setting the template itself refuses (every render stopped by its own
`raise_exception`, while the default renders) is no class of the template: `refusal` says so,
and `setting_rows` marks it `value_not_accepted` (issue 32: gpt-oss probed with
`reasoning_effort=true` was reported "unrenderable").

The shape matrix separates the rules: a tool-call turn followed by a user turn survives under
`until_plain_reply` only, and a plain reply inside an open loop survives under
`after_last_user` only.

Beside the class: `crashes` (every failed default render: shape and error),
`tool_calls_dropped` (tool-call shapes rendered, and no tool call's argument token reached any
prompt: the template drops tool calls altogether), and `switch_effects` (switches mentioned by
the template whose settings change some secret's survival against the default render).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

Record = Mapping[str, object]
Rule = Callable[[Record], bool]

VISIBILITY_CLASSES = (
    "never",
    "always",
    "after_last_user",
    "until_plain_reply",
    "irregular",
    "unrenderable",
)

NOT_ACCEPTED = "value_not_accepted"
"""Not a class: the template refused the setting's value (`refusal`)."""
REFUSED_BY_TEMPLATE = "RaisedByTemplate"  # render.RaisedByTemplate's name in a record

RULES: tuple[tuple[str, Rule], ...] = (
    ("after_last_user", lambda r: not r["secret_user_after"]),
    (
        "until_plain_reply",
        lambda r: bool(r["secret_on_tool_call_turn"]) and not r["secret_plain_reply_after"],
    ),
)


@dataclass(frozen=True)
class Crash:
    """One failed render: the shape, the switches passed, and the error (type, one line)."""

    shape: str
    switches: str
    error_type: str
    error_message: str


@dataclass(frozen=True)
class TemplateClass:
    """A template's visibility class and the facts beside it (see the module docstring)."""

    template: str
    visibility: str
    dialects_read: tuple[str, ...]
    tool_calls_dropped: bool
    crashes: tuple[Crash, ...]
    switch_effects: tuple[str, ...]
    shapes_rendered: int
    shapes_crashed: int
    unrenderable_reason: str = ""
    switches_read: tuple[str, ...] = ()


def visibility_of(evidence: Sequence[Record]) -> str:
    """The class that `evidence` (rendered records in read dialects) obeys; see module doc."""
    survived = [bool(r["in_rendered"]) for r in evidence]
    if not any(survived):
        return "never"
    if all(survived):
        return "always"
    for name, rule in RULES:
        if all(rule(r) == s for r, s in zip(evidence, survived, strict=True)):
            return name
    return "irregular"


def _crashes(records: Iterable[Record]) -> tuple[Crash, ...]:
    seen: dict[tuple[str, str], Crash] = {}
    for r in records:
        if not r["rendered"]:
            key = (str(r["shape"]), str(r["switches"]))
            seen.setdefault(
                key, Crash(key[0], key[1], str(r["error_type"]), str(r["error_message"]))
            )
    return tuple(seen.values())


def _survival(records: Iterable[Record]) -> dict[tuple[str, str], bool]:
    return {(str(r["shape"]), str(r["secret"])): bool(r["in_rendered"]) for r in records}


def _switch_effects(records: Sequence[Record]) -> tuple[str, ...]:
    rendered = [r for r in records if r["rendered"]]
    default = _survival(r for r in rendered if r["default_switches"])
    settings = {str(r["switches"]) for r in rendered if not r["default_switches"]}
    effects: set[str] = set()
    for setting in settings:
        kept = _survival(r for r in rendered if r["switches"] == setting)
        if any(key in default and default[key] != value for key, value in kept.items()):
            effects |= {part.split("=", 1)[0] for part in setting.split(",") if part}
    return tuple(sorted(effects))


def unrenderable_reason(records: Sequence[Record]) -> str:
    """Why none of `records` rendered: the one bound every failure hit, else see module doc."""
    limits = {str(r.get("render_limit") or "") for r in records if not r["rendered"]}
    if not limits:
        return ""
    if len(limits) == 1:
        return limits.pop() or "template_error"
    return "mixed"


def _class_of(records: Sequence[Record]) -> tuple[str, tuple[str, ...], str]:
    """(class, dialects read, unrenderable reason) of one setting's records."""
    rendered = [r for r in records if r["rendered"]]
    if not rendered:
        return "unrenderable", (), unrenderable_reason(records)
    read = tuple(sorted({str(r["dialect"]) for r in rendered if r["in_rendered"]}))
    return visibility_of([r for r in rendered if r["dialect"] in read]), read, ""


def classify_setting(records: Sequence[Record], switches: str) -> tuple[str, str]:
    """(class, unrenderable reason) of the records rendered under `switches` (a label)."""
    visibility, _, reason = _class_of([r for r in records if r["switches"] == switches])
    return visibility, reason


def refusal(records: Sequence[Record], switches: str) -> str:
    """`type: message` of the template's refusal of the setting `switches`, else "".

    Refused: a non-default setting none of whose renders succeeded, each stopped by the
    template's own `raise_exception`, while some default render succeeded (a template that
    refuses everything is `unrenderable`, not picky about a value).
    """
    mine = [r for r in records if r["switches"] == switches]
    if not switches or not mine:
        return ""
    if any(r["rendered"] or r["error_type"] != REFUSED_BY_TEMPLATE for r in mine):
        return ""
    if not any(r["rendered"] for r in records if r["default_switches"]):
        return ""
    return f"{mine[0]['error_type']}: {mine[0]['error_message']}"


def classify_template(name: str, records: Sequence[Record]) -> TemplateClass:
    """One template's class from its records (all switch settings may be present)."""
    default = [r for r in records if r["default_switches"]]
    rendered = [r for r in default if r["rendered"]]
    visibility, read, reason = _class_of(default)
    with_calls = [r for r in rendered if r["has_tool_calls"]]
    crashes = _crashes(default)
    settings = {str(r["switches"]) for r in records}
    switches = sorted({p.split("=", 1)[0] for s in settings for p in s.split(",") if p})
    return TemplateClass(
        template=name,
        visibility=visibility,
        dialects_read=read,
        tool_calls_dropped=bool(with_calls)
        and not any(r["tool_calls_rendered"] for r in with_calls),
        crashes=crashes,
        switch_effects=_switch_effects(records),
        shapes_rendered=len({r["shape"] for r in rendered}),
        shapes_crashed=len({c.shape for c in crashes}),
        unrenderable_reason=reason,
        switches_read=tuple(switches),
    )


def classify(records: Iterable[Record]) -> dict[str, TemplateClass]:
    """Every template's class, keyed by template name (records as `visibility.matrix` gives)."""
    by_template: dict[str, list[Record]] = defaultdict(list)
    for record in records:
        by_template[str(record["template"])].append(record)
    return {name: classify_template(name, rs) for name, rs in sorted(by_template.items())}


def as_rows(classes: Mapping[str, TemplateClass]) -> list[dict[str, object]]:
    """One flat row per template (the report's visibility matrix, a small Parquet table)."""
    return [
        {
            "template": c.template,
            "visibility": c.visibility,
            "dialects_read": ",".join(c.dialects_read),
            "tool_calls_dropped": c.tool_calls_dropped,
            "switch_effects": ",".join(c.switch_effects),
            "shapes_rendered": c.shapes_rendered,
            "shapes_crashed": c.shapes_crashed,
            "unrenderable_reason": c.unrenderable_reason,
            "switches_read": ",".join(c.switches_read),
            "crash_errors": "; ".join(
                sorted({f"{x.error_type}: {x.error_message}" for x in c.crashes})
            ),
        }
        for c in classes.values()
    ]


def setting_rows(records: Iterable[Record]) -> list[dict[str, object]]:
    """One row per (template, switch setting): the class under that setting (issue 21)."""
    by_template: dict[str, list[Record]] = defaultdict(list)
    for record in records:
        by_template[str(record["template"])].append(record)
    rows: list[dict[str, object]] = []
    for name, mine in sorted(by_template.items()):
        for label in sorted({str(r["switches"]) for r in mine}, key=lambda x: (x != "", x)):
            visibility, reason = classify_setting(mine, label)
            if refusal(mine, label):
                visibility, reason = NOT_ACCEPTED, ""
            rows.append(
                {
                    "template": name,
                    "switches": label,
                    "visibility": visibility,
                    "unrenderable_reason": reason,
                }
            )
    return rows
