import csv
import json
import re

import pytest

from llm_codesign.cost.calibration import calibration_for
from llm_codesign.explore.search import SearchSpace, point_breakdown, search
from llm_codesign.render.report import basis_text, write_csv, write_html, write_plot
from llm_codesign.spec.hardware import get_gpu
from llm_codesign.spec.registry import get_model


@pytest.fixture(scope="module")
def result():
    m, g = get_model("llama-3.1-8b"), get_gpu("h100")
    cal = calibration_for(g)
    r = search(m, g, cal, SearchSpace(4), isl=512, osl=256)
    bd = {f"0:{j}": point_breakdown(m, cal, p.deployment, p.concurrency, isl=512, osl=256) for j, p in enumerate(r.points)}
    return r, bd


def test_csv_round_trip(result, tmp_path):
    r, _ = result
    p = tmp_path / "f.csv"
    write_csv([r], p)
    rows = list(csv.DictReader(p.open()))
    assert len(rows) == len(r.points)
    assert float(rows[0]["tok_s_per_user"]) == pytest.approx(r.points[0].tok_s_per_user)
    assert (rows[0]["plan"], int(rows[0]["concurrency_per_instance"])) == (r.points[0].deployment.plan.label(), r.points[0].concurrency)


def test_png_and_svg(result, tmp_path):
    r, _ = result
    png, svg = tmp_path / "f.png", tmp_path / "f.svg"
    write_plot([r], png)
    write_plot([r], svg)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    text = svg.read_text()
    assert "<svg" in text and "tokens/s per user" in text


def test_html_self_contained_lean_with_data_once(result, tmp_path):
    typed, bd = result
    r = typed.to_dict(plot=True)
    p = tmp_path / "r.html"
    write_html([typed], bd, p)
    text = p.read_text()
    assert not re.search(r"<(script|link|img)[^>]+(src|href)=", text)  # nothing fetched: no CDN, no file beside it
    assert "plotly" not in text.lower()  # its own SVG plot: plotly.js inlined was 4.8 MB of a 4.9 MB report
    # each point's data carries its estimate_command and span95/predictable since uxsmall and uxleft (155 kB here)
    assert len(text.encode()) < 165_000, len(text.encode())
    assert "ISL/OSL 512/256, 4 GPUs, backend trtllm" in text
    blob = re.search(r'<script type="application/json" id="frontier-data">(.*?)</script>', text, re.S).group(1)
    data = json.loads(blob)
    fr = data["results"][0]["frontier"]
    assert len(fr) == len(r["frontier"]) and fr[-1]["tok_s_per_user"] == r["frontier"][-1]["tok_s_per_user"]
    assert data["breakdowns"]["0:0"][0]["time_ms"] > 0
    # the data is embedded once: the frontier's figures appear in the JSON and nowhere else
    assert text.count(json.dumps(r["frontier"][-1]["tok_s_per_user"])) == 1
    cloud = data["results"][0]["cloud"]["tok_s_per_user"]
    assert len(cloud) == len(r["cloud"]["tok_s_per_user"]) and cloud[0] == float(f"{r['cloud']['tok_s_per_user'][0]:.4g}")
    # the axes hold the data alone (x1.15 margin), so the frontier fills them; the bound, a decade above,
    # misses them and is not named (the legend once named a bound drawn off the axes)
    y0, y1 = data["limits"]["y"]
    ys = r["cloud"]["output_tok_s_per_gpu"] + [q["output_tok_s_per_gpu"] for q in r["frontier"]]
    assert y0 < min(ys) and y1 == pytest.approx(max(ys) * 1.15, rel=1e-12)
    assert max(r["roofline_bound"]["output_tok_s_per_gpu"]) > y1 and data["results"][0]["bound"] is None


def test_the_report_states_its_error_as_the_intervals_and_a_profiles_own_as_unknown(result, tmp_path):
    # the page stated error twice: each result's intervals (basis_text) and a "Measured error of such predictions" section
    # of median / p90 APE pooled by engine and load on every GPU, another basis that disagreed with the band. Now the
    # intervals alone; a profile of one's own is told its error is not known until measured, and how to measure it
    typed, bd = result
    p = tmp_path / "r.html"
    write_html([typed], bd, p)
    text = p.read_text()
    assert "Measured error" not in text and "% p90" not in text and 'id="profile-note"' not in text
    # the precision and its accuracy in the terminal's words (pareto's "accuracy at fp8/fp8: drop 0.10±0.05% against bf16 (proxy)")
    assert '<p class="basis">llama-3.1-8b on h100: W fp8 / A fp8 / KV fp8, accuracy drop 0.10±0.05% against bf16 (proxy).</p>' in text
    write_html([typed], bd, p, profile="/data/<x>.toml")  # a crafted path is text
    assert ('<p id="profile-note">Priced with &lt;x&gt;.toml, a calibration profile of your own: its error is not known '
            "unless you measure it (`llm-codesign validate --calibration /data/&lt;x&gt;.toml` on your runs). An interval from "
            "&lt;x&gt;.toml&#x27;s own runs (`calibrate --serving` writes them) is measured on this profile; one from the bundled "
            "profile&#x27;s runs states the bundled profile&#x27;s error, not this one&#x27;s.</p>") in p.read_text()


def test_the_pages_accuracy_is_the_terminals(result):
    # the page read "-0.1±0.1% (proxy) against bf16" and "accuracy none" where pareto's lines read "drop 0.10±0.05% (proxy)"
    # (naming no reference where every point shared one) and "n/a (no published score ...)": one wording (render.accuracy)
    r = result[0].to_dict(plot=True)
    unknown = {**r, "frontier": [{**p, "accuracy": {"source": "none", "relative_drop_pct": None}} for p in r["frontier"]]}
    assert basis_text(unknown) == ("llama-3.1-8b on h100: W fp8 / A fp8 / KV fp8, accuracy n/a (no published score nor precision "
                                   "delta at this precision).")
    published = {**r, "frontier": [{**p, "accuracy": {"source": "published", "benchmark": "GPQA", "score": 71.5,
                                                      "relative_drop_pct": 0.2, "drop_uncertainty_pct": 0.0, "reference_precision": "bf16"}} for p in r["frontier"]]}
    assert basis_text(published) == "llama-3.1-8b on h100: W fp8 / A fp8 / KV fp8, accuracy GPQA 71.5, drop 0.20% against bf16."


def test_empty_frontier_says_why(result, tmp_path):
    from llm_codesign.render.report import report_data

    r = result[0].to_dict(plot=True)
    none_fit = {**r, "frontier": [], "fitting": 0}
    slo = {**r, "frontier": []}
    got = [x["empty"] for x in report_data([none_fit, slo], {})["results"]]
    assert got == [f"none of its {r['evaluated']:,} deployments fits in the memory of 4 GPUs h100",
                   f"{r['fitting']:,} of its {r['evaluated']:,} deployments fit, but none meets the SLOs given"]
    assert report_data([r], {})["results"][0]["empty"] == ""


def test_each_bound_is_named_by_what_tells_the_series_apart(result):
    from llm_codesign.render.plot import _si, bound_label

    r = result[0].to_dict(plot=True)
    other_gpu, other_model = {**r, "gpu": "h200"}, {**r, "model": "design 1"}
    assert bound_label(r, [r]).startswith("roofline-ideal bound (peaks at ")
    assert bound_label(other_gpu, [r, other_gpu]).startswith("ideal bound (h200; peaks at ")
    assert bound_label(other_model, [r, other_model]).startswith("ideal bound (design 1; peaks at ")
    assert bound_label(other_model, [other_gpu, other_model]).startswith("ideal bound (design 1 on h100; ")
    assert [_si(x) for x in (553.4, 1578.0, 14236.0, 131845.0, 1.5e6)] == ["553", "1.6k", "14.2k", "132k", "1.5M"]


def test_gpu_counts_are_pluralised():
    from llm_codesign.render.plot import gpus_text

    assert [gpus_text(n) for n in (1, 2, 8, 1024)] == ["1 GPU", "2 GPUs", "8 GPUs", "1,024 GPUs"]


def test_log_axes_within_a_decade_still_carry_labels():
    """The plot's own log grid labels the decades; an axis spanning less than two (a narrow search) is
    labelled at 1, 2 and 5 times them, so it never comes out without a number on it."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from llm_codesign.render.plot import _decade, _log_grid

    assert [_decade(v) for v in (0.5, 20.0, 1e3, 2e3, 1e6)] == ["0.5", "20", "1k", "2k", "1M"]
    for (xl, yl), want in ((((13, 69), (133, 690)), (["20", "50"], ["200", "500"])),
                           (((0.5, 300), (20, 9000)), (["1", "10", "100"], ["100", "1k"]))):
        fig, ax = plt.subplots()
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlim(*xl)
        ax.set_ylim(*yl)
        _log_grid(ax, xl, yl)
        fig.canvas.draw()
        got = ([t.get_text() for t in ax.get_xticklabels() if xl[0] <= t.get_position()[0] <= xl[1]],
               [t.get_text() for t in ax.get_yticklabels() if yl[0] <= t.get_position()[1] <= yl[1]])
        plt.close(fig)
        assert got == want


def test_multi_series_png_labels_do_not_overlap(result, tmp_path, monkeypatch):
    """Two GPUs of nearly equal frontiers (the case `pareto --gpu b200,gb200` drew on top of itself):
    every label drawn overlaps no other, lies inside the axes, and the legend lies beside them."""
    from dataclasses import replace

    from matplotlib.figure import Figure

    from llm_codesign.render import report

    r, _ = result
    twin = replace(r, gpu=replace(r.gpu, id="h100-twin"))
    seen = {}
    real_savefig = Figure.savefig

    def keep(fig, *args, **kwargs):  # the figure write_plot draws, kept for measuring
        seen["fig"] = fig
        return real_savefig(fig, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", keep)
    report.write_plot([r, twin], tmp_path / "two.png")
    fig = seen["fig"]
    ax = fig.axes[0]
    rend = fig.canvas.get_renderer()
    boxes = [t.get_window_extent(rend) for t in ax.texts]
    assert len(boxes) >= 4  # at least the first series' four labels found room
    assert not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:])
    area = ax.get_window_extent(rend)
    assert all(area.x0 <= b.x0 and b.x1 <= area.x1 and area.y0 <= b.y0 and b.y1 <= area.y1 for b in boxes)
    assert ax.get_legend().get_window_extent(rend).x0 >= area.x1  # beside the axes, over no data
    # the engine both series ran (H100's default, TensorRT-LLM) in the title: it moves the curve as the GPU does (newc5 #22)
    assert ax.get_title() == "Pareto frontier, ISL/OSL 512/256, 4 GPUs, trtllm"


def _above_bound(res: dict, cloud: bool = False) -> list[tuple[float, float, float]]:
    """(tok/s/user, tok/s/GPU, the bound's tok/s/GPU there) of each frontier (or cloud) point above the
    roofline-ideal bound, read on the bound's log-log polyline; beyond its fastest point any y is above."""
    import numpy as np

    rb = res["roofline_bound"]
    bx, by = np.asarray(rb["tok_s_per_user"]), np.asarray(rb["output_tok_s_per_gpu"])
    o = np.argsort(bx)
    bx, by = bx[o], by[o]
    pts = zip(res["cloud"]["tok_s_per_user"], res["cloud"]["output_tok_s_per_gpu"], strict=True) if cloud else (
        (p["tok_s_per_user"], p["output_tok_s_per_gpu"]) for p in res["frontier"])
    out = []
    for x, y in pts:
        yb = float(np.exp(np.interp(np.log(x), np.log(bx), np.log(by)))) if x <= bx[-1] else 0.0
        if y > yb * (1 + 1e-9):
            out.append((x, y, yb))
    return out


def test_weights_read_is_active_at_one_token_and_all_but_the_embedding_at_many():
    from llm_codesign.explore.search import weights_read

    m = get_model("qwen3-30b-a3b")  # 48 layers of 128 experts, top-8: one token reads its 8 experts per layer
    one, many = weights_read(m, [1, 1e9])
    assert one == pytest.approx(m.active_params, rel=1e-12) and one == pytest.approx(3.04e9, rel=0.01)
    assert many == pytest.approx(m.total_params - m.embedding_params, rel=1e-9)
    # 16 tokens: 128 * (1 - (120/128)^16) = 82.3 experts of each layer's 128
    E, k, h, w = 128, 8, m.hidden, m.groups[0][0].ffn.expert_inter
    want = one + 48 * 3 * h * w * (E * (1 - (1 - k / E) ** 16) - k)
    assert weights_read(m, [16])[0] == pytest.approx(want, rel=1e-12)
    dense = get_model("llama-3.1-8b")
    assert weights_read(dense, [1, 4096]).tolist() == [dense.total_params - dense.embedding_params] * 2


@pytest.mark.parametrize("model,gpu,n,spec", [("qwen3-30b-a3b", "h200", 1, None), ("qwen3-30b-a3b", "h200", 1, "eagle3"),
                                              ("deepseek-r1", "b200", 8, None), ("llama-3.1-8b", "h100", 1, None)])
def test_no_deployment_lies_above_the_roofline_ideal_bound(model, gpu, n, spec):
    """The bound reads the experts a batch picks, not every expert (with all of them, one H200 capped
    Qwen3-30B-A3B at 157 tok/s/user while its frontier reached 347)."""
    import llm_codesign as lc

    kw = {"spec": spec, "acceptance": 2.5, "draft_len": 3} if spec else {}
    res = lc.pareto(model, gpu, num_gpus=n, **kw).to_dict(plot=True)
    assert len(res["frontier"]) >= 10
    assert _above_bound(res) == [] and _above_bound(res, cloud=True) == []


def test_a_plot_without_matplotlib_is_refused_before_the_search(tmp_path, monkeypatch):
    """No plot extra installed: `pareto --plot` says so in one line, exit 2, before any search runs and
    with nothing written."""
    import importlib.util

    from typer.testing import CliRunner

    import llm_codesign.explore.search as search_mod
    from llm_codesign.cli.commands import app

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "matplotlib" else real(name, *a))

    def no_search(*args, **kwargs):
        raise AssertionError("the search ran")

    monkeypatch.setattr(search_mod, "search", no_search)
    res = CliRunner().invoke(app, ["pareto", "llama-3.1-8b", "--gpu", "h100", "--gpus", "1", "--plot", str(tmp_path / "f.png")])
    assert res.exit_code == 2, res.output
    assert "plot" in res.output and "pip install 'llm-codesign[plot]'" in res.output
    assert list(tmp_path.iterdir()) == []


def test_write_all_runs_meanwhile_after_the_writers_and_before_the_renames(tmp_path):
    # pareto renders its tables there, while the figure's process draws: every writer has run, no file
    # is in place yet; a writer that fails stops it from running at all
    from llm_codesign.outputs import write_all

    seen = []

    def writer(name):
        def write(tmp):
            tmp.write_text(name)
            seen.append(name)
        return write

    def meanwhile():
        seen.append("meanwhile")
        assert not (tmp_path / "a.txt").exists() and not (tmp_path / "b.txt").exists()

    write_all([(writer("a"), tmp_path / "a.txt"), (writer("b"), tmp_path / "b.txt")], meanwhile=meanwhile)
    assert seen == ["a", "b", "meanwhile"] and (tmp_path / "b.txt").read_text() == "b"

    def fails(tmp):
        raise OSError(28, "No space left on device")

    seen.clear()
    with pytest.raises(OSError):
        write_all([(writer("c"), tmp_path / "c.txt"), (fails, tmp_path / "d.txt")], meanwhile=meanwhile)
    assert seen == ["c"] and not (tmp_path / "c.txt").exists()


def test_the_report_names_each_series_engine_where_they_differ(tmp_path):
    """An MI355X beside an H200 is priced on SGLang, the H200 on TensorRT-LLM (each vendor's engine): the report's
    header said 'backend trtllm' for both, the first series' engine."""
    import llm_codesign as lc
    from llm_codesign.render.report import engines_text

    rs = [lc.pareto("llama-3.1-8b", g, num_gpus=1) for g in ("h200", "mi355x", "b200")]
    assert [r.to_dict()["backend"] for r in rs] == ["trtllm", "sglang", "trtllm"]
    assert engines_text([r.to_dict() for r in rs]) == "backends trtllm (h200, b200), sglang (mi355x)"
    assert engines_text([rs[0].to_dict()]) == "backend trtllm"
    p = tmp_path / "r.html"
    write_html(rs, {}, p)
    text = p.read_text()
    assert "ISL/OSL 1024/1024, 1 GPU, backends trtllm (h200, b200), sglang (mi355x);" in text
    assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in text


def test_the_csv_names_each_series_engine(tmp_path):
    """`pareto --gpu h200,mi355x` prices the H200 on TensorRT-LLM and the MI355X on SGLang: the CSV's rows now say
    which (a `backend` column beside the GPU); they did not."""
    import llm_codesign as lc

    rs = [lc.pareto("llama-3.1-8b", g, num_gpus=1) for g in ("h200", "mi355x")]
    p = tmp_path / "f.csv"
    write_csv(rs, p)
    rows = list(csv.DictReader(p.open()))
    assert list(rows[0])[:4] == ["model", "gpu", "backend", "tok_s_per_user"]
    assert {(r["gpu"], r["backend"]) for r in rows} == {("h200", "trtllm"), ("mi355x", "sglang")}
    assert len(rows) == sum(len(r.points) for r in rs)
