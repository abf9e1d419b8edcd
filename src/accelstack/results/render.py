"""A person's view of a held baseline: one row per bandwidth figure, with its noise and the drop that would count."""

from __future__ import annotations

from rich.table import Table

from .baseline import MIN_SIZE_SAMPLES, Baseline
from .metrics import DEFAULT_BUSBW_DROP_PCT


def baseline_table(held: Baseline) -> Table:
    """Each held bandwidth figure: how many runs, the median it is compared with, the range, the noise (how far
    the worst held run fell below the best) and the drop that would count at the default percentage."""
    table = Table(title=f"baseline ({held.describe()}; keeps {held.keep} healthy run(s) per figure)",
                  title_justify="left")
    for column in ("host", "check", "figure", "runs", "median GB/s", "min..max", "noise", "counts past"):
        table.add_column(column, overflow="fold")
    status_only = 0
    for host, checks in sorted(held.hosts.items()):
        for check, entry in sorted(checks.items()):
            figures = [("peak", entry.peak)] + [(f"{size} B", fig) for size, fig in sorted(entry.sizes.items())]
            figures = [(label, figure) for label, figure in figures if figure.samples]
            status_only += not figures
            for label, figure in figures:
                judged = label == "peak" or len(figure.samples) >= MIN_SIZE_SAMPLES
                table.add_row(host, check, label, str(len(figure.samples)), f"{figure.median:.4g}",
                              f"{figure.low:.4g}..{figure.high:.4g}", f"{figure.noise_pct:.1f}%",
                              f"-{figure.threshold_pct(DEFAULT_BUSBW_DROP_PCT):.1f}%" if judged
                              else f"(from {MIN_SIZE_SAMPLES} runs)")
    table.caption = (f"and {status_only} host/check pair(s) with a status and versions but no bandwidth"
                     if status_only else None)
    return table
