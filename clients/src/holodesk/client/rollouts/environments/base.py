"""What every environment is: the Environment protocol, and start()/close() as a
context manager for the ready-made ones."""

from __future__ import annotations

import itertools
from types import TracebackType
from typing import Protocol, Self, runtime_checkable

from holodesk.client.rollouts.trajectory import RolloutTask
from holodesk.platform.base import Backend


@runtime_checkable
class Environment(Protocol):
    name: str

    def start(self) -> None:
        """Bring the environment up; a second call does nothing."""

    def reset(self, task: RolloutTask) -> Backend:
        """A fresh state for `task`, and a backend that drives it."""
        ...

    def close(self) -> None: ...


class Managed:
    """start()/close() as a context manager."""

    def start(self) -> None:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


_numbers = itertools.count(1)


def numbered(kind: str) -> str:
    """A name unique in this process, for an environment its maker did not name."""
    return f"{kind}-{next(_numbers)}"
