"""Limit groups: configurations on one key or account share that account's limits.

Hosted providers limit requests per key, not per configuration: two configurations on one
OpenRouter key would each get the full rpm if each paced alone. A configuration names its
group in `limits.group` (`{name, rpm, tpm}`); every member states the same limits (a YAML
anchor writes them once) and `check_limit_groups` refuses any difference in one line, so the
group's limits are never ambiguous.

One owner (decision): the group's bucket is one `EndpointLimiter`, built by `group_limiters`
inside the one EndpointWorker actor that hosts every member (pipeline.sweep.actors bundles a
group onto one worker whatever `ray.endpoints_per_worker` says). Splitting a group over actors
would give each its own bucket and the account the sum.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from pipeline.config import ConfigError, EndpointConfig, LimitGroup, Limits
from pipeline.endpoints.limits import EndpointLimiter


def check_limit_groups(panel: str, configs: Iterable[EndpointConfig]) -> dict[str, LimitGroup]:
    """Group name -> its limits; a one-line ConfigError if two members state different ones."""
    groups: dict[str, tuple[LimitGroup, str]] = {}
    for config in configs:
        group = config.limits.group
        if group is None:
            continue
        first = groups.setdefault(group.name, (group, config.config_id))
        if first[0] != group:
            raise ConfigError(
                f"panel '{panel}': limit group '{group.name}' is {_limits(first[0])} in "
                f"{first[1]} but {_limits(group)} in {config.config_id}; state the group's "
                "limits once (a YAML anchor) and name it the same way in every member"
            )
    return {name: group for name, (group, _) in groups.items()}


def group_of(config: EndpointConfig) -> str | None:
    """The limit group a configuration belongs to (None: it is limited alone)."""
    return config.limits.group.name if config.limits.group is not None else None


def group_limiters(
    configs: Iterable[EndpointConfig], *, headroom: float = 0.0
) -> dict[str, EndpointLimiter]:
    """One shared limiter per group among `configs` (the members one actor hosts).

    The group's concurrency is the sum of its members' caps, so only its rates bind: each
    member's own `limits.concurrency` still caps that member.
    """
    members = list(configs)
    groups = check_limit_groups("hosted by one worker", members)
    slots: Mapping[str, int] = {
        name: sum(c.limits.concurrency for c in members if group_of(c) == name) for name in groups
    }
    return {
        name: EndpointLimiter(
            Limits(rpm=group.rpm, tpm=group.tpm, concurrency=slots[name]), headroom=headroom
        )
        for name, group in groups.items()
    }


def _limits(group: LimitGroup) -> str:
    axes = (("rpm", group.rpm), ("tpm", group.tpm))
    return ", ".join(
        f"{axis} {value:g}" if value is not None else f"{axis} unset" for axis, value in axes
    )
