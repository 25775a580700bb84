"""profile/: the kernels of a read profile turned into its facts (op types, units, families, steps, roofline,
export). Never judges: the symptoms (symptoms/) and findings (advice/) do."""
