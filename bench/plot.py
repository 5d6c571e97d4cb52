"""The chart of a run: requests per server CPU-second of every server, SSE and JSON replies.

    bench/.peers/plot/bin/python bench/plot.py [RESULTS_JSON] [OUT_PNG]

Reads run.py's results (bench/results/latest.json by default) and writes a horizontal bar chart
(bench/results/throughput.png by default; run.py --readme also writes bench/throughput.png, the
one bench/README.md shows). Each bar is point 1 (a quick `tools/call add` on one session, 16
connections; the bare rows and the raw protocol answer a fixed body) as requests per server
CPU-second, the figure the tables compare, on a log scale since the servers span more than two
orders of magnitude. matplotlib is a bench-only dependency: bench/setup.sh installs it into
bench/.peers/plot/, never into the project's environment.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt
import report

BENCH = Path(__file__).resolve().parent


def per_cpu(point: dict[str, Any] | None) -> float | None:
    """A valid point's requests per server CPU-second, else None."""
    if not point or point.get("invalid") or not point.get("rps") or not point.get("server_cpu"):
        return None
    return float(point["rps"]) / float(point["server_cpu"])


def bars(results: dict[str, Any]) -> list[tuple[str, float | None, float | None]]:
    """(label, SSE figure, JSON figure) per server in the run's order, fastest first."""
    rows = []
    for name in results["order"]:
        entry = results.get("http", {}).get(name, {})
        sse, json_ = per_cpu(entry.get("sse")), per_cpu(entry.get("json"))
        if sse is None and json_ is None:
            continue
        rows.append((report.server_label(name).replace("`", ""), sse, json_))
    rows.sort(key=lambda row: max(row[1] or 0.0, row[2] or 0.0))
    return rows


def draw(results: dict[str, Any], out: Path) -> None:
    rows = bars(results)
    fig, ax = plt.subplots(figsize=(9.5, 0.55 * len(rows) + 1.6))
    ys = range(len(rows))
    height = 0.38
    for offset, index, label, colour in ((-height / 2, 1, "SSE replies", "#3b6ea5"),
                                         (height / 2, 2, "JSON replies", "#e0a040")):
        values = [row[index] or 0.0 for row in rows]
        ax.barh([y + offset for y in ys], values, height=height, label=label, color=colour)
        for y, value in zip(ys, values, strict=True):
            if value:
                ax.text(value * 1.05, y + offset, f"{value:,.0f}", va="center", fontsize=7)
    ax.set_yticks(list(ys))
    ax.set_yticklabels([row[0] for row in rows], fontsize=8)
    ax.set_xscale("log")
    ax.set_xlabel("requests per server CPU-second (log scale), quick tools/call, 16 connections")
    meta = results.get("meta", {})
    ax.set_title(f"Run of {meta.get('date', '?')}, ours at {meta.get('tree', '?')}", fontsize=9)
    ax.legend(loc="lower right", fontsize=8)
    ax.margins(x=0.15)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)


def main() -> None:
    source = Path(sys.argv[1]) if len(sys.argv) > 1 else BENCH / "results" / "latest.json"
    out = Path(sys.argv[2]) if len(sys.argv) > 2 else BENCH / "results" / "throughput.png"
    draw(json.loads(source.read_text()), out)
    print(out)


if __name__ == "__main__":
    main()
