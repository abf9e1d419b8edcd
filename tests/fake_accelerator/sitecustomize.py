"""Loads the fake accelerator into every python started with this folder on PYTHONPATH (the collectives tests
set it for the validator they run, its spawned ranks and torchrun's workers)."""

import fake_accelerator

fake_accelerator.install()
