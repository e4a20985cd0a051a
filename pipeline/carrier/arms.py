"""Arm policy objects, built from the arm data files in conf/arms/.

An arm is data: adding conf/arms/NAME.yaml adds an arm with no code change. This module turns
one ArmConfig into the request shape it sends (schema or plain) and the rule that turns a
reply into the next carrier. Unknown representations or prompt ids fail at load, before any
request is sent.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pipeline.carrier.config import ArmConfig, FieldSpec
from pipeline.carrier.prompts import HEADINGS, SYSTEM_PROMPTS, prompt_sha256
from pipeline.chat.messages import ResponseSchema
from pipeline.usererror import UserError

SCHEMA_REPRESENTATIONS = frozenset(
    {"single_field", "five_fields", "deployed_schema", "semantic_fields"}
)
PLAIN_REPRESENTATIONS = frozenset({"plain", "headings"})
CARRIER_RULES = {
    # representation kind -> allowed carrier_from_reply values
    "schema": frozenset({"raw", "parsed", "rendered"}),
    "plain": frozenset({"text"}),
}


class ArmError(UserError):
    """An arm data file is inconsistent; the message names the file's field to fix."""


@dataclass(frozen=True)
class Arm:
    """The policy of one arm: what it asks for and how the reply becomes the carrier."""

    name: str
    config: ArmConfig
    system_prompt: str
    system_prompt_sha256: str
    schema: ResponseSchema | None

    @property
    def fields(self) -> tuple[FieldSpec, ...]:
        return self.config.fields

    @property
    def output_tokens(self) -> int:
        return self.config.output_tokens

    @property
    def carry_cap_tokens(self) -> int:
        return self.config.carry_cap_tokens

    @property
    def carrier_from_reply(self) -> str:
        return self.config.carrier_from_reply

    @property
    def ledger_budget_chars(self) -> int | None:
        return self.config.ledger.budget_chars if self.config.ledger else None

    @property
    def declared_capacity_chars(self) -> int | None:
        """Declared total character allowance: the sum of field ceilings, when all declared.

        The deployed schema counts only its summary field, since the title is not carried
        as memory in any arm that parses it and the paper states f's capacity as 1,024.
        """
        fields = [f for f in self.fields if f.name != "title"]
        if not fields or any(f.max_chars is None for f in fields):
            return None
        return sum(f.max_chars or 0 for f in fields)

    @property
    def headings(self) -> tuple[str, ...]:
        """Headings a rendered carrier gets (field descriptions' names for schema arms)."""
        if self.carrier_from_reply == "rendered":
            return tuple(heading_for(f) for f in self.fields)
        return HEADINGS


def heading_for(field: FieldSpec) -> str:
    """The rendered heading of a field: the text before ':' in its description, else its name."""
    head = field.description.split(":", 1)[0].strip()
    if head and len(head) <= 40 and ":" in field.description:
        return head
    return field.name.replace("_", " ").capitalize()


def build_schema(name: str, fields: tuple[FieldSpec, ...]) -> ResponseSchema:
    """A strict JSON schema: every field a required string, maxLength where declared."""
    properties: dict[str, Any] = {}
    for field in fields:
        prop: dict[str, Any] = {"type": "string"}
        if field.description:
            prop["description"] = field.description
        if field.max_chars is not None:
            prop["maxLength"] = field.max_chars
        properties[field.name] = prop
    schema: Mapping[str, Any] = {
        "type": "object",
        "properties": properties,
        "required": [f.name for f in fields],
        "additionalProperties": False,
    }
    return ResponseSchema(name=f"carrier_{name}", schema=schema)


def build_arm(config: ArmConfig) -> Arm:
    """Validate one arm's data and build its policy object."""
    where = f"conf/arms/{config.name}.yaml"
    if config.system_prompt not in SYSTEM_PROMPTS:
        raise ArmError(
            f"{where}: unknown system_prompt '{config.system_prompt}'; "
            f"choose one of {', '.join(sorted(SYSTEM_PROMPTS))}"
        )
    rep = config.representation
    if rep in SCHEMA_REPRESENTATIONS:
        kind = "schema"
        if not config.fields:
            raise ArmError(f"{where}: representation '{rep}' needs at least one field")
    elif rep in PLAIN_REPRESENTATIONS:
        kind = "plain"
        if config.fields:
            raise ArmError(f"{where}: plain representation '{rep}' takes no fields")
    else:
        known = sorted(SCHEMA_REPRESENTATIONS | PLAIN_REPRESENTATIONS)
        raise ArmError(f"{where}: unknown representation '{rep}'; choose one of {known}")
    if config.carrier_from_reply not in CARRIER_RULES[kind]:
        raise ArmError(
            f"{where}: carrier_from_reply '{config.carrier_from_reply}' does not fit "
            f"representation '{rep}'; choose one of {sorted(CARRIER_RULES[kind])}"
        )
    needs_summary = config.carrier_from_reply == "parsed" and len(config.fields) > 1
    if needs_summary and not any(f.name == "summary" for f in config.fields):
        raise ArmError(f"{where}: 'parsed' with several fields needs a 'summary' field")
    if config.output_tokens <= 0 or config.carry_cap_tokens <= 0:
        raise ArmError(f"{where}: output_tokens and carry_cap_tokens must be positive")
    text = SYSTEM_PROMPTS[config.system_prompt]
    schema = build_schema(config.name, config.fields) if kind == "schema" else None
    return Arm(
        name=config.name,
        config=config,
        system_prompt=text,
        system_prompt_sha256=prompt_sha256(text),
        schema=schema,
    )


def build_arms(configs: Mapping[str, ArmConfig]) -> dict[str, Arm]:
    """Build every selected arm, keyed by name, in a stable (sorted) order."""
    arms: dict[str, Arm] = {}
    for key in sorted(configs):
        config = configs[key]
        if config.name != key:
            raise ArmError(f"conf/arms/{key}.yaml: name '{config.name}' must equal the file name")
        arms[key] = build_arm(config)
    return arms
