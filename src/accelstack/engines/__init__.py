"""Engines: where checks run. ``ssh/`` runs them over SSH (host scripts, torchrun across the hosts); ``slurm/``
hands them to Slurm (``srun`` steps, ``scontrol`` drains). What a check is lives in :mod:`accelstack.validate`."""
