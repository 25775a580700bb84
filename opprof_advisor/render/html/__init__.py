"""Self-contained HTML reports: one module per report, the page frame, the charts and the stylesheet.

Each report turns one ``opprof-advisor/<command>/1`` document into a page with inline CSS and
inline SVG, no JavaScript and nothing fetched from the network (Ascend clusters are often offline).
Document conventions: ``share`` fields are fractions (0..1), ``*_pct`` fields percentages
(0..100), times µs.
"""
