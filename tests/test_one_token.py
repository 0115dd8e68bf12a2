"""One output token (OSL 1): it comes from the prefill and no decode step runs, so every answer says TPOT and tok/s/user
are undefined (serve.metrics.without_decode): null in JSON and the API's to_dict, blank in CSV, a dash or "n/a" in the
tables; their intervals, the eager-decode note and the operators' TPOT shares left out; what needs a tok/s/user (a
frontier, an SLO on it, compare's chart) refused. The figures that do exist are checked by hand: a request is done at
its first token, so by Little's law C requests in flight deliver C / TTFT output tokens a second over the GPUs."""
import json
import re
from dataclasses import replace

import pytest
from conftest import cli

import llm_codesign as lc
from llm_codesign.errors import InputError
from llm_codesign.serve.metrics import without_decode

M = lc.get_model("llama-3.1-8b")


def _est(osl, conc=1, graphs=None):
    dep = lc.deployment(M, gpu="h100", num_gpus=1, engine="trtllm")
    if graphs is not None:
        from dataclasses import replace

        dep = replace(dep, cuda_graph_max_bs=graphs)
    return lc.estimate(M, dep, lc.Workload(isl=1024, osl=osl, concurrency=conc), breakdown=True)


def test_without_decode_on_a_hand_made_row():
    row = {"ttft_ms": 40.0, "tpot_ms": 7.0, "tok_s_per_user": 142.9, "output_tok_s_per_gpu": 25.0, "eager_decode": {"batch": 1},
           "intervals": {"ttft_ms": {"lo80": 30.0}, "tpot_ms": {"lo80": 6.0}, "tok_s_per_user": {"lo80": 100.0}},
           "breakdown": [{"name": "gemm", "phase": "decode", "time_ms": 1.0, "tpot_ms": 1.0}]}
    assert without_decode(row) == {"ttft_ms": 40.0, "tpot_ms": None, "tok_s_per_user": None, "output_tok_s_per_gpu": 25.0,
                                   "intervals": {"ttft_ms": {"lo80": 30.0}},
                                   "breakdown": [{"name": "gemm", "phase": "decode", "time_ms": 1.0}]}
    assert row["tpot_ms"] == 7.0  # the caller's dict untouched


def test_estimate_at_osl_1_has_no_tpot_and_its_rate_is_one_token_per_ttft():
    d = _est(1).to_dict()
    assert d["tpot_ms"] is None and d["tok_s_per_user"] is None
    assert set(d["intervals"]) == {"ttft_ms", "output_tok_s_per_gpu"}
    assert all("tpot_ms" not in o for o in d["breakdown"])
    # one request, done at its first token: 1 / TTFT tokens a second on one GPU; input+output 1,025 tokens a request
    assert d["output_tok_s_per_gpu"] == pytest.approx(1e3 / d["ttft_ms"], rel=1e-9)
    assert d["io_tok_s_per_gpu"] == pytest.approx(1025 * 1e3 / d["ttft_ms"], rel=1e-9)
    # the flat row: blank (None) metrics, no interval columns for them
    row = _est(1).to_pandas().iloc[0].to_dict()
    assert row["tpot_ms"] is None and "tpot_ms_lo80" not in row and "ttft_ms_lo80" in row
    # OSL 2 decodes one step: both defined, TPOT's interval given
    d2 = _est(2).to_dict()
    assert d2["tpot_ms"] > 0 and d2["tok_s_per_user"] == pytest.approx(1e3 / d2["tpot_ms"], rel=1e-9) and "tpot_ms" in d2["intervals"]


def test_no_eager_note_where_nothing_decodes():
    # graphs off (--cuda-graph-max-bs 0): at OSL 2 the decode step runs eagerly and says so; at OSL 1 there is no decode step
    assert _est(2, graphs=0).eager_decode is not None and "eager_decode" in _est(2, graphs=0).to_dict()
    assert "eager_decode" not in _est(1, graphs=0).to_dict()


def test_estimates_json_and_table_at_osl_1():
    code, out, err = cli("estimate", "llama-3.1-8b", "--gpu", "h100", "--osl", "1", "--concurrency", "8", "--json")
    assert code == 0, err
    d = json.loads(out)
    assert d["tpot_ms"] is None and d["tok_s_per_user"] is None and "NaN" not in out
    code, out, err = cli("estimate", "llama-3.1-8b", "--gpu", "h100", "--osl", "1", "--concurrency", "8")
    text = " ".join(out.split())
    assert "│ TPOT │ n/a (one output token) │" in text and "│ tokens/s per user │ n/a (one output token) │" in text
    assert "basis: TPOT" not in text and "basis: tok/s/GPU" in text


def _disagg(osl, graphs=None):
    return lc.disagg(M, "h100", prefill="tp=1", decode="tp=1", workload=lc.Workload(isl=1024, osl=osl), concurrency=[1, 8],
                     decode_cuda_graph_max_bs=graphs).to_dict()


def test_disagg_at_osl_1():
    r = _disagg(1, graphs=0)
    for row in r["rows"]:
        assert row["tpot_ms"] is None and row["tok_s_per_user"] is None and "eager_decode" not in row
        assert set(row["intervals"]) == {"ttft_ms", "output_tok_s_per_gpu"}
        # C requests in flight, each done at its first token, over the 2 GPUs of the two pools
        assert row["output_tok_s_per_gpu"] == pytest.approx(row["concurrency"] / (row["ttft_ms"] / 1e3) / 2, rel=1e-9)
    assert not any(n.startswith("CUDA graphs: ") for n in r["notes"])
    # OSL 2 with graphs off: the decode step runs eagerly, and the note says so
    r2 = _disagg(2, graphs=0)
    assert all(row["tpot_ms"] > 0 for row in r2["rows"]) and any(n.startswith("CUDA graphs: ") for n in r2["notes"])


def test_disaggs_table_shows_a_dash_and_says_why():
    code, out, err = cli("disagg", "llama-3.1-8b", "--gpu", "h100", "--prefill", "tp=1", "--decode", "tp=1", "--osl", "1",
                         "--concurrency", "1,8", "--decode-cuda-graph-max-bs", "0", columns=200)
    assert code == 0, err
    rows = [x.split() for x in out.splitlines() if x.strip()[:1].isdigit() and " yes" in x]
    assert len(rows) == 2 and all(x[6:8] == ["-", "-"] for x in rows), rows  # TPOT, tok/s/user
    text = " ".join(out.split())
    assert "TPOT, tok/s/user: - at OSL 1 (the one output token comes from the prefill: no decode step runs)." in text
    # the TTFT band: an 80% band, or past x20 at 95% "no interval" with the 80% span said (bands, newc6 #4); no TPOT band
    assert "; TPOT 80%" not in text and "CUDA graphs" not in text
    assert re.search(r"1 request: TTFT [\d.]+ ms(; 80%: |; no interval: the runs like it are too few or too spread \(95% spans x)", text)


def test_compare_at_osl_1():
    code, out, err = cli("compare", "llama-3.1-8b", "--gpu", "h100", "--gpus", "1", "--osl", "1", "--json")
    assert code == 0, err
    for row in json.loads(out)["rows"]:
        b = row["best"]
        assert b["tpot_ms"] is None and b["tok_s_per_user"] is None and set(b["intervals"]) == {"ttft_ms", "output_tok_s_per_gpu"}
    code, out, err = cli("compare", "llama-3.1-8b", "--gpu", "h100", "--gpus", "1", "--osl", "1", columns=200)
    assert code == 0, err
    assert "tok/s/user: - at OSL 1 (the one output token comes from the prefill: no decode step runs)." in " ".join(out.split())
    bf16 = next(x for x in out.splitlines() if x.split()[:2] == ["bf16", "ref"])
    assert bf16.split()[3] == "-", bf16  # W, accuracy, tok/s/GPU, tok/s/user
    # an SLO on tok/s/user, and the chart over it, refused in one line each (exit 2)
    code, out, err = cli("compare", "llama-3.1-8b", "--gpu", "h100", "--gpus", "1", "--osl", "1", "--min-tps-user", "50")
    assert code == 2 and err.startswith("error: min_tps_user: 50.0 is not valid; left out at OSL 1") and err.count("\n") == 1
    with pytest.raises(InputError, match="^min_tps_user: 50 is not valid; left out at OSL 1"):
        lc.compare("llama-3.1-8b", "h100", num_gpus=1, workload=lc.Workload(isl=1024, osl=1), min_tps_user=50)


def test_a_frontier_at_osl_1_is_refused():
    code, out, err = cli("pareto", "llama-3.1-8b", "--gpu", "h100", "--gpus", "1", "--osl", "1")
    assert code == 2 and err.startswith("error: osl: 1 is not valid; at least 2 for a frontier") and err.count("\n") == 1
    with pytest.raises(InputError, match="^osl: 1 is not valid; at least 2 for a frontier"):
        lc.pareto("llama-3.1-8b", "h100", num_gpus=1, workload=lc.Workload(isl=1024, osl=1))


def test_export_at_osl_1_says_na():
    code, out, err = cli("export", "llama-3.1-8b", "--gpu", "h100", "--tp", "1", "--osl", "1", "--concurrency", "8",
                         "--engine", "vllm", "-o", "-", columns=300)
    assert code == 0, err
    assert "TPOT n/a (one output token), " in err and '"tpot_ms": null, "tok_s_per_user": null' in out


def test_an_imported_export_at_osl_1_has_no_tpot(tmp_path):
    # lc.import_config of a file export wrote at one output token: its tpot_s is None (no decode step), not a TypeError
    code, _, err = cli("export", "llama-3.1-8b", "--gpu", "h100", "--tp", "1", "--osl", "1", "--concurrency", "8",
                       "--engine", "vllm", "-o", str(tmp_path / "x.yaml"))
    assert code == 0, err
    r = lc.import_config(tmp_path / "x.yaml")
    assert r.tpot_s is None and r.answer["tok_s_per_user"] is None and r.ttft_s > 0


def test_the_pages_endpoints_at_osl_1():
    from fastapi.testclient import TestClient

    from llm_codesign.web.app import create_app

    client = TestClient(create_app())
    e = client.post("/api/estimate", json={"model": "llama-3.1-8b", "gpu": "h100", "num_gpus": 1, "concurrency": 8, "osl": 1})
    assert e.status_code == 200, e.text
    assert e.json()["tpot_ms"] is None and e.json()["tok_s_per_user"] is None
    d = client.post("/api/disagg", json={"model": "llama-3.1-8b", "gpu": "h100", "prefill": "tp=1", "decode": "tp=1",
                                         "concurrency": [1, 8], "osl": 1})
    assert d.status_code == 200, d.text
    assert all(row["tpot_ms"] is None and row["tok_s_per_user"] is None for row in d.json()["rows"])
    p = client.post("/api/pareto", json={"model": "llama-3.1-8b", "gpus": ["h100"], "num_gpus": 1, "osl": 1})
    assert p.status_code == 422 and "at least 2 for a frontier" in p.text


def test_a_mix_of_one_token_requests_has_no_tpot():
    dep = lc.deployment(M, gpu="h100", num_gpus=1, engine="trtllm")
    r = lc.mix(M, dep, isl_dist="fixed:1024", osl_dist="fixed:1", concurrency=8)
    d = r.to_dict()
    assert (d["tpot_ms"], d["tok_s_per_user"], r.tpot_s, r.tok_s_per_user) == (None, None, None, None)
    assert set(d["intervals"]) == {"ttft_ms", "output_tok_s_per_gpu"} and d["per_length"][0]["tpot_ms"] is None
    # lengths of 1 and 2 output tokens: the mix decodes, its OSL-1 length alone has no TPOT
    d = lc.mix(M, dep, isl_dist="fixed:1024", osl_dist="uniform:1,2", concurrency=8).to_dict()
    assert d["tpot_ms"] > 0 and [x["tpot_ms"] is None for x in d["per_length"]] == [True, False]


def test_the_pages_disagg_intervals_at_osl_1_keep_ttft_and_dash_tpot():
    # app.js's disaggIntervals on /api/disagg's rows, run in node (table and el stubbed to return what they are given): at
    # OSL 1 the rows have no TPOT interval; the TTFT ones are still shown, the TPOT cells a dash
    import re
    import shutil
    import subprocess
    from importlib import resources

    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    rows = _disagg(1)["rows"]
    js = resources.files("llm_codesign").joinpath("web/static/app.js").read_text()
    fix = re.search(r"^function fix\(.*$", js, re.M)[0]
    helpers = js[js.index("const CENTRE = "):js.index("function frontierTable(")]
    fn = js[js.index("function disaggIntervals("):js.index("// ---- design")]
    stubs = "function table(id, columns, rows) { return {id, rows}; }\nfunction el(tag, text) { return text; }\n"
    script = f"const rows = {json.dumps(rows)};\nconsole.log(JSON.stringify(disaggIntervals(rows)))"
    out = subprocess.run([node, "-e", f"{fix}\n{stubs}{helpers}\n{fn}\n{script}"], capture_output=True, text=True, timeout=60,
                         check=True).stdout
    shown = json.loads(out)
    assert shown[0]["id"] == "disagg-intervals" and [r[0] for r in shown[0]["rows"]] == [1, 8]
    # TTFT's cell "80% / 95%", or past x20 at 95% "no interval: ..." as disagg prints it (bands); TPOT's a dash
    assert all(r[2] == "-" and (r[1].count(" / ") == 1 or r[1].startswith("no interval: ")) for r in shown[0]["rows"]), shown[0]["rows"]


def test_design_and_sweep_at_osl_1_are_refused():
    # design's regimes all weigh tok/s/user (latency's objective, the others' floor); a sweep's tasks Pareto-reduce on it
    with pytest.raises(InputError, match="^osl: 1 is not valid; at least 2 for design, whose every regime weighs tok/s/user"):
        lc.design(8e9, "h100", osl=1)
    code, out, err = cli("sweep", "--models", "llama-3.1-8b", "--gpu", "h100", "--osl", "1", "--out", "/tmp/dosl1_never.parquet")
    assert code == 2 and err.startswith("error: osl: 1 is not valid; at least 2 for a sweep") and err.count("\n") == 1


def test_export_at_osl_1_picks_its_point_by_ttft_alone():
    # no --concurrency: the interactive default's tok/s/user floor has nothing to hold at OSL 1, its TTFT bound alone
    code, out, err = cli("export", "llama-3.1-8b", "--gpu", "h100", "--gpus", "1", "--osl", "1", "--engine", "vllm", "-o", "-",
                         columns=300)
    assert code == 0, err
    assert "the frontier point with the most tok/s/GPU that meets TTFT <= 2000 ms, the interactive default" in err
    assert "TPOT n/a (one output token), " in err and '"tpot_ms": null, "tok_s_per_user": null' in out
    code, out, err = cli("export", "llama-3.1-8b", "--gpu", "h100", "--gpus", "1", "--osl", "1", "--min-tps-user", "20", "-o", "-")
    assert code == 2 and err.startswith("error: min_tps_user: 20.0 is not valid; left out at OSL 1")


def test_no_eager_widening_at_osl_1():
    # graphs off (--cuda-graph-max-bs 0): at OSL 1 no decode step runs, so no band is widened for eager decode launches
    # (review rev12c #1: TTFT had taken TPOT's x0.71-x1.14 moves)
    m = lc.get_model("llama-3.1-8b")
    dep = replace(lc.deployment(m, gpu="h100", num_gpus=1, tp=1, engine="vllm"), cuda_graph_max_bs=0)
    b = lc.estimate(m, dep, lc.Workload(isl=1024, osl=1, concurrency=8)).intervals["ttft_ms"]
    assert [x.kind for x in b["widened"]] == ["family", "lengths"]  # no "eager": it had taken TPOT's moves
    two = lc.estimate(m, dep, lc.Workload(isl=1024, osl=2, concurrency=8)).intervals["ttft_ms"]
    assert [x.kind for x in two["widened"]] == ["family", "lengths", "eager"]  # a decode step runs eager from OSL 2
