"""The annotated live view: ``preview.mjpg`` (multipart MJPEG at a capped rate) and ``snapshot.jpg``.

Both show the chain's output, so what the chain draws (boxes, zones, labels) is there. A viewer
takes the newest frame when it is ready for one and encodes it on a worker thread; the pipeline
never waits for a viewer, and the frames a viewer did not show are counted as skipped.
"""

from __future__ import annotations

import logging
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
Width = Annotated[int | None, Query(ge=16, le=7680, description="scale down to at most this width")]
Quality = Annotated[int, Query(ge=2, le=31, description="JPEG quality, ffmpeg's -q:v (2 best)")]


@router.get("/preview.mjpg", response_class=MjpegResponse, responses=errors(503))
async def preview(
    pid: Id,
    sid: Id,
    service: ServiceDep,
    fps: Annotated[float | None, Query(gt=0, description="frames per second, capped by the service")] = None,
    width: Width = None,
    q: Quality = 5,
) -> StreamingResponse:
    """``multipart/x-mixed-replace`` JPEG frames of the source's chain output, as browsers show them."""
    served = service.get(pid).source(sid)
    feed = served.preview
    rate = min(fps or service.config.preview_fps, service.config.preview_max_fps)
    encoder = api.JpegEncoder(quality=q, max_width=width)

    async def parts() -> AsyncIterator[bytes]:
        feed.viewer(1)
        last = 0
        try:
            while not feed.closed.is_set() and not service.stopping.is_set():
                seq, frame = feed.latest()
                if seq != last and frame is not None:
                    try:
                        jpeg = await anyio.to_thread.run_sync(encoder.encode, frame)
                    except AvdnnError as exc:
                        log.warning("%s/%s: preview ended: %s", pid, sid, exc.oneline())
                        return
                    feed.shown(seq, last)
                    last = seq
                    head = f"--{BOUNDARY}\r\nContent-Type: image/jpeg\r\nContent-Length: {len(jpeg)}\r\n\r\n"
                    yield head.encode() + jpeg + b"\r\n"
                await anyio.sleep(1 / rate)  # the preview's rate cap
        finally:
            feed.viewer(-1)

    return StreamingResponse(
        parts(),
        media_type=f"multipart/x-mixed-replace; boundary={BOUNDARY}",
        headers={"Cache-Control": "no-store"},
    )


@router.get("/snapshot.jpg", response_class=JpegResponse)
def snapshot(pid: Id, sid: Id, service: ServiceDep, width: Width = None, q: Quality = 5) -> Response:
    """The newest frame of the source's chain output as one JPEG (404 before its first frame)."""
    served = service.get(pid).source(sid)
    seq, frame = served.preview.latest()
    if frame is None:
        raise UnknownError(f"source '{sid}' has given no frame yet")
    jpeg = api.JpegEncoder(quality=q, max_width=width).encode(frame)
    served.preview.shown(seq, 0)
    return Response(jpeg, media_type="image/jpeg", headers={"Cache-Control": "no-store"})
