"""`advisor mcp`: serve the advisor's commands as Model Context Protocol tools over stdio."""

from __future__ import annotations

import typer

from opprof_advisor.cli._common import LangOption
from opprof_advisor.mcp.server import serve


def register(app: typer.Typer) -> None:
    """Add `advisor mcp` to the app."""
    app.command("mcp")(mcp_command)


def mcp_command(lang: LangOption = None) -> None:
    """Serve profile, suggest, search, show, compare, roofline and scan as MCP tools on stdin/stdout.

    Register it in an MCP client as the command `advisor mcp` (see docs/mcp.md).
    Each tool returns the command's JSON document as structured content plus a one-paragraph summary;
    errors are tool errors with the command's one-line message. Needs: pip install 'opprof-advisor\\[mcp]'.
    """
    serve()
