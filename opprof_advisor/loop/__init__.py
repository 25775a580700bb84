"""loop/: the tuning loop — `advisor collect` (run msprof op on a binary) and `advisor compare` (before / after)."""
