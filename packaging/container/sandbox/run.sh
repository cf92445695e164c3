#!/bin/sh
# One command for the holodesk sandbox: builds the image the first time (or with
# --rebuild), then runs it with noVNC published on this machine's loopback only,
# and prints where to point a browser. Ctrl+C (or `docker stop holodesk-sandbox`)
# stops the desktop and removes the container.
#
#   packaging/container/sandbox/run.sh [--port N] [--demo] [--server HOST:PORT]
#                                      [--geometry WxH] [--rebuild] [--image NAME]
#
#   --port N            the browser's port on this machine (default 6080)
#   --demo              run `holodesk demo` (CPU OCR policy, no GPU) on the desktop
#   --server HOST:PORT  a holodesk daemon the sandbox's terminal is set up to use
#   --geometry WxH      the desktop's size (default 1280x800)
#   --rebuild           build the image even if it exists
#   --image NAME        image name (default holodesk/sandbox)
#
# The runtime is podman or docker, whichever is found first (CONTAINER_RUNTIME
# overrides).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
port=6080
image=holodesk/sandbox
rebuild=0
demo=0
server=
geometry=1280x800

usage() { sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; }

while [ $# -gt 0 ]; do
    case $1 in
        --port) port=$2; shift 2 ;;
        --demo) demo=1; shift ;;
        --server) server=$2; shift 2 ;;
        --geometry) geometry=$2; shift 2 ;;
        --rebuild) rebuild=1; shift ;;
        --image) image=$2; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) echo "run.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
done

case $port in
    ''|*[!0-9]*) echo "run.sh: --port must be a number, not '$port'" >&2; exit 2 ;;
esac
case $geometry in
    [0-9]*x[0-9]*) ;;
    *) echo "run.sh: --geometry must be WIDTHxHEIGHT, not '$geometry'" >&2; exit 2 ;;
esac

runtime=${CONTAINER_RUNTIME:-}
if [ -z "$runtime" ]; then
    runtime=$(command -v podman || command -v docker || true)
fi
if [ -z "$runtime" ]; then
    echo "run.sh: no container runtime: install podman or docker (or set CONTAINER_RUNTIME)" >&2
    exit 1
fi

if [ "$rebuild" = 1 ] || ! "$runtime" image inspect "$image" >/dev/null 2>&1; then
    echo "run.sh: building $image (the first build takes a few minutes)"
    "$runtime" build -f "$here/Containerfile" -t "$image" "$root"
fi

echo "run.sh: open http://localhost:$port/vnc.html?autoconnect=1&resize=scale once it says ready"
exec "$runtime" run --rm -it --name holodesk-sandbox --shm-size 512m \
    -p "127.0.0.1:$port:6080" \
    -e "SANDBOX_DEMO=$demo" -e "SANDBOX_GEOMETRY=$geometry" -e "HOLODESK_SERVER=$server" \
    "$image"
