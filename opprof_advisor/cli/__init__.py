"""The `advisor` command line: parse arguments, call the core, render its document.

``app.py`` holds the Typer app and registers the command modules beside it (``*_commands.py``,
each exposing ``register(app)``); ``fast_path.py`` is the console entry point, which answers the
plain forms of `suggest`, `profile`, `show` and `search` without importing Typer, from the option
table of ``options.py`` (which the Typer commands are built from) and the bodies of
``fast_commands.py``. This file imports nothing, so the fast path may live in this package. Only this package imports typer; only it and ``opprof_advisor.render``
import rich. Command modules import the core inside the command functions, so that a fast command
does not pay for scikit-learn or sqlite-utils at start-up.
"""
