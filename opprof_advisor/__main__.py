from opprof_advisor.fast_search import main

main()
