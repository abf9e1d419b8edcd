"""The transport: a connection per host (SSH through fabric, or local) and the bounded fan-out that runs one job per
host (:class:`~accelstack.transport.fanout.HostPool`), nothing else. Each host's context (its stack and variables)
is the stacks layer's (:mod:`accelstack.stacks.context`)."""
