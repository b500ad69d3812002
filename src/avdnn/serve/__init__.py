"""``avdnn serve``: the long-running service. Pipelines are started, changed and stopped over REST,
cameras join a running pipeline's shared model, and each source has a live preview and metrics.

Layer 9, beside :mod:`avdnn.batch`: every pipeline runs on the public API (:mod:`avdnn.api`,
:class:`~avdnn.api.OutputSet`), no second scheduler. The parts:

* :mod:`.service`: the head: the pipelines, their limits and persistence (:mod:`.state`);
* :mod:`.nodes`: where each source runs, :mod:`.placement` the node with room, failover; the
  runs are a node agent's (:mod:`.agent` the seam, :mod:`.host` the agent in this process and in
  each agent actor of a Ray cluster, :mod:`.cluster` and :mod:`.rayagent` the cluster);
* :mod:`.pipeline` and :mod:`.placed`: one pipeline, one source as the head knows it (its node,
  its moves); :mod:`.source` a source's runs, states and restarts on its node,
  :mod:`.accounting` its counts over its runs, :mod:`.preview` its live view, :mod:`.history`
  its last minutes sampled once a second;
* :mod:`.eventbus`: every run's events to the ``/api/events`` clients (Server-Sent Events);
* :mod:`.app` and :mod:`.routers`: the FastAPI app, one router per resource, the web page
  (``web/``, served at ``/``); :mod:`.specs` the JSON bodies; :mod:`.metrics` ``/metrics``;
  :mod:`.security` the token, the page's session cookie, the bind and the limits;
* :mod:`.server`: uvicorn in this process, with a clean SIGTERM. docs/serve.md.

Importing this package needs the ``serve`` extra (``pip install 'avdnn[serve]'``); without it the
import raises :class:`~avdnn.errors.BackendUnavailableError` naming the command.
"""

from __future__ import annotations

from avdnn.serve._require import require

require()

from avdnn.serve.app import create_app  # noqa: E402 - after the check: these import FastAPI
from avdnn.serve.config import ServeConfig, load_config  # noqa: E402
from avdnn.serve.server import make_server, run_server  # noqa: E402
from avdnn.serve.service import Service  # noqa: E402

__all__ = ["ServeConfig", "Service", "create_app", "load_config", "make_server", "run_server"]
