"""The values worth passing for a switch, read from the template's own use of it (issue 32).

Probing every switch with true/false made gpt-oss's string `reasoning_effort` (concatenated
into the system message) and Kimi-K3's list-valued `image_prompts` (iterated) "unrenderable",
and a name the template defaults itself (Seed-OSS `thinking_budget`, Kimi-K3
`thinking_effort`) was not a switch at all. Decisions (docs/traces.md, "Reasoning traces:
thinking switches"), all read from the Jinja syntax tree, nothing evaluated:

- *Self-defaulted*: `{% if x is not defined %}{% set x = ... %}` (or `not x is defined`,
  `x is undefined`) makes `x` a name the template expects from its caller: a switch. A
  constant it sets there (`-1`, `'medium'`, `false`) is one of its values.
- *Numbers*: `x` compared (`==`, `!=`, `<`, `<=`, `>`, `>=`, also through a filter such as
  `x | int`) with numeric constants: probe 0, -1, and one positive above every bound (the
  largest bound + 1, at least 1), so `== 0`, `< 0` and `<= 512` each get both sides.
- *Members*: `x in [...]` / `x not in [...]` (a list or tuple of constants): each member.
  Strings compared with `==` / `!=` are values too.
- *Lists*: `{% for v in x %}` (also `x | ...`): `[]` and a one-item list `["probe"]`, never a
  boolean (a boolean is not iterable).
- *Booleans* only for a name used bare (`if x`, `not x`, `x and y`), tested `is true` /
  `is false`, or shown nothing else: true and false, as before issue 32. A name with a typed
  use above gets the typed values only (a bare `if x` then tests the value's truthiness).
A value the template still refuses (`raise_exception`) is reported apart by the classifier
(`classify.refused_settings`), never as a class.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from jinja2 import nodes

SwitchValue = bool | int | float | str | tuple[str, ...]
LIST_PROBE: tuple[str, ...] = ("probe",)
_ORDERED = frozenset({"eq", "ne", "gt", "gteq", "lt", "lteq"})


@dataclass
class _Use:
    """What the template does with one name."""

    numbers: set[int | float] = field(default_factory=set)  # probe values, not bounds
    bounds: set[int | float] = field(default_factory=set)
    strings: set[str] = field(default_factory=set)
    booleans: set[bool] = field(default_factory=set)
    iterated: bool = False


def _walk(node: nodes.Node) -> Iterator[nodes.Node]:
    yield node
    for child in node.iter_child_nodes():
        yield from _walk(child)


def _is(node: nodes.Node, name: str) -> bool:
    """`node` is the name itself, or the name through filters (`x | int`, `x | lower`)."""
    while isinstance(node, nodes.Filter) and node.node is not None:
        node = node.node
    return isinstance(node, nodes.Name) and node.name == name


def _constant(node: nodes.Node) -> object:
    """A constant's value (`-1` parses as Neg(Const 1)); `None` when not a constant."""
    if isinstance(node, nodes.Const):
        return node.value
    if isinstance(node, nodes.Neg) and isinstance(node.node, nodes.Const):
        value = node.node.value
        if isinstance(value, int | float) and not isinstance(value, bool):
            return -value
    return None


def _add(use: _Use, value: object, *, bound: bool) -> None:
    if isinstance(value, bool):
        use.booleans.add(value)
    elif isinstance(value, int | float):
        (use.bounds if bound else use.numbers).add(value)
    elif isinstance(value, str):
        use.strings.add(value)


def _undefined_test(test: nodes.Node) -> str | None:
    """The name `test` asks "is it not defined?" of, else None."""
    if isinstance(test, nodes.Not) and isinstance(test.node, nodes.Test):
        inner = test.node
        if inner.name == "defined" and isinstance(inner.node, nodes.Name):
            return inner.node.name
    if (
        isinstance(test, nodes.Test)
        and test.name == "undefined"
        and isinstance(test.node, nodes.Name)
    ):
        return test.node.name
    return None


def self_defaults(tree: nodes.Template) -> dict[str, list[object]]:
    """Every name the template defaults itself, with the constants it sets (see module doc)."""
    found: dict[str, list[object]] = {}
    for node in _walk(tree):
        if not isinstance(node, nodes.If) or (name := _undefined_test(node.test)) is None:
            continue
        for statement in node.body:
            for inner in _walk(statement):
                if (
                    isinstance(inner, nodes.Assign)
                    and isinstance(inner.target, nodes.Name)
                    and inner.target.name == name
                ):
                    found.setdefault(name, []).append(_constant(inner.node))
    return found


def _compare(use: _Use, node: nodes.Compare, name: str) -> None:
    operands = [node.expr, *(op.expr for op in node.ops)]
    if not any(_is(o, name) for o in operands):
        return
    for op in node.ops:
        if op.op in ("in", "notin") and _is(node.expr, name):
            if isinstance(op.expr, nodes.List | nodes.Tuple):
                for item in op.expr.items:
                    _add(use, _constant(item), bound=False)
        elif op.op in _ORDERED:
            for operand in operands:
                _add(use, _constant(operand), bound=True)


def _use_of(tree: nodes.Template, name: str, defaults: list[object]) -> _Use:
    use = _Use()
    for value in defaults:
        _add(use, value, bound=False)
    for node in _walk(tree):
        if isinstance(node, nodes.Compare):
            _compare(use, node, name)
        elif isinstance(node, nodes.For) and _is(node.iter, name):
            use.iterated = True
        elif isinstance(node, nodes.Test) and node.name in ("true", "false", "boolean"):
            use.booleans |= {True, False} if _is(node.node, name) else set()
    return use


def values_of(
    tree: nodes.Template, name: str, defaults: list[object] | None = None
) -> tuple[SwitchValue, ...]:
    """The values to probe `name` with (unset is always tried besides); see module doc."""
    use = _use_of(tree, name, defaults or [])
    numbers: set[int | float] = set(use.numbers)
    if use.bounds:
        numbers |= {0, -1, max(*use.bounds, 0) + 1}
    typed: list[SwitchValue] = [*sorted(numbers), *sorted(use.strings)]
    if use.iterated:
        typed += [(), LIST_PROBE]
    if not typed:
        return (True, False)
    return (*typed, *sorted(use.booleans, reverse=True))
