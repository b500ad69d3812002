# Shared set-up for scripts/demo.sh and scripts/test.sh: create or reuse .venv and install avdnn.
# Works on a fresh Debian with Python 3.11 and pip, also without the python3-venv package.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-$(command -v python3.11 || command -v python3)}"
VENV="${VENV:-.venv}"
if [ ! -x "$VENV/bin/python" ]; then
    if ! "$PY" -m venv "$VENV" 2>/dev/null; then
        rm -rf "$VENV"
        "$PY" -m pip install --quiet --user virtualenv 2>/dev/null \
            || "$PY" -m pip install --quiet --user --break-system-packages virtualenv
        "$PY" -m virtualenv --quiet "$VENV"
    fi
fi
VPY="$VENV/bin/python"
# $1: the pip extras to install avdnn with (e.g. "test"); a stamp skips the install when nothing changed.
install_avdnn() {
    local extras="$1" stamp="$VENV/.avdnn-installed-$1"
    if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
        "$VPY" -m pip install --quiet --upgrade pip
        "$VPY" -m pip install --quiet -e ".[$extras]"
        touch "$stamp"
    fi
}
