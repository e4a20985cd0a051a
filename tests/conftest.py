"""Fixtures shared across test folders (the sweep harness serves sweep/ and reliability/)."""

pytest_plugins = ["tests.reliability.harness"]
