"""Environments a rollout runs in: one session at a time each, reset between sessions.

- XvfbEnvironment: a private Xvfb display of its own (its own X server, so
  environments never see each other's windows or input), with an optional app
  restarted fresh for every rollout.
- WebEnvironment: a page of a headless Chromium (shared between environments or
  its own), opened fresh at the task's URL for every rollout.
- VncEnvironment: a desktop some VNC server serves (a VM, a remote machine), with
  the caller's reset command run before every rollout.
- SandboxEnvironment: a fresh holodesk sandbox container for every rollout
  (docker or podman), driven over VNC.

Anything with `name`, `start()`, `reset(task) -> Backend` and `close()` is an
environment too. Every method blocks (processes, browsers): rollouts call them in
a worker thread. The backend reset() returns belongs to the rollout, which closes it.
"""

from holodesk.client.rollouts.environments.base import Environment
from holodesk.client.rollouts.environments.sandbox import SandboxEnvironment
from holodesk.client.rollouts.environments.vnc import VncEnvironment
from holodesk.client.rollouts.environments.web import WebEnvironment
from holodesk.client.rollouts.environments.xvfb import AppFactory, XvfbEnvironment

__all__ = [
    "AppFactory",
    "Environment",
    "SandboxEnvironment",
    "VncEnvironment",
    "WebEnvironment",
    "XvfbEnvironment",
]
