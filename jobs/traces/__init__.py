"""The reasoning-trace study's jobs (seed 002): the visibility matrix, recital verdicts, the
compression bands and paired intervals, the figures and the report. Entry points are
`run_all.analyze(run_dir, analysis, layout)` and `report.render_report(run_dir, layout)`."""
