"""The AdminService: the operator aborts matches and closes or opens match creation.

A service of its own rather than methods of MatchService, so that the players'
generated clients never carry operator methods and a proxy in front of a public
server can drop ``/ziggurat.v1.AdminService/`` as a whole. Every call needs the
operator token (see :mod:`ziggurat.api.access`).
"""

from __future__ import annotations

from typing import Any

import grpc

from ziggurat.api.access import Access
from ziggurat.api.guard import bearer_token
from ziggurat.api.servicer import api
from ziggurat.core.manager import MatchManager
from ziggurat.core.render import render_match
from ziggurat.v1 import admin_service_pb2 as apb
from ziggurat.v1 import admin_service_pb2_grpc as agrpc

_Context = grpc.aio.ServicerContext[Any, Any]


class AdminServicer(agrpc.AdminServiceServicer):
    """gRPC front of the operator's controls."""

    def __init__(self, manager: MatchManager, access: Access) -> None:
        self.manager = manager
        self.access = access

    @api
    async def AbortMatch(self, request: apb.AbortMatchRequest, context: _Context) -> apb.AbortMatchResponse:
        """End any unfinished match: nobody wins, the seed is revealed."""
        self.access.require_admin(bearer_token(context))
        match = self.manager.abort(request.match_id)
        return apb.AbortMatchResponse(match=render_match(match, None))

    @api
    async def CloseMatchCreation(
        self, request: apb.CloseMatchCreationRequest, context: _Context
    ) -> apb.CloseMatchCreationResponse:
        """Refuse new matches until opened again (or a restart)."""
        self.access.require_admin(bearer_token(context))
        self.manager.creation_open = False
        return apb.CloseMatchCreationResponse()

    @api
    async def OpenMatchCreation(
        self, request: apb.OpenMatchCreationRequest, context: _Context
    ) -> apb.OpenMatchCreationResponse:
        """Accept new matches again."""
        self.access.require_admin(bearer_token(context))
        self.manager.creation_open = True
        return apb.OpenMatchCreationResponse()
