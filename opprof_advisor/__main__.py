from opprof_advisor.cli import main

main()
