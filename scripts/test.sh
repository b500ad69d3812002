#!/usr/bin/env bash
# Set up .venv with avdnn, every backend extra and the test dependencies, then run the whole test suite.
source "$(dirname "$0")/env.sh"
setup_test_env
exec "$VPY" -m pytest -q "$@"
