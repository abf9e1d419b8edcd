"""The engine's last layer: result records and the run folder they are written to as they arrive, how they are
shown (reporters), and the per-host baselines that regressions are judged against."""
