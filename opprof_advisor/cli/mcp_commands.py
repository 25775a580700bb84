"""`advisor mcp`: serve the advisor's commands as Model Context Protocol tools over stdio."""

from __future__ import annotations

from typing import Annotated

import typer

from opprof_advisor.core.i18n import M_
from opprof_advisor.cli._common import LangOption
from opprof_advisor.mcp.server import DEFAULT_TIMEOUT_S, MissingSDK


def register(app: typer.Typer) -> None:
    """Add `advisor mcp` to the app."""
    app.command("mcp")(mcp_command)


def mcp_command(
    lang: LangOption = None,
    timeout: Annotated[
        float,
        typer.Option("--timeout", min=0, help="Stop a tool call (and everything it started) that has not answered "
                                              "after this many seconds; 0 = no limit."),
    ] = DEFAULT_TIMEOUT_S,
) -> None:
    """Serve profile, suggest, search, show, compare, roofline and scan as MCP tools on stdin/stdout.

    Register it in an MCP client as the command `advisor mcp` (see README, "Agents: advisor mcp").
    Each tool returns the command's JSON document as structured content plus a one-paragraph summary;
    errors are tool errors with the command's one-line message. Needs: pip install 'opprof-advisor\\[mcp]'.
    """
    try:
        from opprof_advisor.mcp.wire import serve
    except ImportError as exc:
        raise MissingSDK(M_("the MCP server needs the mcp SDK 2.x ({missing} is missing)", missing=exc.name or str(exc)),
                         hint="pip install 'opprof-advisor[mcp]'") from None
    status = serve(timeout=timeout)
    if status:
        raise typer.Exit(status)
