"""Model instances shared across streams: ``model_instance=NAME`` (DL Streamer's model-instance-id).

DNN filters in different chains of one run (or of one process) that name the same instance
share one loaded backend model and one :class:`~avdnn.dnn.shared.engine.SharedEngine`, which
batches their inferences together and hands each filter back its own results in its own
order. Their model options must agree: the first filter loads the instance, a later one whose
model, backend, input/outputs, backend options, device, nireq, batch_size, async or
batch_timeout differ (or whose function type does: dnn_detect and dnn_classify cannot share)
is refused, naming both filters and the option.

This module is the entry point; the parts live in their own modules:
:mod:`avdnn.dnn.shared.instance` (one instance, its filters' handles and its report) and
:mod:`avdnn.dnn.shared.scope` (a run's :class:`InstanceScope`, which holds its instances until the
run ends, and the process-wide default scope, where the last filter to close an instance
frees it). The scope's :meth:`~InstanceScope.reports` feed the end-of-run summary:
``model_instance det: 4 streams, 1200 inferences in 310 batches (3.87 per batch, 290 with several streams)``.
"""

from __future__ import annotations

from avdnn.dnn.shared.instance import InstanceReport, SharedInstance, SharedModel, format_report
from avdnn.dnn.shared.scope import InstanceScope, attach, current_scope, default_scope

__all__ = [
    "InstanceReport",
    "InstanceScope",
    "SharedInstance",
    "SharedModel",
    "attach",
    "current_scope",
    "default_scope",
    "format_report",
]
