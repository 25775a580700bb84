"""opprof-advisor: ranked, evidence-backed tuning advice for Ascend NPU profiles."""

__version__ = "0.1.0"
