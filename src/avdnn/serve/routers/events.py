"""``/api/events``: the zone, line and object events of every pipeline as Server-Sent Events.

FastAPI's own SSE (``EventSourceResponse``) writes the wire format and a keep-alive comment
every 15 s of silence; each event is ``id:`` (its number on the bus), ``event:`` (its type:
``new``, ``enter``, ``cross``...) and ``data:`` (``{"pipeline", "source", "event"}``, the event as
event-v1.schema.json says). The stream reads a bounded queue of its own (:mod:`avdnn.serve.eventbus`),
so a slow client loses the oldest events, counted, and never slows a pipeline.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import APIRouter, Depends, Header, Query
from fastapi.sse import EventSourceResponse, ServerSentEvent

from avdnn.serve.deps import ServiceDep
from avdnn.serve.eventbus import RING
from avdnn.serve.openapi import errors
from avdnn.serve.slots import Slot
from avdnn.serve.specs import Id

router = APIRouter(prefix="/api", tags=["events"], responses=errors(400, 401))

#: seconds between two looks at whether the service is stopping while no event comes
_LOOK = 0.5
#: a Last-Event-ID the bus can have given (ASCII digits, within an int64); anything else is ignored
_EVENT_ID = re.compile(r"[0-9]{1,18}")


async def _slot(service: ServiceDep) -> Slot:
    """The stream's place, taken before it is answered: past ``max_event_clients``, a 503."""
    return service.events.reserve()


@router.get("/events", response_class=EventSourceResponse, responses=errors(503))
async def events(
    service: ServiceDep,
    slot: Annotated[Slot, Depends(_slot)],
    pipeline: Annotated[Id | None, Query(description="only this pipeline's events")] = None,
    source: Annotated[Id | None, Query(description="only the events of sources of this id")] = None,
    backlog: Annotated[int, Query(ge=0, le=RING, description="first the last N recent events")] = 0,
    last_event_id: Annotated[str | None, Header(include_in_schema=False)] = None,
) -> AsyncIterator[ServerSentEvent]:
    """``text/event-stream`` of every pipeline's events (``?pipeline=ID``, ``?source=ID`` filter them);
    ``?backlog=N`` sends the last N recent ones first; a client reconnecting with ``Last-Event-ID``
    gets the recent events it missed first instead."""
    bus = service.events
    after = int(last_event_id) if last_event_id is not None and _EVENT_ID.fullmatch(last_event_id) else None
    client = bus.open(
        asyncio.get_running_loop(), pipeline=pipeline, source=source, after=after, backlog=backlog, slot=slot
    )
    try:
        yield ServerSentEvent(comment="avdnn events")  # the stream is open: events from now on reach it
        while not service.stopping.is_set():
            batch = await client.next(_LOOK)
            for event in batch:
                yield ServerSentEvent(raw_data=event.data, event=event.type, id=str(event.id))
                bus.sent(1)
    finally:
        bus.close(client)
