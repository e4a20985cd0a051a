"""Studies that ship as runnable examples of the study seam (docs/new-study.md)."""
