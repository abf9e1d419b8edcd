"""The SSH engine: host checks fanned out over SSH, and the cluster checks (torchrun across the hosts, ports,
clock) run from this machine."""
