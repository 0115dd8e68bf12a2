"""`compare --plot`: each model x precision x GPU's best deployment at the SLO, throughput against
interactivity, each point labelled with its precision and its accuracy on the model's one compared
measure (explore.compare.accuracy_compared)."""
from __future__ import annotations

from pathlib import Path


def draw_compare(rows: list[dict], cells: list[str], path: str | Path, *, title: str) -> None:
    """PNG or SVG (by the suffix): one colour per model, one marker per GPU; rows with no deployment
    meeting the SLO are left out (the table says why)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    from llm_codesign.render.plot import _log_grid

    fig = Figure(figsize=(9, 6), dpi=110)
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    models = list(dict.fromkeys(r["model"] for r in rows))
    gpus = list(dict.fromkeys(r["gpu"] for r in rows))
    marks = "osD^vP*X"
    for r, cell in zip(rows, cells, strict=True):
        b = r["best"]
        if not b:
            continue
        colour = f"C{models.index(r['model']) % 10}"
        xy = (b["tok_s_per_user"], b["output_tok_s_per_gpu"])
        ax.scatter(*xy, color=colour, marker=marks[gpus.index(r["gpu"]) % len(marks)], s=40, edgecolors="black", linewidths=0.4, zorder=3)
        ax.annotate(f"{r['weight_dtype']}: {cell}", xy, xytext=(5, 4), textcoords="offset points", fontsize=7, color=colour)
    handles = [Line2D([], [], color=f"C{i % 10}", marker="o", linestyle="", label=m) for i, m in enumerate(models)]
    if len(gpus) > 1:
        handles += [Line2D([], [], color="grey", marker=marks[i % len(marks)], linestyle="", label=g) for i, g in enumerate(gpus)]
    ax.legend(handles=handles, fontsize=8, loc="best")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("interactivity: output tokens/s per user")
    ax.set_ylabel("throughput: output tokens/s per GPU")
    ax.set_title(title, fontsize=10)
    ax.margins(0.08)
    ax.autoscale_view()
    xlim, ylim = ax.set_xlim(ax.get_xlim()), ax.set_ylim(ax.get_ylim())  # fixed before the grid's lines would widen them
    _log_grid(ax, xlim, ylim)  # plain tick labels (12, 20, 1k), as the frontier's figure has
    fig.tight_layout()
    fig.savefig(path)
