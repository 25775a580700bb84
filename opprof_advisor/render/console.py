"""The one Rich console every terminal output goes through: it prints no control character of the text it is given.

Op names, KB titles, notes and scanned file names come from files anyone can write; a terminal
takes ESC, CSI and OSC sequences in them as commands. ``safe_console()`` returns a console (same
options as ``rich.console.Console``) that cleans every rendered segment (``terminal.printable``'s
rule) before Rich adds its own styling codes, and that treats a closed pipe as a quiet end.
"""

from __future__ import annotations

import errno

from opprof_advisor.core.terminal import CONTROLS, detach_closed_stdout

_CONSOLE_CLASS = None


def safe_console(**options):
    """A ``rich.console.Console`` (same options) that never prints a control character of the text it is given."""
    global _CONSOLE_CLASS
    if _CONSOLE_CLASS is None:
        _CONSOLE_CLASS = _make_console_class()
    return _CONSOLE_CLASS(**options)


def _make_console_class():
    from rich.console import Console
    from rich.segment import Segment

    class SafeConsole(Console):
        """Cleans the text of every rendered segment; Rich's own control segments (cursor moves) pass."""

        def render(self, renderable, options=None):
            for segment in super().render(renderable, options):
                text = segment.text
                if segment.control is None and CONTROLS.search(text):
                    # Rich measures control characters as zero width, so removing them keeps tables aligned.
                    segment = Segment(CONTROLS.sub("", text), segment.style, None)
                yield segment

        def on_broken_pipe(self) -> None:
            # Rich exits with code 1 here; a reader that stopped reading (`| head`) is not a failure,
            # so hand the error to the entry point, which exits quietly with 0.
            detach_closed_stdout()
            raise BrokenPipeError(errno.EPIPE, "the reader closed the pipe")

    return SafeConsole
