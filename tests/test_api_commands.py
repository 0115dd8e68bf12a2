"""The CLI's compare, disagg and calibrate as Python functions (lc.compare, lc.disagg, lc.calibrate): one code path each
(explore.compare, explore.disagg_search.price_pools, measure.calibrate.fit_profile), so the API and the CLI agree number
for number, the answers are tables of plain values, and a bad argument is one InputError naming the keyword."""
import json
import re

import pytest
from conftest import cli, cli_ok, plain

import llm_codesign as lc

_cli, _plain = cli_ok, plain


# ---- disagg

DISAGG = dict(prefill="tp=4,ep=4", decode="attention_dp=8,ep=8", prefill_instances=2, concurrency=[1, 64, 512], spec="mtp", draft_len=2,
              acceptance=2.2)


@pytest.fixture(scope="module")
def pools():
    return lc.disagg("deepseek-r1", "b200", **DISAGG)


def test_disagg_is_what_the_cli_prints(pools):
    want = json.loads(_cli("disagg", "deepseek-r1", "--gpu", "b200", "--prefill", "tp=4,ep=4", "--decode", "attention_dp=8,ep=8",
                           "--prefill-instances", 2, "--concurrency", "1,64,512", "--spec", "mtp", "--draft-len", 2, "--acceptance", 2.2, "--json"))
    assert _plain(pools.to_dict()) == want
    # by hand: two TP4 prefill instances and one DP8 decode instance
    assert (pools.num_gpus, pools.prefill["gpus_each"], pools.decode["gpus_each"]) == (2 * 4 + 8, 4, 8)


def test_disagg_records_are_one_flat_row_per_load(pools):
    recs = pools.to_records()
    assert [r["concurrency"] for r in recs] == [1, 64, 512] and len(pools.to_pandas()) == 3
    for rec, row in zip(recs, pools.rows, strict=True):
        assert all(not isinstance(v, dict) for v in rec.values())  # flat, as Frontier.to_records (acceptance_rates a list)
        assert (rec["prefill_plan"], rec["prefill_instances"], rec["decode_plan"]) == ("TP4 EP4", 2, "DP8xTP1 EP8")
        assert rec["tok_s_per_user"] == pytest.approx(1e3 / rec["tpot_ms"], rel=1e-12)  # one user's tokens, one per TPOT
        assert (rec["ttft_ms_lo80"], rec["tpot_ms_hi95"]) == (row["intervals"]["ttft_ms"]["lo80"], row["intervals"]["tpot_ms"]["hi95"])


def test_disagg_takes_a_plan_object_as_its_text():
    a = lc.disagg("llama-3.1-70b", "b200", prefill="tp=4", decode="tp=4", concurrency=8)
    b = lc.disagg("llama-3.1-70b", "b200", prefill=lc.Plan(tp=4), decode=lc.Plan(tp=4), concurrency=8)
    assert a.to_dict() == b.to_dict() and a.rows[0]["concurrency"] == 8


@pytest.mark.parametrize("kw,line", [
    ({"concurrency": 0}, "concurrency: 0 is not valid"),
    ({"prefill_instances": 0}, "prefill_instances: 0 is not valid; a positive integer up to 65,536"),
    ({"decode_max_batch": 2.5}, "decode_max_batch: 2.5 is not valid"),
    ({"prefill": {"tp": 4}}, "prefill: {'tp': 4} is not valid; a plan as text"),
    ({"decode": "tp=four"}, "decode: 'tp=four' is not valid"),
    ({"workload": lc.Workload(concurrency=4)}, "workload.concurrency: 4 is not valid"),
    ({"workload": lc.Workload(prefix_hit=0.5)}, "workload.prefix_hit: 0.5 is not valid"),
    ({"max_num_tokens": 0}, "max_num_tokens: 0 is not valid"),
    ({"decode_gpu": "h900"}, "decode_gpu: 'h900' is not valid"),
])
def test_disagg_refuses_a_bad_argument_naming_its_keyword(kw, line):
    with pytest.raises(lc.InputError) as e:
        lc.disagg("llama-3.1-70b", "b200", **({"prefill": "tp=4", "decode": "tp=4"} | kw))
    assert str(e.value).startswith(line) and "\n" not in str(e.value)


# ---- calibrate

def test_calibrate_returns_the_profile_the_cli_writes_and_writes_only_where_asked(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _cli("calibrate", "--kernels", "hopper/comm", "-o", "cli.toml")
    p = lc.calibrate(kernels="hopper/comm")
    assert p.text == (tmp_path / "cli.toml").read_text() and p.path is None
    assert sorted(x.name for x in tmp_path.iterdir()) == ["cli.toml"]  # nothing written
    (r,) = p.report
    assert (r["family"], r["kind"], r["rows"]) == ("hopper", "collectives", 849)
    q = lc.calibrate(kernels=["hopper/comm"], output="own.toml")
    assert q.path == "own.toml" and (tmp_path / "own.toml").read_text() == p.text


def test_a_profile_prices_as_its_file_does(tmp_path):
    p = lc.calibrate(kernels="hopper/comm", output=str(tmp_path / "own.toml"))
    unwritten = lc.calibrate(kernels="hopper/comm")
    m = lc.get_model("llama-3.1-70b")
    dep = lc.deployment(m, gpu="h100", num_gpus=8)
    w = lc.Workload(isl=1024, osl=256, concurrency=32)
    by_file = lc.estimate(m, dep, w, calibration=p.path)
    for prof in (p, unwritten):
        e = lc.estimate(m, dep, w, calibration=prof)
        assert (e.tpot_s, e.ttft_s) == (by_file.tpot_s, by_file.ttft_s)
    # the profile moves the price: the all-reduce is refitted on the H100's own collectives
    assert by_file.tpot_s != lc.estimate(m, dep, w).tpot_s
    # a frontier too: the same points, the intervals' words naming the file each was read from (an unwritten one: "this Profile")
    f, g = (lc.pareto("llama-3.1-8b", "h100", num_gpus=2, workload=lc.Workload(isl=512, osl=128), calibration=c) for c in (unwritten, p.path))
    assert unwritten.path is None and unwritten.as_path().endswith(".toml")
    said = json.dumps(_plain(f.to_dict()["frontier"]), default=str).replace("this Profile", "own.toml")  # never its private file's name
    # each point's estimate_command names the profile file it was priced with; an unwritten profile has none to name
    # (uxsmall): every figure and the rest of the record are equal
    said, want = (re.sub(r' --calibration [^"]*"', '"', x) for x in (said, json.dumps(_plain(g.to_dict()["frontier"]), default=str)))
    assert said == want


@pytest.mark.parametrize("kw,line", [
    ({}, "kernels: None is not valid; at least one kernel CSV (kernels=) or a serving CSV (serving=)"),
    ({"kernels": "hopper/comm", "hold_out": "llama-3.1-8b"}, "hold_out: 'llama-3.1-8b' is not valid; left out unless serving="),
    ({"kernels": "hopper/comm", "clean": True}, "clean: True is not valid; False unless serving="),
    ({"kernels": "nope.csv"}, "kernels: 'nope.csv' is not valid; an existing CSV file"),
    ({"kernels": "hopper/comm", "output": "/proc/p.toml"}, "output: '/proc/p.toml' is not valid"),
])
def test_calibrate_refuses_a_bad_argument_naming_its_keyword(kw, line):
    with pytest.raises(lc.InputError) as e:
        lc.calibrate(**kw)
    assert str(e.value).startswith(line) and "\n" not in str(e.value)


def test_calibrate_refuses_a_fit_on_its_bounds_unless_forced(tmp_path):
    # GEMMs 1000x slower than any GPU runs them (as tests/test_bad_input's CLI case): the fit lands on its lower bound
    k = tmp_path / "g.csv"
    rows = [f"h100_sxm,x,bfloat16,{m},{n},4096,{2 * m * n * 4096 / 600e12 * 1e6:.6f}" for m in (256, 1024, 4096) for n in (4096, 14336)]
    k.write_text("\n".join(["system,trtllm_version,gemm_dtype,m,n,k,latency_ms", *rows]) + "\n")
    out = tmp_path / "p.toml"
    with pytest.raises(lc.InputError, match=r"^calibrate: the fit is refused: .* nothing written to .*p\.toml \(force=True writes it anyway\)$"):
        lc.calibrate(kernels=str(k), output=str(out))
    assert not out.exists()
    assert lc.calibrate(kernels=str(k), output=str(out), force=True).path == str(out) and out.exists()


# ---- keywords named as the call names them

def test_num_gpus_is_named_as_the_call_names_it():
    for call in (lambda: lc.deployment("llama-3.1-8b", gpu="h100", num_gpus=0), lambda: lc.pareto("llama-3.1-8b", "h100", num_gpus=0),
                 lambda: lc.design(8e9, "h100", num_gpus=0), lambda: lc.compare("llama-3.1-8b", "h100", num_gpus=0)):
        with pytest.raises(lc.InputError) as e:
            call()
        assert e.value.field == "num_gpus"
    with pytest.raises(lc.InputError) as e:  # the GPUs the sizes multiply to: 65,536 x 8
        lc.deployment("llama-3.1-8b", gpu="h100", attention_dp=65536, kvp=8)
    assert str(e.value) == "num_gpus: 524288 is not valid; at most 65,536 GPUs, which tp x pp x attention_dp x kvp multiply to"


def test_validate_serving_names_its_file_path_as_the_call_does():
    with pytest.raises(lc.InputError) as e:
        lc.validate_serving("no-such-runs.csv")
    assert e.value.field == "path" and str(e.value).startswith("path: 'no-such-runs.csv' is not valid; an existing CSV file")


# ---- the disaggregated search: lc.pareto(disagg=True), `pareto --disagg`'s second answer

def test_the_disaggregated_frontier_is_what_pareto_disagg_prints():
    w = lc.Workload(isl=512, osl=128)
    f = lc.pareto("llama-3.1-8b", "h100", num_gpus=2, workload=w, disagg=True)
    out = json.loads(_cli("pareto", "llama-3.1-8b", "--gpu", "h100", "--gpus", 2, "--isl", 512, "--osl", 128, "--disagg", "--json"))
    want = [c for c in out["comparisons"] if c.get("mode") == "disaggregated"][0]
    got = _plain(f.to_dict())
    assert {k: v for k, v in got.items() if k != "seconds"} == {k: v for k, v in want.items() if k != "seconds"}
    # by hand: 2 GPUs hold one TP1 prefill and one TP1 decode instance, nothing else
    assert {(p.prefill.num_gpus, p.prefill_instances, p.decode.num_gpus, p.decode_instances) for p in f.points} == {(1, 1, 1, 1)}
    assert f.mode == "disaggregated" and len(f.to_records()) == len(f.points) > 0 and "prefill_plan" in f.to_records()[0]


@pytest.mark.parametrize("kw,line", [
    ({"workload": lc.Workload(prefix_hit=0.5)}, "workload.prefix_hit: 0.5 is not valid; 0 with disagg=True"),
    ({"step_tokens": (1024, 4096)}, "step_tokens: (1024, 4096) is not valid; left out with disagg=True"),
    ({"max_accuracy_drop": 1.0}, "max_accuracy_drop: 1.0 is not valid; left out with disagg=True"),
])
def test_the_disaggregated_search_refuses_what_it_does_not_price(kw, line):
    with pytest.raises(lc.InputError) as e:
        lc.pareto("llama-3.1-8b", "h100", num_gpus=2, disagg=True, **kw)
    assert str(e.value).startswith(line)


# ---- export_point: a frontier point's launch configuration, as `export-point` writes it from `pareto --json`

@pytest.mark.parametrize("engine", ["trtllm", "vllm"])
def test_export_point_is_the_file_export_point_writes(tmp_path, monkeypatch, engine):
    monkeypatch.chdir(tmp_path)
    w = lc.Workload(isl=1024, osl=256)
    f = lc.pareto("llama-3.1-8b", "h100", num_gpus=2, workload=w, engine=engine)
    (tmp_path / "f.json").write_text(_cli("pareto", "llama-3.1-8b", "--gpu", "h100", "--gpus", 2, "--isl", 1024, "--osl", 256, "--backend", engine,
                                          "--json"))
    last = len(f.points) - 1
    for i in (0, last, -1):  # -1 the last point, as Python indexes (newc12 #16)
        name = "cfg.yaml"
        _cli("export-point", "f.json", "--index", i, "-o", name)
        assert lc.export_point(f, i, file_name=name) == {name: (tmp_path / name).read_text()}
    assert lc.export_point(f, -1) == lc.export_point(f, last) != lc.export_point(f, 0)
    code, _, err = cli("export-point", "f.json", "--index", str(-last - 2), "-o", "x.yaml")
    assert (code, err.strip()) == (2, f"error: index: {-last - 2} is not valid; a point of the aggregated series, {-last - 1} to {last} (0 the "
                                      f"throughput end, -1 or {last} the interactive end); each point of pareto --json states its `series` "
                                      "and `index`: --series and --index") and not (tmp_path / "x.yaml").exists()
    (default_name,) = lc.export_point(f, 0)  # the engine's own name for it (explore.export_engines), as the page offers it
    assert default_name == {"trtllm": "extra_llm_api_options.yaml", "vllm": "vllm_config.yaml"}[engine]


def test_export_point_refuses_a_bad_argument_naming_its_keyword():
    f = lc.pareto("llama-3.1-8b", "h100", num_gpus=1, workload=lc.Workload(isl=512, osl=128))
    d = lc.pareto("llama-3.1-8b", "h100", num_gpus=2, workload=lc.Workload(isl=512, osl=128), disagg=True)
    n = len(f.points)
    for call, line in ((lambda: lc.export_point(f, n), f"index: {n} is not valid; a point of the frontier, -{n} to {n - 1} (0 the "
                        f"throughput end, -1 or {n - 1} the interactive end)"),
                       (lambda: lc.export_point(f, -n - 1), f"index: {-n - 1} is not valid; a point of the frontier, -{n} to {n - 1}"),
                       (lambda: lc.export_point(f, 0.0), "index: 0.0 is not valid"),
                       (lambda: lc.export_point(d, 0), "frontier: 'a disaggregated Frontier' is not valid; an aggregated Frontier"),
                       (lambda: lc.export_point(f.to_dict(), 0), "frontier: 'dict' is not valid"),
                       (lambda: lc.export_point(f, 0, file_name="a/b.yaml"), "file_name: 'a/b.yaml' is not valid"),
                       (lambda: lc.export_point(f, 0, calibration=lc.calibrate(kernels="hopper/comm")),
                        "calibration: 'an unwritten Profile' is not valid")):
        with pytest.raises(lc.InputError) as e:
            call()
        assert str(e.value).startswith(line), str(e.value)
