"""`python -m opprof_advisor`: the same entry point as the `advisor` command."""

from opprof_advisor.cli.fast_path import main

main()
