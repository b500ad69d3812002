"""The one bounded queue between a live input and the chain, where its drop policy acts.

A file is read as fast as the chain takes frames (the decoder thread blocks on a full
:class:`~avdnn.run.threads.Channel`: backpressure, nothing lost). A live input arrives at its
own pace whatever the chain does, so blocking its reader only moves the backlog into the
network (TCP windows, UDP socket buffers that overflow uncounted, a sender that falls behind):
latency grows without bound. For a live input the decoder thread keeps reading at the input's
pace into a :class:`DropQueue` of ``-live_queue`` frames instead; when it is full,
``-live_drop oldest`` (the default) drops the oldest queued frame, ``newest`` the arriving one,
and ``none`` blocks as a file does (lossless, said once in the log: latency then grows). Every
dropped frame is counted by cause; the run's accounting declares them at the input
(``RunStats.input_dropped``), so ``read = written + failed + dropped`` still balances.
"""

from __future__ import annotations

import logging
from typing import Any, TypeVar

from avdnn.media.input.live import DEFAULT_LIVE_QUEUE, DROP_POLICIES
from avdnn.run.threads import Cancelled, Channel

T = TypeVar("T")

log = logging.getLogger("avdnn")

__all__ = ["DropQueue", "queue_policy"]


class DropQueue(Channel[T]):
    """A :class:`Channel` that, full, drops a frame (``oldest`` / ``newest``) instead of waiting.

    ``policy="none"`` is the plain channel (the producer waits). :attr:`dropped` counts the
    frames dropped; ``name`` says which input, for the one log line of ``none``.
    """

    def __init__(self, depth: int, policy: str, *, name: str = "", live: bool = True) -> None:
        if policy not in DROP_POLICIES:
            raise ValueError(f"unknown drop policy {policy!r}")
        super().__init__(depth)
        self.policy = policy
        self.name = name
        self.dropped = 0
        self._warned = not live  # a file's lossless queue waits by design: nothing to say

    @property
    def cause(self) -> str:
        """The accounting's name for this queue's drops."""
        return f"input live queue (-live_drop {self.policy}, -live_queue {self._depth})"

    def put(self, item: T) -> None:
        if self.policy == "none":
            if not self._warned and len(self) >= self._depth:
                self._warned = True
                log.warning(
                    "%s: the chain is slower than the live input and -live_drop is none: no frame is "
                    "dropped, so the input is read late and latency grows",
                    self.name or "input",
                )
            super().put(item)
            return
        with self._cond:
            if self._cancelled:
                self.refused += 1
                raise Cancelled
            if len(self._items) >= self._depth:
                self.dropped += 1
                if self.policy == "newest":
                    return  # the arriving frame goes; the queued ones stay
                self._items.popleft()
            self._items.append(item)
            self._cond.notify_all()


def queue_policy(source: Any, default_depth: int) -> tuple[str, int] | None:
    """(policy, depth) of the queue before the chain, or None for the plain lossless channel.

    A live input: ``-live_drop`` (default ``oldest``) and ``-live_queue`` (default
    :data:`~avdnn.media.input.live.DEFAULT_LIVE_QUEUE`). A file: lossless, unless ``-live_drop`` is
    given explicitly (then applied to the file too: a way to test a policy on a file);
    ``-live_queue`` alone sets the depth of the lossless channel.
    """
    opts = getattr(source, "live_options", None)
    if opts is None:
        return None
    live = bool(getattr(source, "live", False))
    policy = opts.live_drop or ("oldest" if live else None)
    depth = opts.live_queue or (DEFAULT_LIVE_QUEUE if live else default_depth)
    if policy is None:
        return None if opts.live_queue is None else ("none", depth)
    return policy, depth
