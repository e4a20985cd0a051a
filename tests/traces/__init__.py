"""Tests of the reasoning-trace study (seed 002)."""
