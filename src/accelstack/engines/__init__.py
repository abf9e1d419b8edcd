"""Engines: where checks run. ``ssh/`` runs them over SSH (host scripts, torchrun across the hosts); ``slurm/``
hands them to Slurm (``srun`` steps, ``scontrol`` drains, every command through a :class:`.slurm.client.Client`,
which tests replace as they replace the SSH transport). What a check is lives in :mod:`accelstack.validate`.

Each engine is one :class:`.base.Engine`: run the host checks on a set of nodes, run the cluster collective,
drain a node. A scheduler that is not here (Kubernetes: a Job or DaemonSet per node, a node taint as the drain)
would be ``engines/k8s/``, one more subclass beside these two; nothing above this layer would change."""
