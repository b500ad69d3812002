"""What the routers are handed: the service of the app they serve (a dependency, never a global)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from avdnn.serve.service import Service

__all__ = ["ServiceDep", "get_service"]


def get_service(request: Request) -> Service:
    service: Service = request.app.state.service
    return service


ServiceDep = Annotated[Service, Depends(get_service)]
