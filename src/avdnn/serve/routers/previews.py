"""The annotated live view: ``preview.mjpg`` (multipart MJPEG at a capped rate) and ``snapshot.jpg``.

Both show the chain's output, so what the chain draws (boxes, zones, labels) is there. A viewer
asks the source's agent for the newest frame when it is ready for one, encoded as a JPEG on a
worker thread (of this process, or of the node that runs the source: it comes through the head,
at the viewer's capped rate); the pipeline never waits for a viewer, and the frames a viewer did
not show are counted as skipped. At most ``max_viewers`` MJPEG streams are open at once (one
more: 503); a stream ends at once when its source goes or the service stops, whatever its rate
(its wait between frames looks every :data:`_LOOK` seconds).
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator
from typing import Annotated

import anyio.to_thread
from fastapi import APIRouter, Query, Response
from fastapi.responses import StreamingResponse

from avdnn import api
from avdnn.errors import AvdnnError
from avdnn.serve.deps import ServiceDep
from avdnn.serve.errors import UnknownError
from avdnn.serve.openapi import JpegResponse, MjpegResponse, errors
from avdnn.serve.specs import Id

router = APIRouter(prefix="/api/pipelines/{pid}/sources/{sid}", tags=["previews"], responses=errors(400, 401, 404))
log = logging.getLogger("avdnn.serve")

BOUNDARY = "frame"
#: the lowest preview rate asked for (one frame every 10 s), and how often a wait looks up
MIN_FPS = 0.1
_LOOK = 0.25
Width = Annotated[int | None, Query(ge=16, le=7680, description="scale down to at most this width")]
Quality = Annotated[int, Query(ge=2, le=31, description="JPEG quality, ffmpeg's -q:v (2 best)")]


@router.get("/preview.mjpg", response_class=MjpegResponse, responses=errors(503))
async def preview(
    pid: Id,
    sid: Id,
    service: ServiceDep,
    fps: Annotated[
        float | None, Query(ge=MIN_FPS, description="frames per second (0.1 at least), capped by the service")
    ] = None,
    width: Width = None,
    q: Quality = 5,
) -> StreamingResponse:
    """``multipart/x-mixed-replace`` JPEG frames of the source's chain output, as browsers show them."""
    served = service.get(pid).source(sid)
    feed = served.preview
    rate = min(fps or service.config.preview_fps, service.config.preview_max_fps)
    api.JpegEncoder(quality=q, max_width=width)  # its options checked before the answer
    slot = service.viewers.take()  # before the answer: past max_viewers, a 503

    def over() -> bool:
        return feed.closed.is_set() or service.stopping.is_set()

    async def pause(seconds: float) -> None:
        """The rate cap's wait, cut short when the source goes or the service stops."""
        until = time.monotonic() + seconds
        while not over() and (left := until - time.monotonic()) > 0:
            await anyio.sleep(min(left, _LOOK))

    async def parts() -> AsyncIterator[bytes]:
        feed.viewer(1)
        last = 0
        try:
            while not over():
                try:
                    got = await anyio.to_thread.run_sync(served.frame, last, width, q)
                except AvdnnError as exc:
                    log.warning("%s/%s: preview ended: %s", pid, sid, exc.oneline())
                    return
                if got is not None:
                    seq, jpeg = got
                    feed.shown(seq, last)
                    last = seq
                    head = f"--{BOUNDARY}\r\nContent-Type: image/jpeg\r\nContent-Length: {len(jpeg)}\r\n\r\n"
                    yield head.encode() + jpeg + b"\r\n"
                await pause(1 / rate)  # the preview's rate cap
        finally:
            feed.viewer(-1)
            slot.release()

    return StreamingResponse(
        parts(),
        media_type=f"multipart/x-mixed-replace; boundary={BOUNDARY}",
        headers={"Cache-Control": "no-store"},
    )


@router.get("/snapshot.jpg", response_class=JpegResponse)
def snapshot(pid: Id, sid: Id, service: ServiceDep, width: Width = None, q: Quality = 5) -> Response:
    """The newest frame of the source's chain output as one JPEG (404 before its first frame)."""
    served = service.get(pid).source(sid)
    api.JpegEncoder(quality=q, max_width=width)  # its options checked first
    got = served.frame(0, width, q)
    if got is None:
        raise UnknownError(f"source '{sid}' has given no frame yet")
    seq, jpeg = got
    served.preview.shown(seq, 0)
    return Response(jpeg, media_type="image/jpeg", headers={"Cache-Control": "no-store"})
