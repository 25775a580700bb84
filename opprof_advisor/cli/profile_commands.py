"""`advisor profile PATH`: read any supported profiler output and show its operator profile.

The options are cli/options.py's, the body (read, --export, render) is cli/fast_commands.run_profile.
"""

from __future__ import annotations

import typer

from opprof_advisor.cli._common import typer_command
from opprof_advisor.cli.fast_commands import run_profile

#: `advisor profile`: options from cli/options.py, body in cli/fast_commands.py.
profile_command = typer_command("profile", run_profile)


def register(app: typer.Typer) -> None:
    """Add `advisor profile` to the app."""
    app.command("profile", no_args_is_help=True)(profile_command)
