"""The policies a running daemon serves, by name, with its default."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

from holodesk.daemon.errors import NotFound, Unavailable
from holodesk.daemon.policies.base import Policy

log = logging.getLogger(__name__)


class PolicyCatalog:
    def __init__(self, policies: Sequence[Policy], default: str | None = None) -> None:
        if not policies:
            raise ValueError("a daemon needs at least one policy")
        self._policies = {p.name: p for p in policies}
        if len(self._policies) != len(policies):
            raise ValueError("policy names must be unique")
        self.default = default or policies[0].name
        if self.default not in self._policies:
            raise ValueError(f"default policy {self.default!r} is not among the policies")

    @property
    def policies(self) -> tuple[Policy, ...]:
        return tuple(self._policies.values())

    @property
    def ready(self) -> bool:
        return all(p.ready for p in self._policies.values())

    def get(self, name: str) -> Policy:
        """The named policy ("" for the default), ready to use."""
        policy = self._policies.get(name or self.default)
        if policy is None:
            raise NotFound("policy", name, f"available: {', '.join(sorted(self._policies))}")
        if not policy.ready:
            raise Unavailable(f"policy {policy.name!r} is still starting", retry_after_s=2.0)
        return policy

    async def start(self) -> None:
        await asyncio.gather(*(p.start() for p in self._policies.values()))

    async def close(self) -> None:
        for policy in self._policies.values():
            try:
                await policy.close()
            except Exception:
                log.exception("closing policy %s failed", policy.name)
