"""Results printed as Markdown tables, so a run's output can go into docs/benchmarks.md as it is."""

from __future__ import annotations

import os
from collections.abc import Sequence

from bench.procstats import calibration_ms


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    cells = [[str(h) for h in headers], *[[str(c) for c in row] for row in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = ["| " + " | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) + " |" for row in cells]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)


def print_table(title: str, headers: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
    print(f"\n### {title}\n")
    print(markdown_table(headers, rows))
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"\n(CPU calibration {calibration_ms():.0f} ms, lower is a quieter machine; load average {load})")
    print(flush=True)
