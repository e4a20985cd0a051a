"""Jobs of the tool-output study (issue 11): file inputs and analysis; I/O lives here."""
