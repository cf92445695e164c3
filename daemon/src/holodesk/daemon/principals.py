"""Who calls the daemon: a Principal (name, Role, how it authenticated) and the roles.

On the floor, beside the other plain values: the gRPC layer makes principals
(rpc/auth.py, from the credentials file in rpc/credentials.py), while sessions,
the live view and the computer API only read them (who started a session, who may
resume or drive it), so none of those needs the gRPC plumbing for it.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Role(enum.Enum):
    AGENT = "agent"
    # Drives attached desktops through ComputerService (and is an agent too).
    OPERATOR = "operator"
    # Changes a policy's weights through TrainerService (and is an agent too: an RL
    # trainer runs its rollouts' sessions as well).
    TRAINER = "trainer"
    ADMIN = "admin"

    def allows(self, required: Role) -> bool:
        if self is Role.ADMIN or required is Role.AGENT:
            return True
        return self is required and required in (Role.OPERATOR, Role.TRAINER)


class AuthMethod(enum.Enum):
    TOKEN = "token"
    MTLS = "mtls"
    UNIX = "unix"
    NONE = "none"


@dataclass(frozen=True)
class Principal:
    """An authenticated caller; `name` is unique across methods ("token:laptop")."""

    name: str
    role: Role
    method: AuthMethod
    # An operator's other principals whose attached desktops it may drive.
    drives: tuple[str, ...] = ()

    def may_drive(self, owner: str) -> bool:
        """Whether this caller may drive a desktop attached by `owner`."""
        if self.role is Role.ADMIN:
            return True
        return self.role is Role.OPERATOR and (owner == self.name or owner in self.drives)


ANONYMOUS = Principal("anonymous", Role.ADMIN, AuthMethod.NONE)
