"""Daemon settings (what the CLI flags become), and where the daemon listens."""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from holodesk.daemon.session import decoded_screens, frame_memory
from holodesk.proto.defaults import DEFAULT_ADDRESS

MIB = 1024 * 1024
DEFAULT_LISTEN = DEFAULT_ADDRESS
UNIX_PREFIX = "unix:"
# The default per-principal cap is max_sessions / FAIR_SHARE_DIVISOR: whatever one
# caller does, at least this many callers can hold an equal share at once.
FAIR_SHARE_DIVISOR = 4


@dataclass(frozen=True)
class ListenAddress:
    """`HOST:PORT` ([::1]:PORT for IPv6) or `unix:PATH` (a Unix-domain socket)."""

    host: str = ""
    port: int = 0
    unix_path: str | None = None

    @property
    def is_unix(self) -> bool:
        return self.unix_path is not None

    @property
    def is_loopback(self) -> bool:
        return self.is_unix or is_loopback(self.host)

    @property
    def target(self) -> str:
        """The address as gRPC takes it."""
        if self.unix_path is not None:
            return UNIX_PREFIX + self.unix_path
        return f"{self.host}:{self.port}"


def parse_listen(listen: str) -> ListenAddress:
    if listen.startswith(UNIX_PREFIX):
        raw = listen[len(UNIX_PREFIX) :]
        # gRPC spells absolute paths unix:/p or unix:///p; relative ones unix:p.
        path = "/" + raw.lstrip("/") if raw.startswith("/") else raw
        if not raw or raw.endswith("/"):
            raise ValueError(f"listen address {listen!r}: unix:PATH needs a socket file path")
        return ListenAddress(unix_path=str(Path(path).absolute()))
    if listen.startswith("unix-abstract:"):
        raise ValueError(
            "abstract Unix sockets have no file permissions to protect them; "
            "use unix:PATH (a socket file, created with mode 0600)"
        )
    host, port = split_listen(listen)
    return ListenAddress(host=host, port=port)


def split_listen(listen: str) -> tuple[str, int]:
    """HOST:PORT (IPv6 as [::1]:PORT) -> (host, port)."""
    host, sep, port_text = listen.rpartition(":")
    if not sep or not host or not port_text.isdigit() or int(port_text) > 65535:
        raise ValueError(f"listen address {listen!r} is not HOST:PORT or unix:PATH")
    return host, int(port_text)


def is_loopback(host: str) -> bool:
    bare = host.strip("[]")
    if bare == "localhost":
        return True
    try:
        return ipaddress.ip_address(bare).is_loopback
    except ValueError:
        return False


def parse_metrics_address(text: str) -> tuple[str, int]:
    """``HOST:PORT`` ([::1]:PORT for IPv6), or a bare ``PORT`` on loopback."""
    text = text.strip()
    if text.isdigit() and int(text) <= 65535:
        return "127.0.0.1", int(text)
    try:
        host, port = split_listen(text)
    except ValueError:
        raise ValueError(
            f"--metrics-address {text!r} is not HOST:PORT or PORT (e.g. 127.0.0.1:9464)"
        ) from None
    return host.strip("[]"), port


@dataclass(frozen=True)
class ServerConfig:
    listen: str = DEFAULT_LISTEN
    # Built through the policy registry unless serve() is handed policies directly.
    # The CPU baseline until a model engine (vllm, openai, transformers) is configured.
    policy: str = "ocr"
    policy_options: Mapping[str, str] = field(default_factory=dict)
    # gRPC's own limit on any message, both directions: larger ones fail with
    # RESOURCE_EXHAUSTED before the daemon sees them.
    max_message_bytes: int = 32 * MIB
    # A frame's image bytes and declared pixels; larger ones are INVALID_ARGUMENT.
    max_frame_bytes: int = 16 * MIB
    max_frame_pixels: int = 40_000_000
    # The frames all sessions' history windows hold together (frame_memory.py).
    max_frame_memory_bytes: int = frame_memory.DEFAULT_MAX_BYTES
    # Pixels of screens rebuilt lately, so a delta paints on its base without
    # decoding it again (decoded_screens.py); 0: always decode.
    decoded_screen_bytes: int = decoded_screens.DEFAULT_MAX_BYTES
    # ... of which this much is also held unpacked, for the steps in flight.
    raw_screen_bytes: int = decoded_screens.DEFAULT_HOT_BYTES
    # Offer clients delta frames (unchanged screens and changed regions only).
    frame_deltas: bool = True
    # Default and ceiling for a session's model steps.
    max_steps: int = 100
    # How long running steps may finish when the daemon stops.
    grace_s: float = 10.0

    # Security (see auth.py): TLS server certificate and key (PEM files), a CA that
    # client certificates must chain to (mTLS), the credentials file (tokens, client
    # CNs), and the explicit opt-out that allows a non-loopback address without them.
    tls_cert: str = ""
    tls_key: str = ""
    client_ca: str = ""
    tokens_file: str = ""
    insecure: bool = False

    # Limits. Sessions count while attached or detached (awaiting resume).
    max_sessions: int = 1024
    # Per principal (token, certificate CN). None: a fair share, max_sessions /
    # FAIR_SHARE_DIVISOR, where callers are told apart (tokens or mTLS); without
    # credentials every caller is one principal, so no cap. 0: none beyond max_sessions.
    # Read `sessions_per_principal` for the cap in force.
    max_sessions_per_principal: int | None = None
    # Wall-clock limit of a session from its start (0: none); detached time counts.
    max_session_s: float = 3600.0
    # How long the policy may take to decide one step (0: no limit).
    step_timeout_s: float = 300.0
    # A session whose stream drops waits this long for a resume (0: dropped at once).
    resume_window_s: float = 60.0
    # A stream must send its SessionStart, and then its first observation (also the
    # first after a resume), within this time, or it is closed / its session ends
    # TIME_LIMIT: a slot is not held by a client that never shows a screen (0: no limit).
    first_observation_timeout_s: float = 60.0
    # Between steps: how long the daemon waits for the client's next observation
    # (actions executing, a human answering ask_user) before it ends the session
    # TIME_LIMIT as idle (0: no limit).
    idle_timeout_s: float = 600.0
    # HTTP/2 keepalive: ping every connection this often, even mid-step with no data
    # flowing, and call it dead after keepalive_timeout_s without an answer. Their sum
    # bounds how long a silently vanished client's session stays attached.
    keepalive_s: float = 30.0
    keepalive_timeout_s: float = 10.0
    # Prometheus metrics over HTTP: HOST:PORT, or a bare PORT on loopback; "": not served.
    metrics_address: str = ""
    # The live view (web/): HOST:PORT of a page that watches and steers sessions; "":
    # off. The gRPC port's TLS and credential rules hold for it too.
    web: str = ""
    # Record every session whose SessionStart leaves recording UNSPECIFIED; where
    # ("": platformdirs' user_data_dir("holodesk")/recordings). docs/recording-format.md.
    record: bool = False
    record_dir: str = ""
    # Log each session's task text at INFO (by default only its length: a task may
    # hold what its user would not want in a log).
    log_task: bool = False

    def __post_init__(self) -> None:
        if self.max_message_bytes <= 0 or self.max_frame_bytes <= 0:
            raise ValueError("message and frame limits must be positive")
        if self.max_frame_bytes > self.max_message_bytes:
            raise ValueError(
                f"the frame limit ({self.max_frame_bytes} B) exceeds the message limit "
                f"({self.max_message_bytes} B): no such frame could ever arrive"
            )
        if self.max_frame_pixels <= 0:
            raise ValueError("max_frame_pixels must be positive")
        if self.decoded_screen_bytes < 0:
            raise ValueError("decoded_screen_bytes cannot be negative")
        if self.raw_screen_bytes < 0:
            raise ValueError("raw_screen_bytes cannot be negative")
        if self.max_frame_memory_bytes < self.max_frame_bytes:
            raise ValueError(
                f"the frame memory budget ({self.max_frame_memory_bytes} B) is below the "
                f"frame limit ({self.max_frame_bytes} B): not even one frame would fit"
            )
        if self.max_steps <= 0:
            raise ValueError("max_steps must be positive")
        if self.max_sessions <= 0:
            raise ValueError("max_sessions must be positive")
        for name in (
            "grace_s",
            "max_session_s",
            "step_timeout_s",
            "resume_window_s",
            "first_observation_timeout_s",
            "idle_timeout_s",
        ):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} cannot be negative")
        if self.max_sessions_per_principal is not None and self.max_sessions_per_principal < 0:
            raise ValueError("max_sessions_per_principal cannot be negative")
        if self.keepalive_s <= 0 or self.keepalive_timeout_s <= 0:
            raise ValueError("keepalive_s and keepalive_timeout_s must be positive")
        if bool(self.tls_cert) != bool(self.tls_key):
            raise ValueError("--tls-cert and --tls-key go together (the server's PEM files)")
        if self.client_ca and not self.tls_cert:
            raise ValueError("--client-ca (mTLS) needs TLS: give --tls-cert and --tls-key too")
        if self.client_ca and not self.tokens_file:
            raise ValueError(
                "--client-ca needs --tokens-file with [[client]] entries mapping "
                "certificate CNs to roles"
            )
        self._check_exposure(parse_listen(self.listen))
        if self.metrics_address:
            parse_metrics_address(self.metrics_address)
        if self.web:
            self._check_web()

    @property
    def address(self) -> ListenAddress:
        return parse_listen(self.listen)

    @property
    def sessions_per_principal(self) -> int:
        """The per-principal session cap in force (0: none beyond max_sessions)."""
        if self.max_sessions_per_principal is not None:
            return self.max_sessions_per_principal
        if not self.has_credentials:
            return 0
        return max(1, self.max_sessions // FAIR_SHARE_DIVISOR)

    @property
    def tls(self) -> bool:
        return bool(self.tls_cert)

    @property
    def has_credentials(self) -> bool:
        return bool(self.tokens_file or self.client_ca)

    @property
    def web_address(self) -> tuple[str, int] | None:
        """(host, port) of the live view; None when it is off."""
        if not self.web:
            return None
        text = self.web.strip()
        if text.isdigit() and int(text) <= 65535:
            return "127.0.0.1", int(text)  # a bare PORT: on loopback, like --metrics-address
        try:
            host, port = split_listen(text)
        except ValueError:
            raise ValueError(
                f"--web {self.web!r} is not HOST:PORT or PORT (e.g. 127.0.0.1:50080; "
                "[::1]:50080 for IPv6)"
            ) from None
        return host.strip("[]"), port

    def _check_web(self) -> None:
        """The live view steers sessions like ControlService: the same exposure rules.
        With no credential at all, a Unix-socket daemon trusts its socket's file
        permissions, which a web port has not: it needs --tokens-file then."""
        address = self.web_address
        assert address is not None
        if not self.has_credentials and self.address.is_unix:
            raise ValueError(
                "--web with --listen unix:PATH needs --tokens-file: the daemon trusts the "
                "socket's file permissions, and a web port has none"
            )
        self._check_exposure(
            ListenAddress(host=address[0], port=address[1]), what="serve the live view (--web)"
        )

    def _check_exposure(self, address: ListenAddress, what: str = "listen") -> None:
        """Refuse a non-loopback address without TLS and a credential, unless --insecure."""
        if address.is_loopback or self.insecure:
            return
        missing = []
        if not self.tls:
            missing.append("TLS (--tls-cert and --tls-key)")
        if not self.has_credentials:
            missing.append("a credential method (--tokens-file, or --client-ca for mTLS)")
        if missing:
            raise ValueError(
                f"refusing to {what} on {address.host}: it is not a loopback address and "
                f"{' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} not configured. "
                "Configure them, or pass --insecure to expose the daemon anyway "
                "(anyone who can reach the port can then drive the desktops)"
            )
