"""Tenancy on the A2A door: every A2A task belongs to the tenant of the key that created it.

The SDK's `DatabaseTaskStore` already scopes every read and write by an owner string; here the owner is the
requester's tenant, taken from the principal the authentication middleware put on the request
(`TenantContextBuilder` hands the request's `PrincipalUser` to the SDK as the call context's user).
tasks/get, tasks/list, resubscribe and cancel all read through the store, so another tenant's task is simply
not found. Admin principals see every tenant's tasks, and writing to another tenant's task keeps its owner.
"""

from __future__ import annotations

from typing import cast

from a2a.auth.user import UnauthenticatedUser, User
from a2a.server.context import ServerCallContext
from a2a.server.routes.common import DefaultServerCallContextBuilder
from a2a.server.tasks import DatabaseTaskStore
from a2a.types import a2a_pb2
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine
from starlette.requests import Request

from api.security.auth import Principal, PrincipalUser

# ServerCallContext.state key naming the owner to use instead of the principal's tenant: the owner of an
# existing task (admin access), or the tenant of an assessment finishing with no request around it.
OWNER_STATE_KEY = "green_agent.owner"


class TenantContextBuilder(DefaultServerCallContextBuilder):
    """Builds the SDK's call context with the request's principal as its user."""

    def build_user(self, request: Request) -> User:
        user = request.scope.get("user")
        return user if isinstance(user, PrincipalUser) else UnauthenticatedUser()


def principal_of(context: ServerCallContext) -> Principal | None:
    return context.user.principal if isinstance(context.user, PrincipalUser) else None


def owner_context(owner: str) -> ServerCallContext:
    """A call context that reads and writes the tasks of `owner` (for work done outside a request)."""
    return ServerCallContext(state={OWNER_STATE_KEY: owner})


def resolve_owner(context: ServerCallContext) -> str:
    override = context.state.get(OWNER_STATE_KEY)
    if override is not None:
        return cast(str, override)
    principal = principal_of(context)
    # No principal means no authenticated request: an owner no task has, so nothing is found.
    return principal.tenant if principal is not None else ""


def _with_owner(context: ServerCallContext, owner: str) -> ServerCallContext:
    return context.model_copy(update={"state": {**context.state, OWNER_STATE_KEY: owner}})


class TenantTaskStore(DatabaseTaskStore):
    """The SDK's SQL task store, owned per tenant, with admin access across tenants."""

    def __init__(self, engine: AsyncEngine) -> None:
        super().__init__(engine, create_table=True, owner_resolver=resolve_owner)

    @staticmethod
    def _is_admin(context: ServerCallContext) -> bool:
        principal = principal_of(context)
        return principal is not None and principal.admin

    async def _owner_of(self, task_id: str) -> str | None:
        await self._ensure_initialized()
        async with self.async_session_maker() as session:
            owner = await session.scalar(select(self.task_model.owner).where(self.task_model.id == task_id))
            return owner

    async def get(self, task_id: str, context: ServerCallContext) -> a2a_pb2.Task | None:
        if self._is_admin(context):
            owner = await self._owner_of(task_id)
            if owner is None:
                return None
            context = _with_owner(context, owner)
        return await super().get(task_id, context)

    async def save(self, task: a2a_pb2.Task, context: ServerCallContext) -> None:
        if self._is_admin(context):
            # An admin acting on another tenant's task must not take it over.
            owner = await self._owner_of(task.id)
            if owner is not None:
                context = _with_owner(context, owner)
        await super().save(task, context)

    async def delete(self, task_id: str, context: ServerCallContext) -> None:
        if self._is_admin(context):
            owner = await self._owner_of(task_id)
            if owner is None:
                return
            context = _with_owner(context, owner)
        await super().delete(task_id, context)

    async def list(
        self, params: a2a_pb2.ListTasksRequest, context: ServerCallContext
    ) -> a2a_pb2.ListTasksResponse:
        if self._is_admin(context):
            # The SDK filters with `owner == <resolved owner>`; resolving to the owner column itself makes
            # that `owner = owner`, true for every stored task (0003_tenancy gave ownerless tasks an owner).
            # tests/api/security/test_tenancy.py checks that an admin lists both tenants' tasks.
            context = _with_owner(context, cast(str, self.task_model.owner))
        return await super().list(params, context)
