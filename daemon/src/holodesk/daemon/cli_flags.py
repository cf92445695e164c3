"""`holodeskd`'s flags and what they make: the argument parser and flags -> ServerConfig.

Why its own module: the option table (names, defaults, help, the security epilog)
and its translation into one ServerConfig change together and with config.py,
never with how the process runs (cli.py: signals, serve() until SIGTERM) or the
subcommands (cli_token.py); config_file.py reads its TOML keys from this parser.
"""

from __future__ import annotations

import argparse
from importlib.metadata import version

from holodesk.daemon import config_file, logs
from holodesk.daemon.config import DEFAULT_LISTEN, FAIR_SHARE_DIVISOR, MIB, ServerConfig
from holodesk.daemon.dialects import dialect_names
from holodesk.daemon.policies.registry import policy_entries
from holodesk.daemon.session import decoded_screens, frame_memory
from holodesk.daemon.session.recorder import default_record_dir
from holodesk.data.cli_config import add_config_argument

SECURITY_HELP = """\
security:
  By default holodeskd listens on loopback and, with no credentials configured,
  lets every local caller do everything. A non-loopback address needs TLS
  (--tls-cert/--tls-key) and a credential method (--tokens-file and/or
  --client-ca), or an explicit --insecure. unix:PATH sockets are created 0600;
  their callers are admin while the file stays private to the daemon's user.
  Clients send tokens as 'authorization: Bearer <token>' metadata. Health and
  reflection are open to all. SIGHUP reloads the tokens file.

  tokens file (TOML; only SHA-256 digests of tokens are stored):
    [[token]]
    name = "laptop"
    role = "agent"            # agent, operator, trainer or admin (roles below)
    sha256 = "<64 hex digits>"
    [[client]]                # mTLS callers, by certificate subject CN
    cn = "tray.example.internal"
    role = "operator"
    drives = ["token:laptop"] # operator only: whose attached desktops it may drive

  roles:
    agent     AgentService: run sessions, locate, GetServerInfo
    operator  an agent's calls and ComputerService: drive the desktops attached
              under its own name and those its entry's drives lists
    trainer   an agent's calls and TrainerService: change a policy's weights or
              LoRA adapter while its sessions run (docs/online-rl.md)
    admin     everything: ControlService (list, pause, resume, stop any session),
              the live view (--web), every attached desktop

subcommands:
  holodeskd token new --name NAME --role agent|operator|trainer|admin [--append FILE]
                     print a fresh bearer token and its [[token]] entry
  holodeskd config path [--config PATH]
                     show the config file holodeskd reads and every effective value

config file (TOML, docs/configuration.md):
  default {config_path}, or --config PATH, or $HOLODESKD_CONFIG.
  Keys are the long options without their dashes (max-sessions = 8, no-frame-deltas
  = true, policy-opt = ["k=v"]); flags beat the file, the file beats the defaults.
  An unknown key or a wrong type stops holodeskd with exit code 2.
"""


def build_parser() -> argparse.ArgumentParser:
    policies = "; ".join(f"{e.name}: {e.description}" for e in policy_entries())
    parser = argparse.ArgumentParser(
        prog="holodeskd",
        description="gRPC daemon that runs computer-use agent sessions.",
        epilog=SECURITY_HELP.format(config_path=config_file.default_path()),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--version", action="version", version=f"holodeskd {version('holodesk-daemon')}"
    )
    add_config_argument(
        parser,
        f"TOML file of option defaults (default: ${config_file.ENV_VAR}, else "
        f"{config_file.default_path()}; see config path)",
    )
    parser.add_argument(
        "--listen",
        default=DEFAULT_LISTEN,
        help="HOST:PORT to bind (port 0 picks a free one), or unix:PATH for a Unix socket "
        "(mode 0600); default %(default)s",
    )
    parser.add_argument(
        "--policy", default="ocr", help=f"policy to serve ({policies}; default ocr)"
    )
    parser.add_argument("--script", help="scripted policy: JSON list of model outputs")
    parser.add_argument(
        "--dialect", help=f"built-in dialect for model policies ({', '.join(dialect_names())})"
    )
    parser.add_argument("--dialect-file", help="JSON/TOML dialect overriding a built-in")
    parser.add_argument(
        "--policy-opt",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra policy option (repeatable)",
    )

    security = parser.add_argument_group("security")
    security.add_argument("--tls-cert", metavar="PEM", help="server certificate chain (TLS)")
    security.add_argument("--tls-key", metavar="PEM", help="server private key (TLS)")
    security.add_argument(
        "--client-ca",
        metavar="PEM",
        help="require client certificates signed by this CA (mTLS); their subject CN "
        "maps to a role through [[client]] entries of --tokens-file",
    )
    security.add_argument(
        "--tokens-file",
        metavar="TOML",
        help="credentials: [[token]] (name, role, sha256) and [[client]] (cn, role) entries",
    )
    security.add_argument(
        "--insecure",
        action="store_true",
        help="allow a non-loopback address without TLS and credentials (never on a network "
        "you do not control)",
    )

    limits = parser.add_argument_group("limits")
    limits.add_argument("--max-message-mb", type=float, default=32.0, help="gRPC message limit")
    limits.add_argument(
        "--max-frame-mb",
        type=float,
        default=None,
        help="frame size limit (default: 16, or the message limit if lower)",
    )
    limits.add_argument(
        "--max-frame-memory-mb",
        type=float,
        default=frame_memory.DEFAULT_MAX_BYTES / MIB,
        help="frames all sessions may hold together; past it new sessions and frames get "
        "RESOURCE_EXHAUSTED with a retry delay (default %(default)s)",
    )
    limits.add_argument(
        "--decoded-screens-mb",
        type=float,
        default=decoded_screens.DEFAULT_MAX_BYTES / MIB,
        help="pixels of each session's newest screen, packed (zstd), shared by all sessions, "
        "so a delta paints on its base instead of decoding it again (~0.2 MiB per 1080p "
        "screen of text, up to ~6 MiB of a photo); 0: always decode (default %(default)s)",
    )
    limits.add_argument(
        "--raw-screens-mb",
        type=float,
        default=decoded_screens.DEFAULT_HOT_BYTES / MIB,
        help="of those, the screens also held unpacked (6 MiB per 1080p screen), so the "
        "steps in flight read them without unpacking; raise it with many sessions "
        "stepping at once (default %(default)s)",
    )
    limits.add_argument(
        "--max-frame-pixels",
        type=int,
        default=40_000_000,
        help="largest frame, width x height (default %(default)s)",
    )
    limits.add_argument(
        "--no-frame-deltas",
        dest="frame_deltas",
        action="store_false",
        help="ask clients for full frames every step (by default they may send only what "
        "changed, and the daemon rebuilds the full frame)",
    )
    limits.add_argument("--max-steps", type=int, default=100, help="session step limit")
    limits.add_argument(
        "--max-sessions",
        type=int,
        default=1024,
        help="concurrent sessions, detached ones included (default %(default)s)",
    )
    limits.add_argument(
        "--max-sessions-per-principal",
        type=int,
        default=None,
        help="concurrent sessions per caller (token, certificate CN ...); 0: no own limit "
        f"(default: a fair share, 1/{FAIR_SHARE_DIVISOR} of --max-sessions, when tokens or "
        "client certificates tell callers apart; none without credentials)",
    )
    limits.add_argument(
        "--max-session-s",
        type=float,
        default=3600.0,
        help="wall-clock limit of a session, detached time included; 0: none (default %(default)s)",
    )
    limits.add_argument(
        "--step-timeout-s",
        type=float,
        default=300.0,
        help="how long the policy may take for one step before the session fails; "
        "0: no limit (default %(default)s)",
    )
    limits.add_argument(
        "--resume-window-s",
        type=float,
        default=60.0,
        help="how long a session whose stream dropped waits for a resume; 0: drop it "
        "(default %(default)s)",
    )
    limits.add_argument(
        "--first-observation-timeout-s",
        type=float,
        default=60.0,
        help="a stream must send its SessionStart, then its first observation, within this "
        "time or it is closed and its session ends; 0: no limit (default %(default)s)",
    )
    limits.add_argument(
        "--idle-timeout-s",
        type=float,
        default=600.0,
        help="how long the daemon waits for a client's next observation (actions running, a "
        "human answering ask_user) before it ends the session as idle; 0: no limit "
        "(default %(default)s)",
    )
    limits.add_argument(
        "--keepalive-s",
        type=float,
        default=30.0,
        help="ping every connection this often; one silent for 10 s more is dropped and "
        "its sessions detach (default %(default)s)",
    )
    limits.add_argument(
        "--grace-s", type=float, default=10.0, help="time running steps get on shutdown"
    )
    recording = parser.add_argument_group("recording (docs/recording-format.md)")
    recording.add_argument(
        "--record",
        choices=["off", "on"],
        default="off",
        help="record sessions whose SessionStart leaves recording unspecified (a client "
        "may ask for ON or OFF per session); default %(default)s",
    )
    recording.add_argument(
        "--record-dir",
        metavar="DIR",
        default="",
        help=f"where recordings go, one directory each (default {default_record_dir()})",
    )
    parser.add_argument(
        "--log-level",
        default="INFO",
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        help="default %(default)s",
    )
    parser.add_argument(
        "--log-format",
        default="text",
        choices=logs.LOG_FORMATS,
        help="text lines, or one JSON object per line (with session_id, step and "
        "action_ids where they apply); default %(default)s",
    )
    parser.add_argument(
        "--log-task",
        action="store_true",
        help="log each session's task text in full at INFO (default: only its length)",
    )
    parser.add_argument(
        "--metrics-address",
        default="",
        metavar="HOST:PORT",
        help="serve Prometheus metrics at http://HOST:PORT/metrics (a bare PORT: on "
        "127.0.0.1); default: not served",
    )
    parser.add_argument(
        "--web",
        default="",
        metavar="HOST:PORT",
        help="serve the live view at http(s)://HOST:PORT/ (a bare PORT: on 127.0.0.1): "
        "sessions, their screens and steps as they happen, pause, resume, stop and take "
        "over (the gRPC port's TLS and --tokens-file apply; a non-loopback HOST needs "
        "them or --insecure); default: off",
    )
    return parser


def config_from_args(args: argparse.Namespace) -> ServerConfig:
    options: dict[str, str] = {}
    for item in args.policy_opt:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValueError(f"--policy-opt {item!r} is not KEY=VALUE")
        options[key] = value
    for key in ("script", "dialect", "dialect_file"):
        value = getattr(args, key)
        if value:
            options[key] = value
    message_bytes = int(args.max_message_mb * MIB)
    if args.max_frame_mb is None:
        frame_bytes = min(16 * MIB, message_bytes)
    else:
        frame_bytes = int(args.max_frame_mb * MIB)
    return ServerConfig(
        listen=args.listen,
        policy=args.policy,
        policy_options=options,
        max_message_bytes=message_bytes,
        max_frame_bytes=frame_bytes,
        max_frame_pixels=args.max_frame_pixels,
        max_frame_memory_bytes=int(args.max_frame_memory_mb * MIB),
        decoded_screen_bytes=int(args.decoded_screens_mb * MIB),
        raw_screen_bytes=int(args.raw_screens_mb * MIB),
        frame_deltas=args.frame_deltas,
        max_steps=args.max_steps,
        grace_s=args.grace_s,
        tls_cert=args.tls_cert or "",
        tls_key=args.tls_key or "",
        client_ca=args.client_ca or "",
        tokens_file=args.tokens_file or "",
        insecure=args.insecure,
        max_sessions=args.max_sessions,
        max_sessions_per_principal=args.max_sessions_per_principal,
        max_session_s=args.max_session_s,
        step_timeout_s=args.step_timeout_s,
        resume_window_s=args.resume_window_s,
        first_observation_timeout_s=args.first_observation_timeout_s,
        idle_timeout_s=args.idle_timeout_s,
        keepalive_s=args.keepalive_s,
        keepalive_timeout_s=min(10.0, args.keepalive_s),
        metrics_address=args.metrics_address,
        web=args.web,
        record=args.record == "on",
        record_dir=args.record_dir,
        log_task=args.log_task,
    )
