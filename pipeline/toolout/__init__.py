"""Study 2 (seed 000): tool-output compaction replayed under provider prompt-cache rules.

Pure protocol: importers parse bytes handed to them, policies and cache models are functions
of values; the study's I/O sits in pipeline/studies/toolout.py and jobs/toolout/.
"""
