"""The record contract, below everything that makes records: result records and the run folder they are written
to as they arrive, how they are shown (reporters), the figures read off a record (``metrics``), and the per-host
baselines that regressions are judged against."""
