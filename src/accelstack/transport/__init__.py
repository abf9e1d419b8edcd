"""The engine's first layer: a connection per host (SSH through fabric, or local), the bounded fan-out that runs
one job per host, and each host's context (its stack and variables in precedence order)."""
