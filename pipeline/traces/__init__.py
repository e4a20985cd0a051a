"""The reasoning-trace study (seed 002): template visibility and trace compression."""
