"""Nothing leaves the machine on avdnn's account: importing OpenVINO through avdnn sends no usage
event (OpenVINO's package reports its import to Google Analytics unless told not to), and a Ray
cluster a driver starts reports no usage statistics."""

from __future__ import annotations

import subprocess
import sys

from spine_util import need_installed

#: a child that records every name lookup and every fork, then imports avdnn's OpenVINO backend
#: (which imports openvino) and waits for OpenVINO's telemetry thread, which it would have started
CHILD = r"""
import os, socket, sys, threading, time
looked, forked = [], []
real = socket.getaddrinfo
def lookup(host, *a, **k):
    looked.append(host)
    return real(host, *a, **k)
socket.getaddrinfo = lookup
os.register_at_fork(before=lambda: forked.append(1))
os.environ.pop("CI", None)  # OpenVINO's telemetry stays quiet in CI on its own: not what is tested
import avdnn.dnn.backends.openvino  # noqa: F401
import openvino  # noqa: F401
time.sleep(1.0)
for t in threading.enumerate():
    if t is not threading.main_thread():
        t.join(5.0)
print("looked", looked, "forked", len(forked), "telemetry", sys.modules.get("openvino_telemetry"))
print("ray", os.environ.get("RAY_USAGE_STATS_ENABLED"))
"""


def test_importing_openvino_through_avdnn_sends_no_usage_event() -> None:
    need_installed("openvino", "pip install 'avdnn[openvino]'")
    env = {k: v for k, v in __import__("os").environ.items() if k not in ("CI", "RAY_USAGE_STATS_ENABLED")}
    proc = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "looked [] forked 0 telemetry None" in proc.stdout, proc.stdout
    assert "ray 0" in proc.stdout
