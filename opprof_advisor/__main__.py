"""`python -m opprof_advisor` and the `advisor` command: one entry point.

Ctrl-C while the CLI's modules load (the first few tenths of a second) ends the way it does later, quietly with
130, not with a traceback from the middle of an import."""

try:
    from opprof_advisor.cli.app import main
except KeyboardInterrupt:
    raise SystemExit(130) from None


def run() -> None:
    """The `advisor` console script."""
    main()


# Guarded so that a process started by multiprocessing's spawn, which imports the main module under
# another name, does not run the command a second time.
if __name__ == "__main__":
    run()
