"""Render search results: CSV, a matplotlib PNG/SVG and a self-contained plotly HTML report.

Plot libraries are optional extras imported lazily; the core results are plain dicts.
"""
from __future__ import annotations

import csv
import html
import io
import json
import os
import secrets
from pathlib import Path

from llm_codesign.errors import InputError

FIELDS = ("model", "gpu", "tok_s_per_user", "output_tok_s_per_gpu", "ttft_ms", "tpot_ms", "plan", "instance_gpus",
          "replicas", "concurrency_per_instance", "weight_dtype", "activation_dtype", "kv_dtype", "spec", "draft_len",
          "accuracy_source", "accuracy_drop_pct", "accuracy")
_DEP_FIELDS = FIELDS[6:15]


def _accuracy_cells(p: dict) -> dict:
    """A point's accuracy (explore.accuracy_model.point_accuracy) as CSV cells; a point without one says none."""
    a = p.get("accuracy") or {}
    drop = a.get("relative_drop_pct")
    return {"accuracy_source": a.get("source", "none"), "accuracy_drop_pct": "" if drop is None else round(drop, 3),
            "accuracy": a.get("short", "none")}


def frontier_rows(results: list[dict]) -> list[dict]:
    rows = []
    for r in results:
        for p in r["frontier"]:
            d = p["deployment"]
            rows.append({"model": r["model"], "gpu": r["gpu"], **{k: p[k] for k in ("tok_s_per_user", "output_tok_s_per_gpu", "ttft_ms", "tpot_ms")},
                         **{k: d[k] for k in _DEP_FIELDS}, **_accuracy_cells(p)})
    return rows


def write_csv(results: list[dict], path: str | Path) -> None:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=FIELDS)
    w.writeheader()
    w.writerows(frontier_rows(results))
    Path(path).write_text(buf.getvalue())


def check_writable(field: str, path: str | Path, *, folder: bool = False) -> Path:
    """Refuses, before any work, an output path this process cannot write: a folder where a file is
    wanted, a path in a missing folder, or a folder that takes no new file (probed with an empty file
    removed at once: permission bits say nothing to root, and /proc refuses even root). With
    `folder`, `path` is a folder that may exist or will be created."""
    p = Path(path)
    if not folder and p.is_dir():
        raise InputError(field, str(path), "a file path, not a folder")
    if folder and p.exists() and not p.is_dir():
        raise InputError(field, str(path), "a folder, not a file")
    where = p if folder and p.is_dir() else p.resolve().parent
    if not where.is_dir():
        raise InputError(field, str(path), "a path in an existing folder")
    probe = where / f".{p.name}.{secrets.token_hex(4)}.probe"
    try:
        probe.open("x").close()
        probe.unlink()
    except OSError as e:
        raise InputError(field, str(path), f"a path in a folder this process may write ({e.strerror})") from None
    return p


def _tmp_beside(p: Path) -> Path:
    # same suffix: writers that pick a format by it (matplotlib) keep it
    return p.with_name(f".{p.stem}.{secrets.token_hex(4)}.tmp{p.suffix}")


def write_all(jobs) -> None:
    """[(writer, path), ...]: each writer writes a temporary file beside its path, then all are renamed
    into place; a failure on any leaves none of them. The writers create the files themselves, so each
    gets the mode a plain open() gives under the umask."""
    tmps: list[tuple[Path, Path]] = []
    try:
        for write, path in jobs:
            p = Path(path)
            tmps.append((_tmp_beside(p), p))
            write(tmps[-1][0])
        for tmp, p in tmps:
            os.replace(tmp, p)
    except OSError as e:  # a full disk, a quota: name the user's path, not the temporary one
        raise OSError(e.errno, e.strerror, str(p)) from None
    finally:
        for tmp, _ in tmps:
            tmp.unlink(missing_ok=True)


def write_text_atomic(path: str | Path, text: str) -> None:
    write_all([(lambda t: t.write_text(text), path)])


def write_rows_atomic(path: str | Path, fieldnames, rows) -> None:
    """Rows as CSV, written whole or not at all (a temporary file renamed into place)."""
    check_writable("out", path)

    def write(tmp: Path) -> None:
        with tmp.open("w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(fieldnames))
            w.writeheader()
            w.writerows(rows)

    write_all([(write, path)])


def _label(r: dict, many: bool) -> str:
    mode = " (disaggregated)" if r.get("mode") == "disaggregated" else ""
    return f"{r['model']} on {r['gpu']}{mode}" if many else "frontier" + mode


def write_plot(results: list[dict], path: str | Path) -> None:
    """PNG or SVG: dominated cloud, frontier, configs at key points, roofline-ideal bound."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise InputError("plot", str(path), "the plot extra: pip install 'llm-codesign[plot]'") from None
    fig, ax = plt.subplots(figsize=(9, 6), dpi=110)
    many = len(results) > 1
    for i, r in enumerate(results):
        color = f"C{i}"
        ax.scatter(r["cloud"]["tok_s_per_user"], r["cloud"]["output_tok_s_per_gpu"], s=4, color=color, alpha=0.12,
                   label=None if many else "evaluated deployments", rasterized=True)
        xs = [p["tok_s_per_user"] for p in r["frontier"]]
        ys = [p["output_tok_s_per_gpu"] for p in r["frontier"]]
        ax.plot(xs, ys, "-", color=color, lw=2, label=_label(r, many))
        # the third dimension: one marker per precision on the frontier, its accuracy in the legend
        precs = sorted({(q["deployment"]["weight_dtype"], q["deployment"]["kv_dtype"]) for q in r["frontier"]})
        for mk, (w, kv) in zip("osD^vP*X" * 4, precs, strict=False):  # markers repeat past 8 precisions
            pts = [q for q in r["frontier"] if (q["deployment"]["weight_dtype"], q["deployment"]["kv_dtype"]) == (w, kv)]
            acc = (pts[0].get("accuracy") or {}).get("short") or "accuracy: no source"
            ax.scatter([q["tok_s_per_user"] for q in pts], [q["output_tok_s_per_gpu"] for q in pts], marker=mk, s=22, color=color,
                       edgecolors="black", linewidths=0.4, zorder=3, label=f"{w}/{kv}: {acc}")
        rb = r["roofline_bound"]
        if r.get("mode") != "disaggregated":  # the same bound as its aggregated sibling's
            ax.plot(rb["tok_s_per_user"], rb["output_tok_s_per_gpu"], ":", color=color, lw=1,
                    label=("roofline-ideal bound" if not many else f"ideal bound ({r['gpu']})"))
        n = len(r["frontier"])
        for j in sorted({0, n // 3, 2 * n // 3, n - 1}) if n else []:
            p = r["frontier"][j]
            d = p["deployment"]
            ax.annotate(f"{d['plan']} x{d['replicas']}\nB={d['concurrency_per_instance']} {d['weight_dtype']}"
                        + (f" {d['spec']}{d['draft_len']}" if d["spec"] else ""),
                        (p["tok_s_per_user"], p["output_tok_s_per_gpu"]), fontsize=7, xytext=(6, 6), textcoords="offset points")
    ax.set_xscale("log")
    ax.set_yscale("log")
    fx = [p["tok_s_per_user"] for r in results for p in r["frontier"]] or [1.0]
    fy = [p["output_tok_s_per_gpu"] for r in results for p in r["frontier"]] or [1.0]
    bx = max(max(r["roofline_bound"]["tok_s_per_user"]) for r in results)
    by = max(max(r["roofline_bound"]["output_tok_s_per_gpu"]) for r in results)
    ax.set_xlim(min(fx) / 3, max(max(fx), bx) * 1.5)
    ax.set_ylim(min(fy) / 3, max(max(fy), by) * 1.5)
    ax.set_xlabel("interactivity: output tokens/s per user")
    ax.set_ylabel("throughput: output tokens/s per GPU")
    r0 = results[0]
    ax.set_title(f"Pareto frontier, ISL/OSL {r0['isl']}/{r0['osl']}, {r0['num_gpus']} GPUs" + ("" if many else f": {r0['model']} on {r0['gpu']}"))
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def _errors_html(errors: dict[str, list[str]] | None) -> str:
    if not errors:
        return ""
    out = "<h2>Measured error of such predictions</h2>\n"
    for gpu, lines in errors.items():
        items = "".join(f"<li>{html.escape(x)}</li>" for x in lines) or "<li>no measured run like these</li>"
        out += f"<p>{html.escape(gpu)}:</p><ul>{items}</ul>\n"
    return out


def write_html(results: list[dict], breakdowns: dict, path: str | Path, errors: dict[str, list[str]] | None = None) -> None:
    """Self-contained HTML (plotly.js inlined, no CDN) with hover details and per-operator breakdowns;
    `errors` ({GPU: lines}, accuracy.describe) says how far such predictions lie from measured runs."""
    try:
        import plotly.graph_objects as go
    except ImportError:
        raise InputError("html", str(path), "the web extra: pip install 'llm-codesign[web]'") from None
    fig = go.Figure()
    many = len(results) > 1
    for i, r in enumerate(results):
        fig.add_trace(go.Scattergl(x=r["cloud"]["tok_s_per_user"], y=r["cloud"]["output_tok_s_per_gpu"], mode="markers",
                                   marker={"size": 3, "opacity": 0.2}, name=html.escape(f"evaluated ({_label(r, many)})"), hoverinfo="skip"))
        hover = [f"{p['deployment']['plan']} x{p['deployment']['replicas']}<br>batch {p['deployment']['concurrency_per_instance']}"
                 f"<br>{p['deployment']['weight_dtype']}/{p['deployment']['kv_dtype']}"
                 f"{'<br>' + str(p['deployment']['spec']) + ' k=' + str(p['deployment']['draft_len']) if p['deployment']['spec'] else ''}"
                 f"<br>TTFT {p['ttft_ms']:.0f} ms, TPOT {p['tpot_ms']:.2f} ms"
                 f"<br>accuracy {html.escape(_accuracy_cells(p)['accuracy'])} ({_accuracy_cells(p)['accuracy_source']})" for p in r["frontier"]]
        fig.add_trace(go.Scatter(x=[p["tok_s_per_user"] for p in r["frontier"]], y=[p["output_tok_s_per_gpu"] for p in r["frontier"]],
                                 mode="lines+markers", name=html.escape(_label(r, many)), text=hover, customdata=[[i, j] for j in range(len(r["frontier"]))],
                                 hovertemplate="%{text}<br>%{x:.1f} tok/s/user, %{y:.0f} tok/s/GPU<extra></extra>"))
        rb = r["roofline_bound"]
        if r.get("mode") != "disaggregated":
            fig.add_trace(go.Scatter(x=rb["tok_s_per_user"], y=rb["output_tok_s_per_gpu"], mode="lines", line={"dash": "dot"},
                                     name=f"roofline-ideal bound ({r['gpu']})"))
    fig.update_layout(xaxis={"type": "log", "title": "output tokens/s per user"}, yaxis={"type": "log", "title": "output tokens/s per GPU"},
                      title="Throughput vs interactivity (click a frontier point for its per-operator breakdown)", height=620)
    plot = fig.to_html(include_plotlyjs=True, full_html=False, div_id="frontier-plot")
    data = json.dumps({"results": [{k: v for k, v in r.items() if k != "cloud"} for r in results], "breakdowns": breakdowns},
                      allow_nan=False)
    # no markup can start inside the JSON (a model named after a file like `<img ...>.json`); the page
    # reads it with textContent and builds every cell with textContent, never innerHTML
    safe = data.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    page = f"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>llm-codesign Pareto report</title>
<style>body{{font-family:sans-serif;margin:1.5em}} table{{border-collapse:collapse;font-size:12px}}
td,th{{border:1px solid #ccc;padding:2px 6px;text-align:right}} td:first-child{{text-align:left}}</style></head>
<body><h1>Pareto report: {html.escape(', '.join(_label(r, True) for r in results))}</h1>
<p>ISL/OSL {results[0]['isl']}/{results[0]['osl']}, {results[0]['num_gpus']} GPUs, backend {html.escape(results[0]['backend'])};
{sum(r['evaluated'] for r in results):,} deployments evaluated.</p>
{plot}
{_errors_html(errors)}<h2>Per-operator breakdown of the selected point</h2><div id="breakdown">Click a frontier point.</div>
<h2>Frontier</h2><div id="table"></div>
<script type="application/json" id="frontier-data">{safe}</script>
<script>
const D = JSON.parse(document.getElementById('frontier-data').textContent);
function cell(tr, tag, text) {{ const c = document.createElement(tag); c.textContent = String(text); tr.appendChild(c); }}
function table(head) {{ const t = document.createElement('table'); const tr = t.insertRow(); head.forEach(h => cell(tr, 'th', h)); return t; }}
function show(i, j) {{
  const p = D.results[i].frontier[j]; const b = D.breakdowns[i + ':' + j] || [];
  const box = document.getElementById('breakdown'); box.replaceChildren();
  const para = document.createElement('p');
  para.textContent = p.deployment.plan + ' x' + p.deployment.replicas + ', batch ' + p.deployment.concurrency_per_instance;
  const t = table(['operator', 'kind', 'ms per step']);
  for (const o of b) {{ const tr = t.insertRow(); [o.name, o.kind, o.time_ms.toFixed(4)].forEach(x => cell(tr, 'td', x)); }}
  box.append(para, t);
}}
const T = table(['model', 'gpu', 'tok/s/user', 'tok/s/GPU', 'TTFT ms', 'plan', 'batch', 'precision', 'accuracy']);
D.results.forEach((r, i) => r.frontier.forEach((p, j) => {{
  const tr = T.insertRow(); tr.onclick = () => show(i, j);
  [r.model, r.gpu, p.tok_s_per_user.toFixed(1), p.output_tok_s_per_gpu.toFixed(0), p.ttft_ms.toFixed(0), p.deployment.plan,
   p.deployment.concurrency_per_instance, p.deployment.weight_dtype,
   p.accuracy ? p.accuracy.short + ' (' + p.accuracy.source + ')' : 'none'].forEach(x => cell(tr, 'td', x));
}}));
document.getElementById('table').appendChild(T);
document.getElementById('frontier-plot').on('plotly_click', ev => {{
  const cd = ev.points[0].customdata; if (cd) show(cd[0], cd[1]);
}});
</script></body></html>
"""
    Path(path).write_text(page)  # the caller's write_all makes it whole or nothing
