"""The frontier's matplotlib figure (PNG or SVG), and a process that draws it while the search runs.

`PlotProcess` forks a child that imports matplotlib while the search runs and then draws what it is
sent; the figure is the same either way (`draw`).
"""
from __future__ import annotations

import math
import os
import pickle
import select
import signal
import sys
import time
import warnings
from pathlib import Path


def series_label(r: dict, *, many: bool) -> str:
    mode = " (disaggregated)" if r.get("mode") == "disaggregated" else ""
    return f"{r['model']} on {r['gpu']}{mode}" if many else "frontier" + mode


def gpus_text(n: int) -> str:
    """'1 GPU', '8 GPUs'."""
    return f"{n:,} GPU" + ("" if n == 1 else "s")


def _si(x: float) -> str:
    """A rate in three figures: 1.6k, 64.2k, 877k, 1.2M."""
    for div, unit in ((1e6, "M"), (1e3, "k")):
        if x >= div:
            v = x / div
            return f"{v:.1f}{unit}" if v < 100 else f"{v:.0f}{unit}"
    return f"{x:.0f}"


def data_limits(results: list[dict]) -> tuple[tuple[float, float], tuple[float, float]]:
    """Log-axis limits around what was evaluated (cloud and frontier), so that the frontier fills the
    axes. The ideal bound takes no part: at a batch of 65,536 it runs one to two decades above the best
    deployment (Llama-3.1-70B on 8 H200: 14.2k against 3.0k tok/s/GPU), and reaching towards it squashed
    the data; it is clipped to the axes, and left out (line and legend entry) where it misses them."""
    def lim(key):
        vs = [v for r in results for v in (*r["cloud"][key], *(p[key] for p in r["frontier"])) if v > 0] or [1.0]
        return min(vs) / 1.5, max(vs) * 1.15

    return lim("tok_s_per_user"), lim("output_tok_s_per_gpu")


def bound_in_view(rb: dict | None, limits: tuple[tuple[float, float], tuple[float, float]]) -> bool:
    """Whether any of the bound's polyline (log-log, as drawn) crosses the axes of `limits` (data_limits)."""
    import numpy as np

    if not rb or len(rb["tok_s_per_user"]) == 0:
        return False
    (x0, x1), (y0, y1) = limits
    pts = np.log(np.column_stack([rb["tok_s_per_user"], rb["output_tok_s_per_gpu"]]).clip(1e-300))
    t = np.linspace(0.0, 1.0, 33)[:, None, None]
    dense = (pts[:-1] + t * (pts[1:] - pts[:-1])).reshape(-1, 2) if len(pts) > 1 else pts
    x, y = dense[:, 0], dense[:, 1]
    return bool(((x >= np.log(x0)) & (x <= np.log(x1)) & (y >= np.log(y0)) & (y <= np.log(y1))).any())


BOUND_DASHES = (":", "--", "-.", (0, (1, 4)), (0, (5, 2, 1, 2, 1, 2)))  # one dash per series' bound
# one palette for every plot (matplotlib's tab10, in its order): the PNG/SVG's series i and the HTML reports' and the
# page's (render.report's script takes it from here) are one colour, so design.png's reference is design.html's
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")


def bound_label(r: dict, results: list[dict]) -> str:
    """The bound's legend entry, named by what tells the series apart (GPU, model or both) and
    saying where it peaks, which the clipped axes do not show."""
    rb = r["roofline_bound"]
    top = f"peaks at {_si(max(rb['tok_s_per_user']))} tok/s/user, {_si(max(rb['output_tok_s_per_gpu']))} tok/s/GPU"
    if len(results) == 1:
        return f"roofline-ideal bound ({top})"
    gpus, models = {x["gpu"] for x in results}, {x["model"] for x in results}
    who = r["gpu"] if len(models) == 1 else r["model"] if len(gpus) == 1 else f"{r['model']} on {r['gpu']}"
    return f"ideal bound ({who}; {top})"


def _place_labels(ax, fig, items) -> None:
    """Annotations that overlap none drawn before (nor each other): each tries a few offsets from its
    point and is left out when none is free. items: [(text, (x, y), colour)]."""
    renderer = fig.canvas.get_renderer()
    taken = []
    # one label per text among points within ~4% of each other (three designs' "TP8 x1 B=1" at one frontier end read as
    # one stack of labels floating off the curves)
    seen: list[tuple[str, float, float]] = []
    kept = []
    for text, xy, colour in items:
        lx, ly = math.log(max(xy[0], 1e-30)), math.log(max(xy[1], 1e-30))
        if any(t == text and abs(lx - x) < 0.04 and abs(ly - y) < 0.04 for t, x, y in seen):
            continue
        seen.append((text, lx, ly))
        kept.append((text, xy, colour))
    for text, xy, colour in kept:
        for off in ((6, 6), (6, -22), (-8, 8), (-8, -22), (14, 18), (14, -34)):
            ha = "left" if off[0] > 0 else "right"
            # a leader line from the label to its point: a label moved off its point still says which point it names
            a = ax.annotate(text, xy, fontsize=7, xytext=off, textcoords="offset points", color=colour, ha=ha,
                            bbox={"boxstyle": "round,pad=0.15", "fc": "white", "ec": "none", "alpha": 0.7},
                            arrowprops={"arrowstyle": "-", "color": colour, "lw": 0.6, "shrinkA": 0, "shrinkB": 2})
            box = a.get_window_extent(renderer).expanded(1.05, 1.1)
            if not any(box.overlaps(t) for t in taken) and ax.get_window_extent(renderer).contains(box.x0, box.y0) \
                    and ax.get_window_extent(renderer).contains(box.x1, box.y1):
                taken.append(box)
                break
            a.remove()


def _decade(v: float) -> str:
    """A decade tick's label: 0.1, 1, 10, 100, 1k, 10k, 1M."""
    for div, unit in ((1e6, "M"), (1e3, "k")):
        if v >= div:
            return f"{v / div:g}{unit}"
    return f"{v:g}"


def _log_grid(ax, xlim, ylim) -> None:
    """Major grid at the decades, minor grid at 2..9 times them as one line collection per axis, not
    as minor ticks (matplotlib builds a Tick object per minor line: a third of the plot's drawing
    time), and decade labels as plain numbers (10, 1k), which need no mathtext. An axis holding fewer
    than two decades is labelled at 1, 2 and 5 times them too, as the minor ticks' labels did before."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullLocator

    for axis, (lo, hi), lines in ((ax.xaxis, xlim, ax.vlines), (ax.yaxis, ylim, ax.hlines)):
        axis.set_minor_locator(NullLocator())
        if sum(lo <= 10.0 ** e <= hi for e in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1)) < 2:
            axis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
        axis.set_major_formatter(FuncFormatter(lambda v, _pos: _decade(v)))
        minor = [d * 10.0 ** e for e in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1) for d in range(2, 10)]
        other = ylim if axis is ax.xaxis else xlim
        lines([v for v in minor if lo < v < hi], *other, colors="#b0b0b0", linewidth=0.6, alpha=0.3, zorder=0)
    ax.grid(True, which="major", alpha=0.3)


def _axes(ax, results: list[dict], *, many: bool) -> None:
    """Log axes around the data (data_limits), their labels, the title and the grid."""
    ax.set_xscale("log")
    ax.set_yscale("log")
    (x0, x1), (y0, y1) = data_limits(results)
    ax.set_xlim(x0, x1)
    ax.set_ylim(y0, y1)
    ax.set_xlabel("interactivity: output tokens/s per user")
    ax.set_ylabel("throughput: output tokens/s per GPU")
    r0 = results[0]
    # the engine(s) priced: it moves the curve as much as the GPU does (SGLang in waves: TTFT x5, newc5 #22)
    engines = " / ".join(dict.fromkeys(str(r["backend"]) for r in results if r.get("backend")))
    ax.set_title(f"Pareto frontier, ISL/OSL {r0['isl']}/{r0['osl']}, {gpus_text(r0['num_gpus'])}"
                 + (f", {engines}" if many and engines else "")
                 + ("" if many else f": {r0['model']} on {r0['gpu']}" + (f" ({engines})" if engines else "")))
    _log_grid(ax, (x0, x1), (y0, y1))


def _precision_markers(ax, r: dict, color: str, *, one_precision: bool, first: bool) -> None:
    """The third dimension: one marker per precision on the frontier, its accuracy in the legend. Every series at one and
    the same precision (design's shapes): one legend entry says so, not each series' "best precision (proxy)", which
    read as a claim about the shapes' quality."""
    precs = sorted({(q["deployment"]["weight_dtype"], q["deployment"]["kv_dtype"]) for q in r["frontier"]})
    for mk, (w, kv) in zip("osD^vP*X" * 4, precs, strict=False):  # markers repeat past 8 precisions
        pts = [q for q in r["frontier"] if (q["deployment"]["weight_dtype"], q["deployment"]["kv_dtype"]) == (w, kv)]
        acc = (pts[0].get("accuracy") or {}).get("short") or "accuracy: no source"
        label = f"{w}/{kv}: {acc}" if not one_precision else f"weights/KV {w}/{kv}: every series' precision" if first else None
        ax.scatter([q["tok_s_per_user"] for q in pts], [q["output_tok_s_per_gpu"] for q in pts], marker=mk, s=22, color=color,
                   edgecolors="black", linewidths=0.4, zorder=3, label=label)


def draw(results: list[dict], path: str | Path) -> None:
    """PNG or SVG: dominated cloud, frontier, configs at key points, roofline-ideal bound. Several series
    (GPUs, models, designs): one colour and one bound dash each, the legend beside the axes, labels
    placed where they overlap nothing."""
    # a Figure of its own, not pyplot: no GUI backend and no global state to set up (pyplot's import
    # alone is most of the main job's second)
    import numpy as np
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    many = len(results) > 1
    fig = Figure(figsize=(12.5, 6.5) if many else (9, 6), dpi=110)
    FigureCanvasAgg(fig)  # the renderer label placement measures text with
    ax = fig.subplots()
    labels = []
    precisions = {(q["deployment"]["weight_dtype"], q["deployment"]["kv_dtype"]) for r in results for q in r["frontier"]}
    one_precision = many and len(precisions) == 1
    for i, r in enumerate(results):
        color = PALETTE[i % len(PALETTE)]
        # as arrays: a list reaches numpy.ma's MaskedArray, which masks it one element at a time (4,000
        # points: a fifth of the figure's draw); the same figure, byte for byte
        ax.scatter(np.asarray(r["cloud"]["tok_s_per_user"], float), np.asarray(r["cloud"]["output_tok_s_per_gpu"], float), s=4,
                   color=color, alpha=0.12,
                   label=None if many else "evaluated deployments", rasterized=True)
        xs = [p["tok_s_per_user"] for p in r["frontier"]]
        ys = [p["output_tok_s_per_gpu"] for p in r["frontier"]]
        ax.plot(xs, ys, "-", color=color, lw=2, label=series_label(r, many=many))
        band = [(x, q.get("band") or _band(q)) for x, q in zip(xs, r["frontier"], strict=True) if q.get("band") or _band(q)]
        if band:  # each point's 80% interval on tok/s/GPU (measure.intervals), shaded along the frontier
            ax.fill_between([x for x, _ in band], [b[0] for _, b in band], [b[1] for _, b in band], color=color, alpha=0.15, lw=0,
                            gid=f"interval-band-{i}", label=f"{series_label(r, many=many)}: 80% interval of tok/s/GPU")
        _precision_markers(ax, r, color, one_precision=one_precision, first=i == 0)
        rb = r["roofline_bound"]
        # the same bound as its aggregated sibling's; one that misses the axes is neither drawn nor named
        if r.get("mode") != "disaggregated" and bound_in_view(rb, data_limits(results)):
            ax.plot(rb["tok_s_per_user"], rb["output_tok_s_per_gpu"], linestyle=BOUND_DASHES[i % len(BOUND_DASHES)], color=color,
                    lw=1.2, label=bound_label(r, results))
        n = len(r["frontier"])
        for j in sorted({0, n // 3, 2 * n // 3, n - 1}) if n else []:
            p = r["frontier"][j]
            d = p["deployment"]
            labels.append((f"{d['plan']} x{d['replicas']}\nB={d['concurrency_per_instance']} {d['weight_dtype']}"
                           + (f" {d['spec']}{d['draft_len']}" if d["spec"] else ""),
                           (p["tok_s_per_user"], p["output_tok_s_per_gpu"]), color if many else "black"))
    _axes(ax, results, many=many)
    if many:
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
        fig.tight_layout()  # the legend beside the axes is as wide as its longest label
    else:
        ax.legend(fontsize=8, loc="lower left")
        # the margins tight_layout finds for this layout (log axes labelled 10 to 10k), fixed: it costs a
        # fifth of a second, a sixth of the main job
        fig.subplots_adjust(left=0.077, right=0.983, bottom=0.102, top=0.94)
    _place_labels(ax, fig, labels)
    fig.savefig(path)


_POINT_KEYS = ("tok_s_per_user", "output_tok_s_per_gpu", "accuracy")
_DEPLOYMENT_KEYS = ("plan", "replicas", "concurrency_per_instance", "weight_dtype", "kv_dtype", "spec", "draft_len")
_RESULT_KEYS = ("model", "gpu", "num_gpus", "isl", "osl", "mode", "cloud", "roofline_bound", "backend")


def plot_view(results: list[dict]) -> list[dict]:
    """What `draw` reads of search results, in plain types: the whole of what a second process is sent."""
    return [{**{k: r.get(k) for k in _RESULT_KEYS},
             "frontier": [{**{k: p.get(k) for k in _POINT_KEYS}, "deployment": {k: p["deployment"][k] for k in _DEPLOYMENT_KEYS},
                           "band": _band(p)} for p in r["frontier"]]} for r in results]


def _band(p: dict) -> tuple[float, float] | None:
    """A point's 80% interval on tok/s/GPU, where it has intervals."""
    b = (p.get("intervals") or {}).get("output_tok_s_per_gpu")
    return (b["lo80"], b["hi80"]) if b else None


class _Child:
    """A forked child's process id and the parent's ends of its two pipes (-1 once closed). The job
    goes length-first: the child reads exactly that much, so a pipe end another fork inherited (a
    second PlotProcess) cannot keep it waiting for an end of file."""

    def __init__(self, pid: int, job_w: int, answer_r: int) -> None:
        self.pid, self.job_w, self.answer_r = pid, job_w, answer_r

    def send(self, job: bytes, timeout_s: float) -> bool:
        """Writes the job (its length, then it) within `timeout_s`; False if the child is gone or stalls."""
        data = memoryview(len(job).to_bytes(8, "little") + job)
        deadline = time.monotonic() + timeout_s
        os.set_blocking(self.job_w, False)
        poll = select.poll()
        poll.register(self.job_w, select.POLLOUT)
        try:
            while data:
                left = deadline - time.monotonic()
                if left <= 0 or not poll.poll(left * 1e3):
                    return False
                data = data[os.write(self.job_w, data):]
            return True
        except OSError:  # the child is gone (EPIPE)
            return False

    def answer(self, timeout_s: float) -> bytes:
        poll = select.poll()
        poll.register(self.answer_r, select.POLLIN)
        return os.read(self.answer_r, 2) if poll.poll(timeout_s * 1e3) else b""

    def release(self) -> None:
        """Closes its pipes and leaves it: a child still importing goes on to its end, finds no job and
        leaves (for a process that is exiting, which does not wait for it)."""
        for name in ("job_w", "answer_r"):
            fd = getattr(self, name)
            setattr(self, name, -1)
            if fd >= 0:
                os.close(fd)

    def end(self) -> None:
        """Closes its pipes, so that a child still waiting for a job leaves by itself; one still at work
        after a few seconds is killed. Reaped either way: it writes nothing after this returns, and it is
        not killed in the middle of matplotlib's font-cache write unless it hangs."""
        self.release()
        deadline = time.monotonic() + 5.0
        try:
            while os.waitpid(self.pid, os.WNOHANG) == (0, 0):
                if time.monotonic() > deadline:
                    os.kill(self.pid, signal.SIGKILL)
                    os.waitpid(self.pid, 0)
                    return
                time.sleep(0.01)
        except ChildProcessError:  # already reaped (SIGCHLD ignored by the embedding process)
            pass


class PlotProcess:
    """A figure drawn by a forked child started before the search, so that matplotlib's import (half a
    second, most of it building the artists' docstrings) overlaps the search on another core: `start()`
    early, `submit(results, path)` sends the figure and returns the Drawing that completes the file.
    Forked, not spawned: the child has numpy and this module already, where a fresh interpreter spends
    the time it would save importing them again. Linux only (fork is unsafe with macOS's system
    libraries and absent on Windows) and with a second core; anywhere else, or if the child cannot be
    started or fails, the figure is drawn in this process: the file is the same, only later."""

    def __init__(self) -> None:
        self._child: _Child | None = None

    def start(self) -> PlotProcess:
        if not sys.platform.startswith("linux") or len(os.sched_getaffinity(0)) < 2:
            return self
        fds: list[int] = []
        try:
            job_r, job_w = os.pipe()
            fds += [job_r, job_w]
            answer_r, answer_w = os.pipe()
            fds += [answer_r, answer_w]
            with warnings.catch_warnings():  # Python >= 3.12 warns on fork with native threads (numpy's BLAS pool, idle)
                warnings.simplefilter("ignore", DeprecationWarning)
                pid = os.fork()
        except OSError:  # no file descriptors or processes left: draw here
            for fd in fds:
                os.close(fd)
            return self
        if pid == 0:  # the child: import, draw what is sent, answer, and leave without running the parent's exit handlers
            try:
                os.close(job_w)
                os.close(answer_r)
                _serve(job_r, answer_w)
            finally:
                os._exit(0)
        os.close(job_r)
        os.close(answer_w)
        self._child = _Child(pid, job_w, answer_r)
        return self

    @staticmethod
    def started() -> PlotProcess:
        """The process start_early forked for this command, else one started now."""
        global _early
        p, _early = _early, None
        return p if p is not None else PlotProcess().start()

    def submit(self, results: list[dict], path: str | Path) -> Drawing:
        view = plot_view(results)
        child, self._child = self._child, None
        # an absolute path: the parent may change directory before the child writes
        if child is not None and not child.send(pickle.dumps((view, os.path.abspath(path))), timeout_s=120.0):
            child.end()  # gone or stalled before reading: draw here
            child = None
        return Drawing(child, view, path)

    def release(self) -> None:
        """Leaves a child that was never sent a figure to end by itself (_Child.release)."""
        child, self._child = self._child, None
        if child is not None:
            child.release()

    def close(self) -> None:
        """Ends a child that was never sent a figure (the command failed or drew none)."""
        child, self._child = self._child, None
        if child is not None:
            child.end()

    def __enter__(self) -> PlotProcess:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()


_early: PlotProcess | None = None  # forked by start_early, taken by the command (PlotProcess.started)


def start_early(argv: list[str]) -> None:
    """Forks the figure's process at the entry point (cli.main), before the commands' imports, where the
    arguments ask `pareto` for a figure (--out or --plot): matplotlib's import then overlaps those
    imports too (a third of the main job's critical path on two cores), not only the search. A guess
    from the raw arguments: where no command takes the process, drop_early releases it, and it leaves
    once its import is done, having written nothing."""
    global _early
    if argv[:1] == ["pareto"] and any(a in ("--out", "--plot") or a.startswith(("--out=", "--plot=")) for a in argv[1:]):
        # numpy first, which both processes import (matplotlib's and the commands'): forked after it, the
        # child shares it rather than importing it again (~70 ms of CPU), and its matplotlib import ends
        # no later (numpy was the start of it)
        import numpy  # noqa: F401

        _early = PlotProcess().start()


def drop_early() -> None:
    """Releases the process start_early forked if no command took it (an error, or no figure asked)."""
    global _early
    p, _early = _early, None
    if p is not None:
        p.release()


def _quietly(fn) -> None:
    """fn() with this process's stdout and stderr (file descriptors 1 and 2) sent to /dev/null, restored after."""
    streams = [f for f in {sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__} if f is not None]
    for f in streams:
        f.flush()
    quiet, saved = os.open(os.devnull, os.O_WRONLY), (os.dup(1), os.dup(2))
    try:
        os.dup2(quiet, 1)
        os.dup2(quiet, 2)
        fn()
    finally:
        for f in streams:  # what fn left buffered goes where it was written: nowhere
            f.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in (quiet, *saved):
            os.close(fd)


def _import_matplotlib() -> None:
    """The import this child exists to do early, less the set() docstrings nothing here reads: each Artist
    subclass builds its set()'s signature and docstring at class creation from every setter's docstring
    (matplotlib artist.py, Artist.__init_subclass__), a third of the import (0.25 s on two vCPUs). A
    subclass then keeps its parent's set(), which takes the same keywords (Artist.set normalises them by
    the artist's own aliases): the same figure, byte for byte (tests/test_plot.py)."""
    from matplotlib import artist

    if hasattr(artist.Artist, "_update_set_signature_and_docstring"):
        artist.Artist._update_set_signature_and_docstring = classmethod(lambda cls: None)
    from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: F401
    from matplotlib.figure import Figure  # noqa: F401


def _serve(job_fd: int, answer_fd: int) -> None:
    # the import's own messages (matplotlib's first-run note that it builds its font cache) are not the
    # command's: a child forked early may still be importing after a refused command printed its one
    # line and exited. A failed import stays silent here and surfaces where the parent draws instead
    _quietly(_import_matplotlib)

    with os.fdopen(job_fd, "rb") as f:
        head = f.read(8)
        if len(head) < 8:  # no job: the parent drew none
            return
        view, path = pickle.loads(f.read(int.from_bytes(head, "little")))
    draw(view, path)
    os.write(answer_fd, b"ok")


class Drawing:
    """A figure PlotProcess's child is drawing: `wait()` completes the file (drawing it here if the
    child failed), `cancel()` ends the child so that it writes nothing more."""

    def __init__(self, child: _Child | None, view: list[dict], path: str | Path) -> None:
        self._child, self._view, self._path = child, view, path

    def wait(self) -> None:
        ok = False
        if self._child is not None:
            ok = self._child.answer(120.0) == b"ok"
            self.cancel()
        if not ok:
            draw(self._view, self._path)

    def cancel(self) -> None:
        child, self._child = self._child, None
        if child is not None:
            child.end()
