"""core/: what every stage may import — models, errors, vocabularies, operator families, units of meaning
(i18n), paths, steps, safe file and YAML reading, terminal text, atomic outputs, SQLite helpers, thresholds."""
