"""foldsweep: controlled context-compaction experiments on served LLM endpoints."""

__all__ = ["__version__"]
__version__ = "0.1.0"
