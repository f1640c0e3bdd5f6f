"""FastAPI dependencies as Annotated aliases: routes declare what they need, never reach for globals."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, HTTPException, Request, status

from api.db.repository import AssessmentRepository
from api.runtime.runtime import Runtime
from api.runtime.service import AssessmentService


def get_runtime(request: Request) -> Runtime:
    runtime: Runtime | None = getattr(request.app.state, "runtime", None)
    if runtime is None:
        raise HTTPException(status.HTTP_503_SERVICE_UNAVAILABLE, "the service is starting; retry shortly")
    return runtime


RuntimeDep = Annotated[Runtime, Depends(get_runtime)]


def get_service(runtime: RuntimeDep) -> AssessmentService:
    return runtime.service


def get_repository(runtime: RuntimeDep) -> AssessmentRepository:
    return runtime.repository


ServiceDep = Annotated[AssessmentService, Depends(get_service)]
RepositoryDep = Annotated[AssessmentRepository, Depends(get_repository)]
