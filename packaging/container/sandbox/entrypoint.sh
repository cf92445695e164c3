#!/bin/bash
# holodesk sandbox: a throwaway virtual desktop to watch and try holodesk on, seen
# through noVNC in a browser, so nobody lends holodesk their own desktop; or, for a
# rollout pool, driven over plain VNC (SANDBOX_VNC_LISTEN, SANDBOX_VNC_PASSWORD,
# SANDBOX_NOVNC=0).
#
# Starts, in order, and waits for each to be up before the next:
#   1. TigerVNC's Xvnc: the X display and its VNC server in one process (VNC on
#      loopback by default: the browser reaches it through websockify);
#   2. a window manager (openbox), so windows get frames, focus and stacking;
#   3. the apps (a terminal, a text editor, a browser: whatever of SANDBOX_APPS is
#      installed), until the window manager lists a window for each;
#   4. unless SANDBOX_NOVNC=0, websockify serving noVNC's page and bridging its
#      WebSocket to the VNC port.
# Then prints "sandbox: ready: <url>" (http://... for noVNC, vnc://LISTEN:PORT
# without) and runs until SIGTERM/SIGINT (docker stop, Ctrl+C), which stops
# everything it started, newest first, and exits 0. If the X server or websockify
# dies on its own, the rest is stopped too and it exits 1.
#
# With SANDBOX_DEMO=1, `holodesk demo` (the whole stack with the CPU OCR policy, no
# GPU, no model) runs on this desktop in a terminal once it is up; with
# HOLODESK_SERVER=host:port set, a terminal opens with `holodesk run --server` ready
# to type a task against that daemon.
#
# Settings (environment):
#   SANDBOX_DISPLAY       X display (default :1; auto: a free one, picked by Xvnc)
#   SANDBOX_GEOMETRY      screen size (default 1280x800)
#   SANDBOX_VNC_PORT      VNC port (default 5901)
#   SANDBOX_VNC_LISTEN    address VNC listens on (default 127.0.0.1; 0.0.0.0: every
#                         interface); beyond loopback it needs SANDBOX_VNC_PASSWORD
#   SANDBOX_VNC_PASSWORD  VNC password (default none); VNC authentication uses only
#                         its first 8 characters
#   SANDBOX_NOVNC         0: no noVNC/websockify, clients use VNC itself (default 1)
#   SANDBOX_NOVNC_LISTEN  address noVNC listens on (default 0.0.0.0: the container's)
#   SANDBOX_NOVNC_PORT    noVNC's HTTP/WebSocket port (default 6080)
#   SANDBOX_NOVNC_WEB     noVNC's files (default /usr/share/novnc)
#   SANDBOX_WM            window manager command (default openbox; empty: none)
#   SANDBOX_APPS          apps to start, separated by ';' (default: xterm; mousepad;
#                         chromium); a missing one is named and skipped
#   SANDBOX_START_TIMEOUT seconds each part may take to come up (default 30)
#   SANDBOX_DEMO          1: run `holodesk demo` on the desktop
set -euo pipefail

display=${SANDBOX_DISPLAY:-:1}
geometry=${SANDBOX_GEOMETRY:-1280x800}
vnc_port=${SANDBOX_VNC_PORT:-5901}
vnc_listen=${SANDBOX_VNC_LISTEN:-127.0.0.1}
vnc_password=${SANDBOX_VNC_PASSWORD:-}
# Out of the environment the apps inherit: a terminal on the desktop, typed into by
# whoever drives it, would show it to `env`.
unset SANDBOX_VNC_PASSWORD
novnc=${SANDBOX_NOVNC:-1}
novnc_listen=${SANDBOX_NOVNC_LISTEN:-0.0.0.0}
novnc_port=${SANDBOX_NOVNC_PORT:-6080}
novnc_web=${SANDBOX_NOVNC_WEB:-/usr/share/novnc}
wm=${SANDBOX_WM-openbox}
apps=${SANDBOX_APPS-xterm; mousepad; chromium --no-sandbox --no-first-run about:blank}
timeout_s=${SANDBOX_START_TIMEOUT:-30}
demo=${SANDBOX_DEMO:-0}

say() { printf 'sandbox: %s\n' "$*"; }
die() { printf 'sandbox: error: %s\n' "$*" >&2; stop 1; }

started=()   # every pid, oldest first
core=()      # the ones whose death ends the sandbox
core_names=() # their names, for the error that ends it
secret_dir=  # the VNC password file's private directory
stopping=0
tick=        # the main loop's poll timer

stop() {
    local code=${1:-0} index pid
    if [[ $stopping == 1 ]]; then return; fi
    stopping=1
    trap - TERM INT
    if [[ -n ${tick:-} ]]; then kill "$tick" 2>/dev/null || true; fi
    for ((index = ${#started[@]} - 1; index >= 0; index--)); do
        pid=${started[index]}
        kill -TERM "$pid" 2>/dev/null || true
    done
    for pid in "${started[@]}"; do
        wait "$pid" 2>/dev/null || true
    done
    if [[ -n $secret_dir ]]; then rm -rf "$secret_dir"; fi
    say "stopped"
    exit "$code"
}
trap 'stop 0' TERM INT

# Poll `$@` until it succeeds, for at most timeout_s seconds.
wait_for() {
    local what=$1 deadline=$((SECONDS + timeout_s))
    shift
    until "$@" >/dev/null 2>&1; do
        if ((SECONDS >= deadline)); then die "$what did not come up within ${timeout_s}s"; fi
        if [[ -n ${watch_pid:-} ]] && ! kill -0 "$watch_pid" 2>/dev/null; then
            die "$what exited while starting"
        fi
        sleep 0.1
    done
}

port_open() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }

wm_ready() { xprop -root _NET_SUPPORTING_WM_CHECK 2>/dev/null | grep -q 'window id'; }

# At least $1 windows managed ("_NET_CLIENT_LIST(WINDOW): window id # 0x..., 0x...").
windows_shown() {
    local listed
    listed=$(xprop -root _NET_CLIENT_LIST 2>/dev/null | grep -o '0x[0-9a-f]*' | wc -l)
    ((listed >= $1))
}

# Poll `$@` like wait_for, but only report whether it came up in time.
wait_quietly() {
    local deadline=$((SECONDS + timeout_s))
    until "$@"; do
        if ((SECONDS >= deadline)); then return 1; fi
        sleep 0.1
    done
}

case $novnc in
    0 | 1) ;;
    *) die "SANDBOX_NOVNC must be 0 or 1, not '$novnc'" ;;
esac
# Nobody gets an open desktop on a network by accident.
case $vnc_listen in
    127.* | ::1 | localhost) ;;
    *) [[ -n $vnc_password ]] ||
        die "SANDBOX_VNC_LISTEN=$vnc_listen needs SANDBOX_VNC_PASSWORD: without one, anyone who reaches the port controls the desktop" ;;
esac
# vncpasswd -f takes a second line as a view-only password.
[[ $vnc_password != *$'\n'* ]] || die "SANDBOX_VNC_PASSWORD must be a single line"

tools=(Xvnc xdpyinfo xprop)
if [[ $novnc == 1 ]]; then tools+=(websockify); fi
for tool in "${tools[@]}"; do
    command -v "$tool" >/dev/null || die "$tool is not installed"
done
if [[ -n $vnc_password ]]; then
    command -v vncpasswd >/dev/null ||
        die "vncpasswd is not installed (Debian package tigervnc-tools): SANDBOX_VNC_PASSWORD needs it"
fi
if [[ $novnc == 1 && ! -f $novnc_web/vnc.html ]]; then
    die "no noVNC in $novnc_web (vnc.html missing)"
fi

# Where this script and websockify reach the VNC port.
vnc_local=$vnc_listen
if [[ $vnc_listen == 0.0.0.0 ]]; then vnc_local=127.0.0.1; fi

# 1. The display and its VNC server. "auto": the X server picks a free display
# number and writes it to -displayfd once it accepts connections.
xvnc_args=(-geometry "$geometry" -depth 24 -rfbport "$vnc_port"
    -AlwaysShared -nolisten tcp -desktop holodesk-sandbox)
case $vnc_listen in
    127.0.0.1) xvnc_args+=(-localhost) ;;
    0.0.0.0) ;;
    *) xvnc_args+=(-interface "$vnc_listen") ;;
esac
if [[ -n $vnc_password ]]; then
    # Xvnc reads the file at each connection, so it lives until stop removes it.
    # mktemp -d's directory is the owner's alone (0700).
    secret_dir=$(mktemp -d)
    (umask 077 && printf '%s\n' "$vnc_password" | vncpasswd -f >"$secret_dir/passwd") ||
        die "vncpasswd could not write the VNC password file"
    xvnc_args+=(-SecurityTypes VncAuth -rfbauth "$secret_dir/passwd")
    vnc_auth="VNC password"
else
    xvnc_args+=(-SecurityTypes None)
    vnc_auth="no password"
fi
if [[ $display == auto ]]; then
    number_file=$(mktemp)
    Xvnc -displayfd 3 "${xvnc_args[@]}" 3>"$number_file" &
    watch_pid=$!
    started+=("$watch_pid")
    core+=("$watch_pid")
    core_names+=(Xvnc)
    wait_for "the X server's display number" test -s "$number_file"
    display=:$(tr -d '[:space:]' <"$number_file")
    rm -f "$number_file"
else
    Xvnc "$display" "${xvnc_args[@]}" &
    watch_pid=$!
    started+=("$watch_pid")
    core+=("$watch_pid")
    core_names+=(Xvnc)
fi
export DISPLAY=$display
wait_for "the X display $display" xdpyinfo -display "$display"
wait_for "the VNC port $vnc_port" port_open "$vnc_local" "$vnc_port"
say "desktop $display ($geometry) up, VNC on $vnc_listen:$vnc_port ($vnc_auth)"

# 2. The window manager.
if [[ -n $wm ]]; then
    if command -v "${wm%% *}" >/dev/null; then
        $wm &
        started+=("$!")
        # Apps mapped before the WM manages the screen can stay unmanaged (no frame,
        # unmapped): wait until it says it is there (EWMH _NET_SUPPORTING_WM_CHECK).
        if wait_quietly wm_ready; then
            say "window manager: $wm"
        else
            say "window manager $wm did not announce itself within ${timeout_s}s; going on"
        fi
    else
        say "window manager ${wm%% *} is not installed: windows will have no frames"
    fi
fi

# 3. The apps.
launched=0
IFS=';' read -r -a app_list <<<"$apps"
for app in "${app_list[@]}"; do
    app=$(echo "$app" | sed -e 's/^ *//' -e 's/ *$//')
    [[ -z $app ]] && continue
    if command -v "${app%% *}" >/dev/null; then
        $app >/dev/null 2>&1 &
        started+=("$!")
        launched=$((launched + 1))
        say "app: $app"
    else
        say "app ${app%% *} is not installed: skipped"
    fi
done
# "Ready" means the apps are on the screen: a client that starts typing as soon as
# they are launched loses its first keys to a desktop with no window yet. The window
# manager lists the windows it manages (EWMH _NET_CLIENT_LIST).
if ((launched > 0)) && wm_ready; then
    if wait_quietly windows_shown "$launched"; then
        say "apps' windows shown"
    else
        say "not every app showed a window within ${timeout_s}s; going on"
    fi
fi

# 4. noVNC.
watch_pid=
if [[ $novnc == 1 ]]; then
    websockify --web "$novnc_web" "$novnc_listen:$novnc_port" "$vnc_local:$vnc_port" &
    watch_pid=$!
    started+=("$watch_pid")
    core+=("$watch_pid")
    core_names+=(websockify)
    wait_for "noVNC on port $novnc_port" port_open 127.0.0.1 "$novnc_port"
    watch_pid=
fi

if [[ $demo == 1 ]]; then
    xterm -title "holodesk demo" -hold -e holodesk demo --display "$display" &
    started+=("$!")
    say "holodesk demo running on $display"
elif [[ -n ${HOLODESK_SERVER:-} ]]; then
    xterm -title "holodesk" -hold -e bash -c \
        "echo 'holodesk run --server $HOLODESK_SERVER \"your task\"'; exec bash" &
    started+=("$!")
fi

if [[ $novnc == 1 ]]; then
    say "ready: http://localhost:$novnc_port/vnc.html?autoconnect=1&resize=scale"
else
    say "ready: vnc://$vnc_listen:$vnc_port"
fi

# Until a signal (the trap stops everything) or a core process dies on its own.
# Polled, not `wait -n`: bash (5.2) never reports to `wait -n` a child that died
# before the call, so an X server killed while this loop was between waits left
# the sandbox running without it. `wait` on one pid is reliable and a trapped
# signal still interrupts it at once.
while true; do
    for index in "${!core[@]}"; do
        pid=${core[index]}
        if ! kill -0 "$pid" 2>/dev/null; then
            printf 'sandbox: error: process %s (%s) exited\n' "$pid" "${core_names[index]}" >&2
            stop 1
        fi
    done
    sleep 0.5 &
    tick=$!
    wait "$tick" || true
done
