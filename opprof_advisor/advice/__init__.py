"""Advice: findings with gain models, the workload context, remedies from the knowledge base, ranking.

``advice.suggest.advise(profile, entries, matcher=...)`` makes the ``opprof-advisor/suggest/2`` document.
"""
