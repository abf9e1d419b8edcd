"""The nightly fleet check: validate, compare with the baseline, report, drain."""
