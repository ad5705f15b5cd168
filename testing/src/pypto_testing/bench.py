"""The headline figures of ``nox -s bench`` in one table.

Each benchmark script prints its own tables; for the figures the speed issue tracks it also calls
:func:`report`, which appends one JSON line to the file named by ``PYPTO_BENCH_REPORT`` (nothing
happens when it is unset). ``python -m pypto_testing.bench FILE`` then prints them side by side:
the figure, its baseline (measured in the same run), the ratio, and the bar and goal, each either
on the ratio or on the value (a per-task overhead is bounded in microseconds, not as a ratio).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, Literal

__all__ = ["ENV", "main", "print_table", "report", "under_load"]

ENV = "PYPTO_BENCH_REPORT"


def report(
    figure: str,
    value: float,
    baseline: float,
    baseline_name: str,
    unit: str,
    *,
    bar: float | None = None,
    goal: float | None = None,
    on: Literal["ratio", "value"] = "ratio",
) -> None:
    """Record one figure (``value`` and ``baseline`` in ``unit``); ``bar``/``goal`` bound the ratio
    (``on="ratio"``) or the value itself (``on="value"``), lower is better."""
    path = os.environ.get(ENV)
    if not path:
        return
    if baseline <= 0:
        raise ValueError(f"report({figure!r}): expected a positive baseline, got {baseline}")
    row = {
        "figure": figure,
        "value": value,
        "baseline": baseline,
        "baseline_name": baseline_name,
        "unit": unit,
        "ratio": value / baseline,
        "bar": bar,
        "goal": goal,
        "on": on,
    }
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(row) + "\n")


def print_table(
    title: str, header: Sequence[str], rows: Iterable[Sequence[str]], *, right_from: int = 1
) -> None:
    """Print ``rows`` (cells as text) under ``header``: a rich table where rich is installed,
    aligned plain text otherwise. Columns from ``right_from`` on hold figures and are
    right-justified."""
    body = [list(r) for r in rows]
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:
        print(title)
        widths = [max([len(h), *(len(r[i]) for r in body)]) for i, h in enumerate(header)]
        for r in [list(header), *body]:
            cells = zip(r, widths, strict=True)
            print("  ".join(c.ljust(w) if i < right_from else c.rjust(w) for i, (c, w) in enumerate(cells)))
        return
    table = Table(title=title)
    for i, h in enumerate(header):
        table.add_column(h, justify="left" if i < right_from else "right")
    for r in body:
        table.add_row(*r)
    Console(width=max(120, Console().width)).print(table)


def under_load(median_us: Callable[[], float], busy: int) -> tuple[float, float, float]:
    """``(quiet, loaded, load average)``: ``median_us()`` (a timing that returns a median in us)
    measured alone, then with ``busy`` CPU-bound processes running, and the load average then.
    Issue 32's "steady under load" compares the two medians."""
    quiet = median_us()
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(busy)]
    try:
        time.sleep(1.0)  # let the scheduler spread them
        loaded = median_us()
        load = os.getloadavg()[0]
    finally:
        for p in hogs:
            p.kill()
        for p in hogs:
            p.wait()
    return quiet, loaded, load


def _bound(row: dict[str, Any], key: str) -> str:
    limit = row.get(key)
    if limit is None:
        return "-"
    return f"<= {limit:g}x" if row["on"] == "ratio" else f"<= {limit:g} {row['unit']}"


def _verdict(row: dict[str, Any]) -> str:
    measured = row["ratio"] if row["on"] == "ratio" else row["value"]
    bar, goal = row.get("bar"), row.get("goal")
    if bar is None:
        return "-"
    if goal is not None and measured <= goal:
        return "goal met"
    return "bar met" if measured <= bar else "NOT met"


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m pypto_testing.bench REPORT.jsonl", file=sys.stderr)
        return 2
    path = Path(argv[0])
    if not path.is_file():
        print(
            f"pypto_testing.bench: no report at {path} (did the benchmarks run with {ENV} set?)",
            file=sys.stderr,
        )
        return 1
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    header = ("figure", "value", "baseline", "ratio", "bar", "goal", "")
    cells = [
        (
            r["figure"],
            f"{r['value']:.3g} {r['unit']}",
            f"{r['baseline']:.3g} {r['unit']} ({r['baseline_name']})",
            f"{r['ratio']:.2f}x",
            _bound(r, "bar"),
            _bound(r, "goal"),
            _verdict(r),
        )
        for r in rows
    ]
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:
        print("headline figures (each a ratio to a baseline measured in the same run)")
        for row in [header, *cells]:
            print(" | ".join(row))
        return 0
    table = Table(title="headline figures (each a ratio to a baseline measured in the same run)")
    for col in header:
        table.add_column(col, overflow="fold")
    for row in cells:
        table.add_row(*row)
    Console(width=160).print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
