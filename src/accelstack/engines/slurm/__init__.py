"""The Slurm engine: host checks on every node with one ``srun``, the multi-node allreduce as one Slurm step, and
node-check's Slurm side."""
