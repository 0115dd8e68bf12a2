"""The arrival pattern on every command that prices a TTFT (newc4 findings 1, 11): compare and pareto take estimate's
--arrival (its choices, its check, its one-line refusal), price each point as estimate prices it at that arrival, and
say it beneath the table; compare says when its rows run different engines; the breakdown's front-end row says that it
grows with the requests arriving together."""
from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from llm_codesign.cli import app


def cli(*args: str):
    r = CliRunner().invoke(app, list(args), env={"COLUMNS": "2000"})
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        raise AssertionError(f"uncaught {type(r.exception).__name__}: {r.exception}") from r.exception
    return r.exit_code, r.stdout, r.stderr


PARETO = ["pareto", "llama-3.1-8b", "--gpu", "mi355x", "--gpus", "1", "--weight-dtype", "fp8", "--kv-dtype", "fp8"]


def _estimate(model: str, gpu: str, d: dict, *extra: str) -> dict:
    code, out, err = cli("estimate", model, "--gpu", gpu, "--gpus", str(d["instance_gpus"]), "--tp", str(d["tp"]), "--pp", str(d["pp"]),
                         "--weight-dtype", d["weight_dtype"], "--kv-dtype", d["kv_dtype"], "--concurrency", str(d["concurrency_per_instance"]),
                         "--max-num-tokens", str(d["max_num_tokens"]), "--cuda-graph-max-bs", str(d["cuda_graph_max_bs"]), "--json", *extra)
    assert code == 0, err
    return json.loads(out)


def test_pareto_prices_each_point_at_the_arrival_asked():
    code, out, err = cli(*PARETO, "--arrival", "closed_loop", "--json")
    assert code == 0, err
    f = json.loads(out)
    assert f["arrival"] == "closed_loop"
    # every point is the deployment estimate prices at that arrival, to the last digit (the one code path)
    for p in (f["frontier"][0], f["frontier"][-1]):
        e = _estimate("llama-3.1-8b", "mi355x", p["deployment"], "--arrival", "closed_loop")
        assert e["ttft_ms"] == pytest.approx(p["ttft_ms"], rel=1e-6) and e["tpot_ms"] == pytest.approx(p["tpot_ms"], rel=1e-6)
    code, out, _ = cli(*PARETO, "--arrival", "closed_loop")
    assert "TTFT with requests arriving in closed loop (one request sent per freed slot" in out.replace("\n", " ")


def test_compare_prices_its_rows_at_the_arrival_and_names_differing_engines():
    args = ["compare", "llama-3.1-8b", "--gpu", "mi355x,b200", "--gpus", "1", "--weight-dtype", "fp8"]
    code, out, err = cli(*args, "--arrival", "closed_loop", "--json")
    assert code == 0, err
    c = json.loads(out)
    assert c["arrival"] == "closed_loop" and [r["engine"] for r in c["rows"]] == ["sglang", "trtllm"]
    for r in c["rows"]:  # each row's best deployment as estimate prices it at that arrival
        e = _estimate("llama-3.1-8b", r["gpu"], r["best"]["deployment"], "--arrival", "closed_loop")
        assert e["ttft_ms"] == pytest.approx(r["best"]["ttft_ms"], rel=1e-6)
    code, out, _ = cli(*args)
    assert ("rows run different engines: sglang on mi355x; trtllm on b200. Their TTFT and TPOT differ by engine as well as by GPU; "
            "SGLang in waves serialises its front end over a wave's requests; --backend prices every GPU on one engine.") in out
    assert "TTFT with requests arriving in waves (" in out
    # one engine on every GPU: no such line
    code, out, _ = cli(*args, "--backend", "sglang")
    assert code == 0 and "rows run different engines" not in out


def test_compare_across_engines_prices_each_rows_deployment_in_a_closed_loop_too():
    """newc7 #14: under waves, SGLang's serialised front end made MI355X's TTFT* read as the GPU's; where the rows' engines
    differ each row carries its own deployment's closed-loop TTFT, estimate's figure at --arrival closed_loop exactly."""
    args = ["compare", "llama-3.1-8b", "--gpu", "mi355x,b200", "--gpus", "1", "--weight-dtype", "fp8"]
    code, out, err = cli(*args, "--json")
    assert code == 0, err
    rows = json.loads(out)["rows"]
    for r in rows:
        e = _estimate("llama-3.1-8b", r["gpu"], r["best"]["deployment"], "--arrival", "closed_loop")
        assert r["best"]["ttft_closed_loop_ms"] == pytest.approx(e["ttft_ms"], rel=1e-6)
    code, out, _ = cli(*args)
    said = " ".join(out.split())
    loop = "; ".join(f"{r['gpu']} fp8 {r['best']['ttft_closed_loop_ms']:,.0f} ms" for r in rows)
    assert f"TTFT in a closed loop (each row's deployment, arrivals staggered): {loop}" in said
    # one "*" footnote for the one TTFT* column, the closed loop its indented second line (crev11, noted)
    assert [x[:2] for x in out.splitlines() if x.lstrip().startswith(("* ", "TTFT in a closed"))] == ["* ", "  "]
    # one engine on every GPU, or a closed loop asked: no second figure (the column is it)
    for more in (["--backend", "sglang"], ["--arrival", "closed_loop"]):
        code, out, _ = cli(*args, *more, "--json")
        assert code == 0 and all("ttft_closed_loop_ms" not in r["best"] for r in json.loads(out)["rows"])


@pytest.mark.parametrize("cmd", [PARETO, ["compare", "llama-3.1-8b", "--gpu", "h100", "--gpus", "1"]])
def test_a_bad_arrival_is_estimates_one_line(cmd):
    code, out, err = cli(*cmd, "--arrival", "poisson")
    assert code == 2 and err.strip() == "error: arrival: 'poisson' is not valid; one of: waves, closed_loop, burst"


def test_pareto_disagg_refuses_another_arrival():
    code, _, err = cli(*PARETO, "--arrival", "closed_loop", "--disagg")
    assert code == 2 and err.strip().startswith("error: arrival: 'closed_loop' is not valid; waves with --disagg")


def test_the_front_end_row_says_it_grows_with_the_wave():
    # SGLang's fitted 24.8903 ms (data/calibration/fitted.toml [default.ttft_overhead_s]) x (64 + 1) / 2 for the 64 requests
    # of a wave = 808.935 ms: "per-request work" read as 24.9 ms (newc4 #11)
    code, out, err = cli("estimate", "deepseek-r1", "--gpu", "mi355x", "--tp", "8", "--concurrency", "64", "--breakdown")
    assert code == 0, err
    assert "808.935" in out
    assert ("first/front_end: the engine's fitted cost per request (ttft_overhead_s) x (q + 1) / 2 for the q requests arriving "
            "together, served one at a time") in " ".join(out.split())


def test_export_prices_its_prediction_at_the_arrival_and_names_it(tmp_path):
    # DeepSeek-R1 TP8 on MI355X at 64 requests, SGLang: the InferenceX runs of it (a closed loop) measured 115-155 ms TTFT
    args = ["export", "deepseek-r1", "--gpu", "mi355x", "--tp", "8", "--concurrency", "64"]
    for arrival in ("waves", "closed_loop"):
        code, out, err = cli(*args, "--arrival", arrival, "-o", str(tmp_path / f"{arrival}.sh"), "--json")
        assert code == 0, err
        code, est, err = cli("estimate", "deepseek-r1", "--gpu", "mi355x", "--tp", "8", "--concurrency", "64", "--arrival", arrival, "--json")
        assert json.loads(out)["predicted"]["ttft_ms"] == pytest.approx(json.loads(est)["ttft_ms"], rel=1e-9)
    assert '"arrival": "closed_loop"' in (tmp_path / "closed_loop.sh").read_text()
    assert '"arrival"' not in (tmp_path / "waves.sh").read_text()  # the default's header as before
    code, out, err = cli(*args, "--arrival", "closed_loop", "-o", str(tmp_path / "c.sh"))
    assert "TTFT with requests arriving in closed loop (" in " ".join((out + err).split())
    code, _, err = cli(*args, "--arrival", "poisson", "-o", str(tmp_path / "p.sh"))
    assert code == 2 and err.strip() == "error: arrival: 'poisson' is not valid; one of: waves, closed_loop, burst"


def test_pareto_says_how_the_acceptance_reaches_each_draft_length():
    # 2.6 tokens a step at k=3 is the flat rate r with 1 + r + r^2 + r^3 = 2.6: r = 0.71708; at k=5, 1 + r + ... + r^5 = 3.054
    base = ["pareto", "llama-3.1-8b", "--gpu", "h200", "--gpus", "1", "--spec", "eagle3", "--weight-dtype", "fp8", "--kv-dtype", "fp8"]
    code, out, err = cli(*base, "--acceptance", "2.6")
    assert code == 0, err
    assert ("speculation: --acceptance 2.6 read as the mean at k=3, a flat 0.717 a position; tokens a step k=1 1.72, k=2 2.23, "
            "k=3 2.60, k=4 2.86, k=5 3.05. Acceptance usually falls with position: --acceptance-rates r1,...,r5") in " ".join(out.split())
    code, out, err = cli(*base, "--acceptance", "2.6", "--draft-len", "3")  # one length searched, the one given: nothing to say
    assert code == 0 and "speculation:" not in out
