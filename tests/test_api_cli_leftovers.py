"""The page and its JSON API carry what the CLI says (branch uxpage, a newcomer review's leftovers): the "?" marks and the
notes beneath the frontier's and design's tables, SGLang's fitted per-request cost, the offline knee, design's rank_all
and resolved count, disagg's piecewise decode graphs, pareto's search-size check, and the advice for a GPU the catalog
lacks in what the server takes. app.js's functions run in node against the CLI's own text."""
import json
import re
from importlib import resources

import pytest
from conftest import cli

pytest.importorskip("fastapi")
pytest.importorskip("httpx")

from fastapi.testclient import TestClient  # noqa: E402

from llm_codesign.web.app import create_app  # noqa: E402


@pytest.fixture(scope="module")
def client():
    return TestClient(create_app())


def _js(segments: list[tuple[str, str]], script: str):
    """app.js's text between each (start, end) pair (with its `fix`) run in node, then `script`; what it logs, as JSON."""
    import shutil
    import subprocess

    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    js = resources.files("llm_codesign").joinpath("web/static/app.js").read_text()
    fix = re.search(r"^function fix\(.*$", js, re.M)[0]
    body = "\n".join(js[js.index(a):js.index(b)] for a, b in segments)
    stub = "const el = (t, text, cls) => ({text, cls}); const table = (id, heads, rows) => ({id, rows});\n"
    # on standard input: a design's answer is past the argument list's limit
    out = subprocess.run([node, "-"], input=f"{fix}\n{stub}{body}\n{script}", capture_output=True, text=True, timeout=60,
                         check=True).stdout
    return json.loads(out)


HELPERS = ("function eagerRows(", "function frontierTable(")
DESIGN = ("function designView(", "// The top designs beside the reference")


def _band(span, ok):
    return {"lo80": 1, "hi80": 2, "lo95": 1, "hi95": span, "span95": span, "predictable": ok}


def test_the_frontiers_note_is_paretos_footnote():
    """unpredictableFootnote is render.intervals.unpredictable_footnote: TTFT at 2 of 3 points, spans x25.4 and x40.2 read
    "x25-x40"; TPOT at 1 of 3, x30.4 alone; the page's tail names the JSON it downloads, the CLI's --json."""
    from llm_codesign.render.intervals import unpredictable_footnote

    ok = _band(2.0, True)
    bands = [{"ttft_ms": _band(25.4, False), "tpot_ms": ok}, {"ttft_ms": _band(40.2, False), "tpot_ms": _band(30.4, False)},
             {"ttft_ms": ok, "tpot_ms": ok}]
    metrics = ["tok_s_per_user", "output_tok_s_per_gpu", "ttft_ms", "tpot_ms"]
    got = _js([HELPERS], f"console.log(JSON.stringify([unpredictableFootnote({json.dumps(bands)}, {json.dumps(metrics)}), "
                         "unpredictableFootnote([null], ['ttft_ms'])]))")
    want = ("?: not predictable here: its 95% interval spans more than x20 (TTFT at 2 of 3 points shown, x25-x40; TPOT at 1 of 3 "
            "points shown, x30); span95 and predictable of each in the JSON")
    assert got == [want, ""]
    assert unpredictable_footnote(bands, metrics) == want.replace("in the JSON", "in --json")


def test_the_pages_span_is_span_text():
    """spanText is render.intervals.span_text: a span over x20 never reads "x20" (newc12 #12)."""
    from llm_codesign.render.intervals import span_text

    xs = [3.74, 9.96, 19.6, 20.46, 20.04, 20.0004, 21.5, 120.4]
    assert _js([HELPERS], f"console.log(JSON.stringify({json.dumps(xs)}.map(spanText)))") == [span_text(x) for x in xs]


def test_the_offline_knee_and_the_request_cost_read_as_estimates_rows(client):
    """Offline llama-3.1-8b on one H100: batch 198, the smallest within 3% of the most tok/s/GPU (225, the largest batch, the
    KV cache's, as the "largest batch" row says it: newc9 #1 had the grid's 212 here); on SGLang at one request 25 ms of its 59 ms TTFT is the fitted per-request cost. The page's
    rows (kneeText, costRows) are the CLI's, and the API's answer carries both fields as --json does."""
    e = client.post("/api/estimate", json={"model": "llama-3.1-8b", "gpu": "h100", "num_gpus": 1}).json()
    knee = _js([HELPERS], f"console.log(JSON.stringify(kneeText({json.dumps(e)})))")
    assert knee == ("batch 198 (the largest batch is 225; 225 gives +3% at 1.1x the TPOT; the smallest batch within 3% "
                    "of the most tok/s/GPU)")
    code, out, err = cli("estimate", "llama-3.1-8b", "--gpu", "h100")
    assert code == 0, err
    assert f"│ concurrency │ {knee} │" in " ".join(out.split())
    largest = _js([HELPERS], f"console.log(JSON.stringify(largestBatchText({json.dumps(e)})))")
    assert largest == e["max_batch_text"] == "225, by the KV cache" and f"│ largest batch │ {largest} │" in " ".join(out.split())
    # past the step budget the page's row is the CLI's too: the budget's words and what the rest do
    body = {"model": "llama-2-70b", "gpu": "h200", "num_gpus": 8, "weight_dtype": "fp8", "kv_dtype": "fp8", "isl": 700, "osl": 300,
            "concurrency": 3000}
    b = client.post("/api/estimate", json=body).json()
    largest = _js([HELPERS], f"console.log(JSON.stringify(largestBatchText({json.dumps(b)})))")
    assert largest == b["max_batch_text"] + "; the rest wait for whole requests to finish (longer TTFT)"
    assert b["max_batch_by"] == "step budget" and largest.startswith("2,451, by the step budget")
    body = {"model": "llama-3.1-8b", "gpu": "h100", "num_gpus": 1, "concurrency": 1, "engine": "sglang"}
    s = client.post("/api/estimate", json=body).json()
    rows = _js([HELPERS], f"console.log(JSON.stringify(costRows({json.dumps(s)})))")
    assert rows[0][1].startswith("25 ms of TTFT (42%) is SGLang's fitted per-request cost (ttft_overhead_s, 24.9 ms a request")
    code, out, err = cli("estimate", "llama-3.1-8b", "--gpu", "h100", "--concurrency", "1", "--backend", "sglang")
    assert code == 0, err
    assert f"│ fitted request cost │ {rows[0][1]} │" in " ".join(out.split())
    code, out, _ = cli("estimate", "llama-3.1-8b", "--gpu", "h100", "--concurrency", "1", "--backend", "sglang", "--json")
    assert json.loads(out)["request_cost_note"] == s["request_cost_note"]
    assert _js([HELPERS], f"console.log(JSON.stringify(costRows({json.dumps(e)})))") == []  # TensorRT-LLM: no fitted cost
    props = client.get("/openapi.json").json()["components"]["schemas"]["Estimate"]["properties"]
    assert {"request_cost_note", "offline_knee"} <= set(props)


def test_design_ranks_as_the_cli_and_the_page_says_its_marks(client):
    """An 8B dense design on 8 H200 (300 shapes): 8 of 111 priced shapes' quality resolved (19 of 89 before fixE read the KV
    heads at the reference's query heads; resolved.beats_reference is over every resolved row, not the rows shown). By default the resolved rows
    rank first; rank_all (--rank-all) ranks by the objective alone, unresolved rows among them. The page's table marks
    those "?" and the lines beneath are the CLI's."""
    body = {"params": 8e9, "gpu": "h200", "num_gpus": 8, "max_candidates": 300, "top": 10}
    first = client.post("/api/design", json=body).json()
    every = client.post("/api/design", json={**body, "rank_all": True}).json()
    # over every priced shape, the same for both rankings; the rows shown among them differ (designG: rank_all's ten, none)
    shown = ("rows", "best_resolved_row")
    assert {k: v for k, v in first["resolved"].items() if k not in shown} == {k: v for k, v in every["resolved"].items() if k not in shown}
    assert (first["resolved"]["shapes"], first["resolved"]["of"]) == (8, 111) and every["resolved"]["rows"] == []
    assert first["resolved"]["rows"] == [i + 1 for i, d in enumerate(first["designs"]) if d["quality"]["resolved"]]
    res = [d["quality"]["resolved"] for d in first["designs"]]
    assert res == sorted(res, reverse=True)  # no resolved row after an unresolved one
    obj = [d["objective"] for d in every["designs"]]
    assert obj == sorted(obj, reverse=True) and not all(d["quality"]["resolved"] for d in every["designs"])
    # rank_all's rows are at least as fast (its first is an unresolved row since fixE: the fastest resolved is slower)
    assert obj[0] >= first["designs"][0]["objective"] and obj[1] > first["designs"][1]["objective"]
    got = _js([HELPERS, DESIGN], f"const v = designView({json.dumps(every)}, true); "
                                 "console.log(JSON.stringify({rows: v.find((x) => x.id === 'design-table').rows, "
                                 "notes: v.filter((x) => x.cls === 'hint design-note').map((x) => x.text)}))")
    marked = [r[5].endswith(" ?") for r in got["rows"]]
    assert marked == [not d["quality"]["resolved"] for d in every["designs"]]
    code, out, err = cli("design", "--params", "8e9", "--gpu", "h200", "--gpus", "8", "--max-candidates", "300", "--top", "10", "--rank-all")
    assert code == 0, err
    text = " ".join(out.split())
    line = got["notes"][-1]
    assert line == every["resolved_line"] and line in text and got["notes"][-2] == every["quality_line"] in text
    assert line.startswith("quality resolved (err ± <= |loss| + ±test) for 8 of 111 priced shapes: the best of them ")
    assert "on none of the rows above: design 1 without --rank-all; the best shape whose quality it cannot resolve" in line
    assert got["notes"][0].startswith("?: quality not resolved") and "ranked after" not in got["notes"][0]
    bad = client.post("/api/design", json={**body, "rank_all": "yes"})
    assert bad.status_code == 422 and bad.json()["field"] == "rank_all"
    assert "rank_all" in client.get("/openapi.json").json()["components"]["schemas"]["DesignRequest"]["properties"]


def test_disagg_takes_piecewise_decode_graphs(client):
    """decode_piecewise_graphs, disagg's --decode-O 1: the TP8 vLLM decode pool at one request, 2.2826 -> 2.9017 ms TPOT
    (tests/test_piecewise_gaps.py: 64 x 35 us + sqrt(64 x 65) x 2 us x 1.4236 + 33 x 5 us of host over 1.9696 ms of kernels);
    on another engine a 422 naming the request's keyword."""
    body = {"model": "llama-3.1-8b", "gpu": "h100", "prefill": "tp=1", "decode": "tp=8", "concurrency": [1], "engine": "vllm"}
    full = client.post("/api/disagg", json=body).json()["rows"][0]["tpot_ms"]
    pw = client.post("/api/disagg", json={**body, "decode_piecewise_graphs": True}).json()
    assert (full, pw["rows"][0]["tpot_ms"]) == (pytest.approx(2.2826, abs=1e-4), pytest.approx(2.9017, abs=1e-4))
    assert any(n.startswith("Piecewise CUDA graphs: ") for n in pw["notes"])
    code, out, _ = cli("disagg", "llama-3.1-8b", "--gpu", "h100", "--prefill", "tp=1", "--decode", "tp=8", "--concurrency", "1",
                       "--backend", "vllm", "--decode-O", "1", "--json")
    assert code == 0 and json.loads(out)["rows"][0]["tpot_ms"] == pw["rows"][0]["tpot_ms"]
    for change in ({"engine": "sglang"}, {"decode_cuda_graph_max_bs": 0}, {"decode_piecewise_graphs": "yes"}):
        r = client.post("/api/disagg", json={**body, "decode_piecewise_graphs": True, **change})
        assert r.status_code == 422 and r.json()["field"] == "decode_piecewise_graphs", (change, r.json())
        assert "Traceback" not in r.text and len(r.json()["error"].splitlines()) == 1


def test_a_gpu_range_past_the_clis_search_bound_is_refused_in_one_line(client, monkeypatch):
    """/api/pareto applies pareto's bound on the plans a search visits: 8-16 GPUs with TP, PP, attention DP, KV-parallel and
    EP free visit sum d(n)^5 over n = 8..16 = 4^5 + 3^5 + 4^5 + 2^5 + 6^5 + 2^5 + 4^5 + 4^5 + 5^5 = 15,304 plans: refused
    under a bound of 15,303, searched at 15,304 and with TP fixed (sum d(n)^4 = 3,058)."""
    import llm_codesign.explore.search as search

    assert search.search_visits(range(1, 73), 72, 5)[0] == 1_048_466 < search.MAX_SEARCH_VISITS  # the page's largest range, 1-72
    body = {"model": "llama-3.1-8b", "gpus": ["h200"], "num_gpus": "8-16"}
    monkeypatch.setattr(search, "MAX_SEARCH_VISITS", 15_303)
    r = client.post("/api/pareto", json=body)
    assert (r.status_code, r.json()) == (422, {"error": "num_gpus: '8-16' is not valid; a search of at most 15,303 plan candidates "
                                                        "(9 instance sizes with 5 free parallel sizes exceed it): narrow the range "
                                                        "(e.g. 8-72) or fix tp, pp or ep", "field": "num_gpus"})
    assert client.post("/api/pareto", json={**body, "tp": 8}).status_code == 200
    monkeypatch.setattr(search, "MAX_SEARCH_VISITS", 15_304)
    assert client.post("/api/pareto", json=body).status_code == 200


def test_the_advice_for_a_gpu_the_catalog_lacks_is_what_the_server_takes(client):
    """H100 PCIe (2.0 vs 3.35 TB/s) and RTX 6000 Ada (48 vs 96 GB) are refused with the CLI's figures, and instead of the
    GPU .toml the server refuses, the what-if GPU that prices them, which the server then takes: RTX 6000 Ada's memory
    48 GB x 102.64 / 96 (the base's driver/headline ratio) = 51.32 GB as the driver reports it, 48 GB headline."""
    from llm_codesign.web.app import WhatIfGpu, _what_if

    for gpu, want in (("h100-pcie", {"base": "h100", "id": "h100-pcie", "hbm_tb_s": 2.0}),
                      ("rtx6000", {"base": "rtx-pro-6000", "id": "rtx6000", "memory_gb": 51.32, "hbm_tb_s": 0.96})):
        for path, body in (("/api/estimate", {"gpu": gpu}), ("/api/pareto", {"gpus": [gpu]})):
            r = client.post(path, json={"model": "llama-3.1-8b", **body})
            line = r.json()["error"]
            assert r.status_code == 422 and "give its path" not in line and "is not in it: it differs from" in line
            assert f'"what_if": {json.dumps(want)}' in line and line.endswith("or price it with the CLI and a GPU .toml "
                                                                              "(docs/howto/compare-gpus.md#a-gpu-that-is-not-in-the-catalog)")
        ok = client.post("/api/estimate", json={"model": "llama-3.1-8b", "gpu": gpu, "num_gpus": 1, "concurrency": 1, "what_if": want})
        assert ok.status_code == 200 and ok.json()["gpu"] == gpu
    assert _what_if(WhatIfGpu(base="rtx-pro-6000", id="rtx6000", memory_gb=51.32)).hbm_bytes == pytest.approx(48e9, rel=1e-4)
    for gpu in ("h100x", "my.toml"):  # neither names a path the server would refuse
        line = client.post("/api/estimate", json={"model": "llama-3.1-8b", "gpu": gpu}).json()["error"]
        assert "path to a GPU .toml" not in line and line.endswith("a GPU of one's own is a what-if GPU (`what_if`, the page's What-if GPU)")


def test_the_clis_search_size_line_is_unchanged_by_the_move():
    """pareto --gpus 8-4096: 4,089 instance sizes, refused by explore.search.check_search_size in the CLI's words."""
    code, out, err = cli("pareto", "llama-3.1-8b", "--gpu", "h200", "--gpus", "8-4096")
    assert code == 2 and err.strip() == ("error: gpus: '8-4096' is not valid; a search of at most 4,000,000 plan candidates (4,089 "
                                         "instance sizes with 5 free parallel sizes exceed it): narrow the range (e.g. 8-72) or fix "
                                         "--tp/--pp/--ep")


def test_a_row_without_a_test_band_reads_na_on_the_cli_the_page_and_the_report(client):
    """newc9 #12: 8B dense on 8 MI300X, the reference llama-3.1-8b (h4096 L32 ffn14336). h4096 L28 ffn18432 (L24 ffn22528 before
    fixE) differs from it in active parameters (the scaling law's term, which the test takes as exact: no spread) and in depth
    alone, and its aspect ratios 4096 / 28 = 146.3 and 4096 / 32 = 128 both lie in the proxy's flat band 100 / 2 .. 100 x 2 = 50..200
    (quality.toml [shape]): its test band is nil, and the row read "-0.29±0.00", better than the reference, exactly, with a
    model error of ±0.28%. Now "±n/a" and why, in the CLI's table and legend, the JSON, the page's table and design.html."""
    from llm_codesign.explore.design import nil_band_why
    from llm_codesign.render.design_report import _quality_rows

    args = ("design", "--params", "8e9", "--gpu", "mi300x")
    code, out, err = cli(*args, "--json")
    assert code == 0, err
    r = json.loads(out)
    rows = {(d["shape"]["hidden"], d["shape"]["layers"], d["shape"].get("inter")): d["quality"] for d in r["designs"]}
    q = rows[(4096, 28, 18432)]
    assert q["sigma_delta_pct"] == 0.0 and q["test_band_na"] == "depth not in the proxy" and q["uncertainty_pct"] > 0.1
    assert [t["term"] for t in q["terms"]] == ["params"] and [f["term"] for f in q["flat"]] == ["aspect"]
    # every row: n/a exactly where the band prints 0.00 and the row differs from the reference (whose own shape keeps 0.00)
    for d in r["designs"]:
        qq = d["quality"]
        differs = bool(qq["terms"] or qq["flat"])
        assert (qq["test_band_na"] is not None) == (round(qq["sigma_delta_pct"], 2) == 0 and differs), d["shape"]
    assert (4096, 32, 14336) not in rows or rows[(4096, 32, 14336)]["test_band_na"] is None  # the reference's own shape
    code, text, err = cli(*args)
    assert code == 0, err
    said = " ".join(text.split())
    assert "-0.23±n/a ~" in said and not re.search(r"[+-]0\.\d\d±0\.00 ", said.replace("+0.00±0.00", ""))
    # three reasons since fixE (row 5 differs in active parameters alone, rows 9-10 in head size too), sorted; rows 9-10's
    # query width is llama-3.1-8b's, 1, and since designQ the proxy reads the width, not the head count: no "query heads"
    assert ("±n/a: no test band (active parameters alone; depth and head size not in the proxy; depth not in the "
            "proxy): the row differs "
            "from the reference only in active parameters, a term "
            "the test takes as exact, or on axes the proxy is flat on; err ± is its band.") in said
    got = _js([HELPERS, DESIGN], f"const v = designView({json.dumps(r)}, false); "
                                 "console.log(JSON.stringify({rows: v.find((x) => x.id === 'design-table').rows, "
                                 "notes: v.filter((x) => x.cls === 'hint design-note').map((x) => x.text)}))")
    cells = [row[4] for row in got["rows"]]
    assert cells == [f"{d['quality']['delta_pct']:+.2f}±" + ("n/a" if d["quality"]["test_band_na"] else f"{d['quality']['sigma_delta_pct']:.2f}")
                     + (" ~" if d["quality"]["flat"] else "") for d in r["designs"]]
    assert "-0.23±n/a ~" in cells and any(n.startswith("±n/a: no test band (active parameters alone; depth and head size not in the proxy; depth")
                                        for n in got["notes"])
    # design.html's side-by-side cell for such a design, and a row with a band as before
    col = {"role": "design", "quality": {**q, "delta_band_pct": [q["delta_pct"], q["delta_pct"]]}}
    assert _quality_rows([col])[1][1] == [f"{q['delta_pct']:+.2f}% ± n/a (depth not in the proxy)"]
    banded = {"role": "design", "quality": {**q, "sigma_delta_pct": 0.23, "test_band_na": None, "delta_band_pct": [-0.52, -0.06]}}
    assert _quality_rows([banded])[1][1] == [f"{q['delta_pct']:+.2f}% ± 0.23% (-0.52% to -0.06%)"]
    # the rule by itself: a band that prints, or the reference's own shape, is no n/a; head size flat too is said too
    # h8192 L80 ffn30720 against llama-3.1-70b's ffn28672 (design/dense70b in tools/answer_snapshot.py): parameters alone
    assert nil_band_why(0.004, [{"term": "params"}], []) == "active parameters alone"
    assert nil_band_why(0.006, [{"term": "params"}], [{"term": "aspect"}]) is None and nil_band_why(0.0, [], []) is None
    assert nil_band_why(0.0, [], [{"term": "aspect"}, {"term": "head_dim"}]) == "depth and head size not in the proxy"
