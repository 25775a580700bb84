"""The `advisor` command line: parse arguments, call the core, render its document.

``app.py`` holds the Typer app (the console entry point) and registers the command modules beside it
(``*_commands.py``, each exposing ``register(app)``); the commands people run most are built from the option
table of ``options.py`` and run the bodies of ``fast_commands.py``, which call ``opprof_advisor.commands``.
Only this package imports typer; only it and ``opprof_advisor.render`` import rich. Command modules import the core inside the command functions, so that a fast command
does not pay for scikit-learn or sqlite-utils at start-up.
"""
