"""The design report (explore.design_report, render.design_report): the reference and the top three designs side
by side in `design --json` and `design --report`, the same figures in both, and the report's bad input refused."""
from __future__ import annotations

import copy
import html
import json
from html.parser import HTMLParser

import pytest
from typer.testing import CliRunner

import llm_codesign as lc
from llm_codesign.cli import app
from llm_codesign.render.design_report import design_html

# Qwen3-8B's budget on one H200, as the page's design test searches it: 31 shapes admitted (a second)
ARGS = ["design", "--params", "8e9", "--gpu", "h200", "--gpus", "1", "--max-candidates", "40", "--top", "3", "--baseline", "qwen3-8b"]


def cli(*args: str):
    r = CliRunner().invoke(app, list(args), env={"COLUMNS": "2000"})
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        raise AssertionError(f"uncaught {type(r.exception).__name__}: {r.exception}") from r.exception
    return r.exit_code, r.stdout, r.stderr


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """One run writing both: the JSON on standard output and the HTML report."""
    page = tmp_path_factory.mktemp("report") / "design.html"
    code, out, err = cli(*ARGS, "--json", "--report", str(page))
    assert code == 0, err
    return json.loads(out), page.read_text()


class _Tables(HTMLParser):
    """Each table's rows (by the table's id) as lists of cell texts."""

    def __init__(self):
        super().__init__()
        self.tables, self._id, self._row, self._cell = {}, None, None, None

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self._id = dict(attrs).get("id")
            self.tables[self._id] = []
        elif tag == "tr":
            self._row = []
        elif tag in ("td", "th"):
            self._cell = ""

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._row is not None:
            self._row.append(self._cell)
            self._cell = None
        elif tag == "tr":
            self.tables[self._id].append(self._row)
            self._row = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell += data


def _tables(page: str) -> dict[str, list[list[str]]]:
    p = _Tables()
    p.feed(page)
    return p.tables


def test_the_columns_are_the_baseline_and_the_top_three_as_design_ranked_them(run):
    r, _ = run
    s = r["side_by_side"]
    cols = s["columns"]
    assert [(c["name"], c["role"]) for c in cols] == [("qwen3-8b", "baseline"), ("design 1", "design"), ("design 2", "design"),
                                                      ("design 3", "design")]
    # Qwen3-8B's config.json: 36 layers of 4096, 32 query heads over 8 KV heads of 128, FFN 12288, vocabulary 151936
    assert cols[0]["shape"] == {"hidden": 4096, "layers": 36, "heads": 32, "kv_heads": 8, "head_dim": 128, "q_ratio": 1, "inter": 12288, "vocab": 151936}
    assert cols[0]["total_params"] == r["baseline"]["total_params"]
    # the baseline's best deployment at the SLO is the one design priced it at, and each design's is its ranked row's
    assert cols[0]["at_slo"]["objective"] == pytest.approx(r["baseline"]["objective"], rel=1e-9)
    assert cols[0]["at_slo"]["deployment"] == r["baseline"]["deployment"] and cols[0]["gain_pct"] is None
    for c, d in zip(cols[1:], r["designs"], strict=True):
        assert c["shape"] == d["shape"] | {"vocab": 151936} and c["total_params"] == d["total_params"]
        assert c["at_slo"]["objective"] == pytest.approx(d["objective"], rel=1e-9) and c["at_slo"]["deployment"] == d["deployment"]
        assert c["gain_pct"] == pytest.approx(d["gain_pct"], rel=1e-9)
        q = d["quality"]
        assert c["quality"]["delta_band_pct"] == pytest.approx([q["delta_pct"] - q["sigma_delta_pct"], q["delta_pct"] + q["sigma_delta_pct"]])
        # the full findings behind the row's counts
        assert sum(f["severity"] == "warning" for f in c["lint"]) == d["lint"]["warnings"]
        assert sum(f["severity"] == "error" for f in c["lint"]) == d["lint"]["errors"]
        assert (c["lint"][0]["message"] if c["lint"] else None) == d["lint"]["top"]
    assert s["objective"] == "output_tok_s_per_gpu" and s["constraint"] == {"min_tps_user": 20.0} and s["isl_osl"] == [1024, 1024]
    for c in cols:
        at = c["at_slo"]
        assert at["output_tok_s_per_gpu"] == at["objective"] and at["tok_s_per_user"] >= 20.0  # throughput at the floor
        assert at["ttft_ms"] > 0 and at["tpot_ms"] == pytest.approx(1e3 / at["tok_s_per_user"], rel=1e-9)
        for k, b in at["intervals"].items():
            assert b["lo95"] <= b["lo80"] < at[k] < b["hi80"] <= b["hi95"]
        # its frontier (pareto's search at the design's precision), every point banded, and the best deployment under it
        assert c["frontier"] and all(p["intervals"]["output_tok_s_per_gpu"]["lo80"] < p["output_tok_s_per_gpu"]
                                     < p["intervals"]["output_tok_s_per_gpu"]["hi80"] for p in c["frontier"])
        assert any(p["tok_s_per_user"] >= at["tok_s_per_user"] * (1 - 1e-9) and p["output_tok_s_per_gpu"] >= at["objective"] * (1 - 1e-9)
                   for p in c["frontier"])


def test_without_a_baseline_the_reference_is_priced_and_the_gains_are_against_it():
    r = lc.design(8e9, "h200", num_gpus=1, max_candidates=40, top=3)
    cols = r["side_by_side"]["columns"]
    assert cols[0]["role"] == "reference" and cols[0]["name"] == r["reference"]["name"] == "llama-3.1-8b" and r["baseline"] is None
    assert cols[0]["quality"]["loss"] == r["reference"]["quality_proxy"] and cols[0]["quality"]["delta_pct"] == 0.0
    ref = cols[0]["at_slo"]["objective"]
    assert [c["gain_pct"] for c in cols[1:]] == pytest.approx([100 * (d["objective"] / ref - 1) for d in r["designs"]], rel=1e-9)
    # the ranked rows' gains are the same, over the reference priced at the same SLO (they showed none)
    assert r["reference"]["objective"] == pytest.approx(ref, rel=1e-12)
    assert [d["gain_pct"] for d in r["designs"]] == pytest.approx([c["gain_pct"] for c in cols[1:]], rel=1e-9)


def test_the_report_shows_the_jsons_figures(run):
    r, page = run
    cols = r["side_by_side"]["columns"]
    t = _tables(page)
    rows = {row[0]: row[1:] for row in t["side-by-side"] if len(row) > 1}
    assert t["side-by-side"][0] == ["", "qwen3-8b (baseline)", "design 1", "design 2", "design 3"]
    assert rows["layers"] == [f"{c['shape']['layers']:,}" for c in cols] and rows["layers"][0] == "36"
    assert rows["KV heads"] == [str(c["shape"]["kv_heads"]) for c in cols] and rows["vocabulary"] == ["151,936"] * 4
    gain = rows["gain over the reference (its own 80% band)"]
    assert gain[0] == "-" and all(cell.startswith(f"{c['gain_pct']:+.1f}% (") for cell, c in zip(gain[1:], cols[1:], strict=True))
    for cell, c in zip(gain[1:], cols[1:], strict=True):  # the gain's own band, and whether the gain is beyond it
        b = c["gain_band"]
        assert f"({b['gain_lo80']:+.1f}% to {b['gain_hi80']:+.1f}%: " in cell
        assert ("within model error" in cell) == (b["gain_lo80"] <= 0 <= b["gain_hi80"])
    obj = rows["tok/s/GPU at the SLO (the objective)"]
    for cell, c in zip(obj, cols, strict=True):
        b = c["at_slo"]["intervals"]["output_tok_s_per_gpu"]
        assert cell == f"{c['at_slo']['objective']:,.0f} (80%: {b['lo80']:,.0f}-{b['hi80']:,.0f})"
    q = cols[1]["quality"]
    label = "loss against the reference ± sigma_delta (the equal-quality test's band)"
    # since fixE design 1 (query heads changed, KV heads kept) differs only in active parameters and flat axes: no test band
    assert rows[label][1] == (f"{q['delta_pct']:+.2f}% ± n/a ({q['test_band_na']})" if q.get("test_band_na") else
                              f"{q['delta_pct']:+.2f}% ± {q['sigma_delta_pct']:.2f}% ({q['delta_band_pct'][0]:+.2f}% to {q['delta_band_pct'][1]:+.2f}%)")
    assert rows[label][0] == "0 (the reference)"
    # every finding of every shape, with its predicted cost
    assert [row[:5] for row in t["lint-findings"][1:]] == [
        ["qwen3-8b (baseline)" if c["role"] == "baseline" else c["name"], f"{f['rule']} {f['rule_name']}", f["severity"], f["where"],
         f"{f['cost_pct']:.1f}"] for c in cols for f in c["lint"]]
    # the plot's data: each column's frontier and its ringed best deployment, the SLO's floor on the tok/s/user axis
    data = json.loads(page.split('id="frontier-data">')[1].split("</script>")[0])
    assert [len(x["frontier"]) for x in data["results"]] == [len(c["frontier"]) for c in cols]
    assert data["results"][1]["at"]["output_tok_s_per_gpu"] == cols[1]["at_slo"]["objective"]
    assert data["floor"] == {"axis": "x", "value": 20.0, "label": "the SLO's floor: 20 tok/s/user"}


def test_names_in_the_report_are_escaped(run):
    r = copy.deepcopy(run[0])
    bad = "<img src=x onerror=alert(1)>"
    r["side_by_side"]["columns"][0]["name"] = r["reference"]["name"] = bad
    page = design_html(r)
    assert bad not in page and "&lt;img src=x onerror=alert(1)&gt; (baseline)" in page


@pytest.mark.parametrize("name,why", [("out.txt", "an .html path"), ("folder.html", "a file path, not a folder")])
def test_a_bad_report_path_is_one_line_before_the_search(tmp_path, name, why):
    (tmp_path / "folder.html").mkdir()
    code, out, err = cli(*ARGS, "--report", str(tmp_path / name))
    assert code == 2 and err == f"error: report: '{tmp_path / name}' is not valid; {why}\n", err
    assert out == "" and [x.name for x in tmp_path.iterdir()] == ["folder.html"]  # nothing written


def test_design_and_estimate_band_ttft_on_the_same_arrival(monkeypatch):
    # at_best's search prices TTFT at the default arrival (waves), so the side-by-side's TTFT band is drawn as estimate's is
    # for that deployment: the same Context (arrival "waves", not the unsaid ""), hence the same band
    from llm_codesign.cost.calibration import calibration_for
    from llm_codesign.explore.design import Slo
    from llm_codesign.explore.design_report import _at_slo
    from llm_codesign.measure import intervals
    from llm_codesign.spec.engines import get_engine
    from llm_codesign.spec.hardware import get_gpu
    from llm_codesign.spec.harness import DEFAULT_ARRIVAL
    from llm_codesign.spec.plan import Workload
    from llm_codesign.spec.precision import Precision
    from llm_codesign.spec.registry import get_model

    seen, real = [], intervals.bands
    monkeypatch.setattr(intervals, "bands", lambda values, ctx, **kw: seen.append(ctx) or real(values, ctx, **kw))
    m, gpu, prec, engine, slo = get_model("qwen3-8b"), get_gpu("h200"), Precision.of("bf16"), get_engine("trtllm"), Slo()
    table = intervals.table_for(None, gpu=gpu)
    at = _at_slo(m, gpu, calibration_for(gpu), prec, num_gpus=1, slo=slo, moe=False, engine=engine, table=table)
    isl, osl = slo.lengths()
    c = at["deployment"]["concurrency_per_instance"]
    assert Workload(isl=isl, osl=osl, concurrency=c).arrival == DEFAULT_ARRIVAL == "waves" and seen[0].arrival == "waves"
    # estimate's Context for the same deployment and workload (api.estimate)
    ctx = intervals.context(m, gpu, prec, engine="trtllm", concurrency=c, isl=isl, osl=osl, spec=False, arrival=DEFAULT_ARRIVAL)
    # (as the rows share it: intervals.banded_rows looks up the grouped Context, its concurrency dropped where no band moves)
    assert seen[0] == intervals.grouped(ctx, table=table) and seen[0].concurrency is None
    band = real({"ttft_ms": at["ttft_ms"]}, ctx, table=table)["ttft_ms"]
    assert {k: float(band[k]) for k in ("lo80", "hi80", "lo95", "hi95")} == pytest.approx(
        {k: at["intervals"]["ttft_ms"][k] for k in ("lo80", "hi80", "lo95", "hi95")}, rel=1e-12)


def test_the_report_says_designs_search_lines(run):
    # branch uxleft: the page lacked two lines design's CLI prints beneath its table, where the rows sit against the
    # budget with design 1's gain at equal parameters (params_line) and what the FFN-ratio pass priced (ffn_pass_line);
    # the page's list holds exactly those lines of the same result (designG: and the quality lines, the --quality-sigmas
    # window and the resolved rows, this 8B search's 1.314 and 5 of 56 against qwen3-8b)
    from llm_codesign.render.design_lines import ffn_pass_line, params_line, quality_rule_line, resolved_line

    r, page = run
    items = page.split('<ul id="search" class="hint">')[1].split("</ul>")[0].removeprefix("<li>").removesuffix("</li>").split("</li><li>")
    want = [params_line(r, "tok/s/GPU"), ffn_pass_line(r["grid"]["ffn_pass"]), quality_rule_line(r), resolved_line(r)]
    assert items == [html.escape(x) for x in want] and all(want)
    assert want[2].endswith("needs 1.314") and want[3].startswith("quality resolved (err ± <= |loss| + ±test) for 5 of 56 priced")
    eq = r["designs"][0]["gain_equal_params_pct"]
    # the equal-params gain is design 1's tok/s/GPU scaled by its parameters over the baseline's (as if weights set the speed)
    d, b = r["designs"][0], r["baseline"]
    assert eq == pytest.approx(100 * (d["objective"] * d["total_params"] / b["total_params"] / b["objective"] - 1), abs=0.05)
    assert f"design 1 at equal params tok/s/GPU {eq:+.1f}%" in want[0]
    assert want[1].startswith("FFN ratio: the envelope's window ")


def test_frontier_points_in_the_report_carry_predictability(run):
    # every frontier point and best deployment of the side-by-side carries span95 = hi95 / lo95 and predictable (x20), as
    # estimate's answers do (newc5 #17; branch uxleft: _BOUNDS dropped them)
    r, _ = run
    for c in r["side_by_side"]["columns"]:
        for b in [b for p in c["frontier"] for b in p["intervals"].values()] + list(c["at_slo"]["intervals"].values()):
            assert b["span95"] == pytest.approx(b["hi95"] / b["lo95"], rel=1e-9) and b["predictable"] is (b["span95"] <= 20)
