"""The first hour's leftovers (n7b): compare's --kv-dtype, as pareto's and estimate's."""
import json

from conftest import cli


def test_compare_takes_a_kv_dtype_for_every_row():
    # `compare ... --kv-dtype fp8` was refused ("No such option"); the BF16 checkpoint's row kept its BF16 KV cache
    code, out, _ = cli("compare", "llama-3.3-70b", "--gpu", "h200", "--kv-dtype", "fp8", "--json")
    assert code == 0
    rows = json.loads(out)["rows"]
    assert [(r["precision"], r["best"]["deployment"]["kv_dtype"]) for r in rows] == [
        ("W:bf16 A:bf16 KV:fp8", "fp8"), ("W:fp8 A:fp8 KV:fp8", "fp8")]


def test_compare_refuses_a_kv_dtype_it_does_not_know_in_one_line():
    code, out, err = cli("compare", "llama-3.3-70b", "--gpu", "h200", "--kv-dtype", "fp3")
    assert code == 2 and out == ""
    assert err == "error: kv_dtype: 'fp3' is not valid; one of: bf16, fp16, fp8, fp8_block, nvfp4, mxfp4, int4, int8\n"


DISAGG = ("disagg", "llama-3.1-70b", "--gpu", "h200", "--prefill", "tp=4", "--decode", "tp=4", "--concurrency", "8")
NO_EFFECT = "prefill_routing random: no effect, the prefill plan TP4 has no attention-DP ranks"


def test_disagg_says_a_prefill_routing_without_attention_dp_ranks_does_nothing():
    # accepted without a word: with one rank per prefill instance, random and balanced price alike
    code, out, _ = cli(*DISAGG, "--prefill-routing", "random")
    assert code == 0 and f"\n{NO_EFFECT}\n" in out
    code, out, _ = cli(*DISAGG, "--prefill-routing", "random", "--json")
    assert code == 0 and json.loads(out)["notes"] == [NO_EFFECT]
    # not said where the routing was left to the engine, nor where the prefill plan has ranks to spread requests over
    assert json.loads(cli(*DISAGG, "--json")[1])["notes"] == []
    code, out, _ = cli(*DISAGG[:5], "attention_dp=4", *DISAGG[6:], "--prefill-routing", "random", "--json")
    assert code == 0 and json.loads(out)["notes"] == []


def test_the_api_says_which_columns_of_a_serving_file_it_did_not_read(tmp_path):
    # the CLI named `tpot_msec` (n7); llm_codesign.validate_serving gave no word of it
    from test_own_runs import HEADER, _runs

    import llm_codesign

    rep = llm_codesign.validate_serving(_runs(tmp_path, header=HEADER.replace("tpot_ms", "tpot_msec")))
    assert rep["columns"] == {"not_read": ["tpot_msec"], "absent_metrics": ["tpot_ms"]}
    assert set(rep["overall"]) == {"ttft_ms"}  # TPOT not compared, as the CLI says
    assert llm_codesign.validate_serving(_runs(tmp_path))["columns"] == {"not_read": [], "absent_metrics": []}


# a profile holding 3 H200 vLLM runs of its own (too few for a slice, OWN_MIN_ROWS 9), its [intervals] as calibrate --serving
# writes them: they put Hopper within the runs (measure.intervals._profile_table), the band itself the bundled Blackwell one's
OWN_H200 = """[intervals.slices]
[intervals.envelope]
kinds = ["gqa", "dense"]
formats = ["hopper|fp8|dense"]
models = ["llama-3.3-70b"]
[intervals.envelope.serving]
metrics = ["ttft_ms", "tpot_ms", "output_tok_s_per_gpu", "output_tok_s_per_user"]
families = ["hopper"]
engines = ["vllm"]
runs = {"vllm|hopper" = 3}
"""


def test_a_band_not_widened_for_hopper_names_the_profiles_own_hopper_runs(tmp_path, monkeypatch):
    # the basis said "286 serving runs with vLLM, on Blackwell GPUs" and the Hopper widening was gone without a word of why
    monkeypatch.chdir(tmp_path)
    (tmp_path / "own.toml").write_text(OWN_H200)
    ask = ("estimate", "llama-3.3-70b", "--gpu", "{}", "--tp", "8", "--backend", "vllm", "--weight-dtype", "fp8", "--kv-dtype", "fp8",
           "--concurrency", "32", "--calibration", "own.toml", "--json")
    # since fixcal 3 runs (under MIN_ROWS) keep the bundled band and its Hopper widening (newcomer review 2026-12-06: 5 vLLM
    # runs on H100s had dropped it for every engine, their own runs' TPOT inside the 95% band 100 -> 71.4%)
    code, out, _ = cli(*(a.format("h200") for a in ask))
    b = json.loads(out)["intervals"]["tpot_ms"]
    assert code == 0 and [w.split(" (x")[0] for w in b["widened"]] == [
        "no bundled serving run on any Hopper GPU; your profile has 3 with vLLM (too few for a band: 9 needed)"]  # newc5 #17
    assert b["source"] == ("the bundled profile's (not own.toml's: too few of its runs (3 with vLLM on Hopper GPUs; 9 per slice needed)) "
                           "286 serving runs with vLLM, on Blackwell GPUs, in the load band 5-32 requests")
    # 40 of them (a slice's worth) that measure no TPOT: the bundled band, not widened for Hopper, and says whose runs cover it
    (tmp_path / "own.toml").write_text(OWN_H200.replace('"vllm|hopper" = 3', '"vllm|hopper" = 40'))
    code, out, _ = cli(*(a.format("h200") for a in ask))
    b = json.loads(out)["intervals"]["tpot_ms"]
    assert code == 0 and b["widened"] == []
    assert b["source"] == ("the bundled profile's (not own.toml's: none of its runs measures TPOT) 286 serving runs with vLLM, on "
                           "Blackwell GPUs, in the load band 5-32 requests; Hopper GPUs measured by own.toml's own 40 serving runs with vLLM "
                           "(so not widened for the GPU family)")
    # on Blackwell, which the bundled runs measure, nothing more is said
    code, out, _ = cli(*(a.format("b200") for a in ask))
    assert json.loads(out)["intervals"]["tpot_ms"]["source"].endswith("on Blackwell GPUs, in the load band 5-32 requests")
