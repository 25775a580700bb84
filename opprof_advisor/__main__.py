"""`python -m opprof_advisor`: the same entry point as the `advisor` command."""

from opprof_advisor.cli.app import main

# Guarded so that a process started by multiprocessing's spawn, which imports the main module under
# another name, does not run the command a second time.
if __name__ == "__main__":
    main()
