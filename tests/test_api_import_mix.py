"""The CLI's `import` and `mix` as Python functions (lc.import_config, lc.mix): one code path each (explore.export.
import_config, explore.lengths.mix), so the API and the CLI agree number for number on the same input, the answers
are typed objects, and a bad argument is one InputError naming the keyword, the value and what is valid."""
import json
from pathlib import Path

import pytest
from conftest import cli_ok, plain

import llm_codesign as lc

L8 = ("llama-3.1-8b", "--gpu", "h100", "--gpus", "1")


# ---- mix


@pytest.fixture(scope="module")
def two_lengths(tmp_path_factory):
    """Three requests of 1000/200 tokens for each of 3000/600: shares 3/4 and 1/4."""
    p = tmp_path_factory.mktemp("mix") / "lengths.csv"
    p.write_text("isl,osl,count\n1000,200,3\n3000,600,1\n")
    return p


def test_mix_is_what_the_cli_prints(two_lengths):
    m = lc.get_model("llama-3.1-8b")
    r = lc.mix(m, lc.deployment(m, gpu="h100", num_gpus=1), lengths=str(two_lengths), concurrency=32)
    want = json.loads(cli_ok("mix", *L8, "--lengths", two_lengths, "--concurrency", 32, "--json"))
    assert plain(r.to_dict()) == want
    a = r.to_dict()
    # by hand: the request shares 3/4 and 1/4, so the mean ISL is (3 x 1000 + 3000) / 4 = 1500 and OSL (3 x 200 + 600) / 4 = 300
    assert (a["mean_isl"], a["mean_osl"], a["distinct_lengths"]) == (1500.0, 300.0, 2)
    short, long_ = a["per_length"]
    assert (short["isl"], short["share"], long_["isl"], long_["share"]) == (1000, 0.75, 3000, 0.25)
    # TPOT per decoded token (OSL - 1 a request, crev9 #3): 3 x 199 = 597 of the short kind against 599 of the long
    assert r.tpot_s == pytest.approx((597 * short["tpot_ms"] + 599 * long_["tpot_ms"]) / 1196 / 1e3, rel=1e-12)
    assert r.tok_s_per_user == pytest.approx(1.0 / r.tpot_s, rel=1e-12)
    assert r.ttft_s["mean"] == pytest.approx((0.75 * short["ttft_ms"] + 0.25 * long_["ttft_ms"]) / 1e3, rel=1e-12)
    assert r.fits and r.concurrency == 32 and len(r.to_records()) == 2


def test_mix_of_distributions_is_the_clis():
    m = lc.get_model("llama-3.1-8b")
    r = lc.mix(m, lc.deployment(m, gpu="h100", num_gpus=1), isl_dist="uniform:100,2000", osl_dist="fixed:256", concurrency=16)
    assert plain(r.to_dict()) == json.loads(cli_ok("mix", *L8, "--isl-dist", "uniform:100,2000", "--osl-dist", "fixed:256",
                                                   "--concurrency", 16, "--json"))
    assert r.to_dict()["mean_osl"] == 256.0 and r.to_dict()["distinct_lengths"] == 24  # 24 equal-probability ISL bins x one OSL


@pytest.mark.parametrize("kw,line", [
    ({"lengths": 3}, "lengths: 3 is not valid; a CSV's path"),
    ({"isl_dist": "fixed:100"}, "osl_dist: None is not valid; both --isl-dist and --osl-dist"),
    ({"isl_dist": "fixed:1", "osl_dist": "fixed:1", "lengths": "x.csv"}, "lengths: 'x.csv' is not valid; either --lengths"),
    ({"isl_dist": "fixed:1", "osl_dist": "fixed:1", "concurrency": 0}, "concurrency: 0 is not valid; requests in flight"),
    ({"isl_dist": "fixed:1", "osl_dist": "fixed:1", "concurrency": 2.5}, "concurrency: 2.5 is not valid"),
    ({"isl_dist": "fixed:1", "osl_dist": "fixed:1", "concurrency": True}, "concurrency: True is not valid"),
    ({"isl_dist": "normal:5", "osl_dist": "fixed:1"}, "isl_dist: 'normal:5' is not valid; fixed:N, uniform:LO,HI"),
    ({"isl_dist": "fixed:1", "osl_dist": "fixed:1", "calibration": 3}, "calibration: 3 is not valid"),
    ({"isl_dist": "fixed:1", "osl_dist": ["fixed:1"]}, "osl_dist: 'list' is not valid"),
])
def test_mix_refuses_a_bad_argument_naming_its_keyword(kw, line):
    m = lc.get_model("llama-3.1-8b")
    with pytest.raises(lc.InputError) as e:
        lc.mix(m, lc.deployment(m, gpu="h100", num_gpus=1), **kw)
    assert str(e.value).startswith(line) and "\n" not in str(e.value)


def test_mix_refuses_a_gpu_in_the_deployments_place():
    with pytest.raises(lc.InputError, match=r"^deployment: 'h100' is not valid; a Deployment: lc.deployment"):
        lc.mix("llama-3.1-8b", "h100", isl_dist="fixed:1", osl_dist="fixed:1")


# ---- import


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    d = tmp_path_factory.mktemp("import")
    cli_ok("export", *L8, "--tp", 1, "--backend", "vllm", "--concurrency", 16, "-o", d / "v.yaml")
    cli_ok("export", "deepseek-r1", "--gpu", "b200", "--backend", "dynamo", "--prefill", "tp=8,ep=8", "--decode", "attention_dp=8,ep=8",
           "--prefill-instances", 1, "--decode-instances", 2, "--concurrency", 256, "-o", d / "dynamo.yaml")
    return d


def test_import_is_what_the_cli_prints(exported):
    p = exported / "v.yaml"
    r = lc.import_config(p, concurrency=8)
    assert plain(r.to_dict()) == json.loads(cli_ok("import", p, "--concurrency", 8, "--json"))
    # by hand: the export's instance (TP1 on one H100, vLLM) at the 8 requests asked, priced as estimate prices it
    m = lc.get_model("llama-3.1-8b")
    est = lc.estimate(m, lc.deployment(m, gpu="h100", num_gpus=1, engine="vllm", max_num_tokens=r.deployment.max_num_tokens),
                      lc.Workload(isl=1024, osl=1024, concurrency=8))
    assert (r.engine, r.replicas, r.concurrency, r.batch, r.deployment.plan.label()) == ("vllm", 1, 8, "--concurrency", "TP1")
    assert (r.ttft_s, r.tpot_s) == (est.ttft_s, est.tpot_s) and r.estimate.tpot_s == est.tpot_s


def test_import_at_the_exports_own_batch_repeats_its_prediction(exported):
    p = exported / "v.yaml"
    r = lc.import_config(p)
    head = json.loads(next(x for x in p.read_text().splitlines() if x.startswith("# llm-codesign export: "))[len("# llm-codesign export: "):])
    assert r.concurrency == 16 and r.batch == "the export's"  # its header's concurrency (crev11 #2)
    assert r.to_dict()["tpot_ms"] == pytest.approx(head["predicted"]["tpot_ms"], rel=1e-9)


def test_import_of_a_dynamo_export_is_the_clis(exported):
    p = exported / "dynamo.yaml"
    r = lc.import_config(p)
    assert plain(r.to_dict()) == json.loads(cli_ok("import", p, "--json"))
    assert (r.engine, r.prefill_instances, r.decode_instances, r.concurrency, r.estimate) == ("dynamo", 1, 2, 256, None)
    assert (r.prefill.plan.label(), r.deployment.plan.label()) == ("TP8 EP8", "DP8xTP1 EP8")


def test_import_of_an_engines_own_line(tmp_path):
    p = tmp_path / "serve.sh"
    p.write_text("vllm serve meta-llama/Llama-3.1-8B-Instruct --tensor-parallel-size 2 --max-num-seqs 64 --enable-prefix-caching\n")
    r = lc.import_config(p, gpu="h100")
    assert plain(r.to_dict()) == json.loads(cli_ok("import", p, "--gpu", "h100", "--json"))
    assert (r.deployment.plan.label(), r.concurrency, r.model.name) == ("TP2", 64, "llama-3.1-8b")


@pytest.mark.parametrize("kw,line", [
    ({"path": 3}, "path: 3 is not valid; an export's or an engine configuration's path"),
    ({"path": "no-such.yaml"}, "path: 'no-such.yaml' is not valid"),
    ({"concurrency": 0}, "concurrency: 0 is not valid; requests in flight per instance"),
    ({"concurrency": "8"}, "concurrency: '8' is not valid"),
    ({"isl": 0}, "isl: 0 is not valid; tokens per request"),
    ({"osl": 1.5}, "osl: 1.5 is not valid"),
    ({"acceptance": 0.5}, "acceptance: 0.5 is not valid; mean accepted tokens per step"),
    ({"acceptance_rates": "a,b"}, "acceptance_rates: 'a,b' is not valid; comma-separated probabilities"),
    ({"gpu": 5}, "gpu: 5 is not valid"),
    ({"model": 7}, "model: 7 is not valid"),
    ({"backend": ["vllm"]}, "backend: 'list' is not valid"),
    ({"calibration": 3}, "calibration: 3 is not valid"),
])
def test_import_refuses_a_bad_argument_naming_its_keyword(exported, kw, line):
    with pytest.raises(lc.InputError) as e:
        lc.import_config(**({"path": exported / "v.yaml"} | kw))
    assert str(e.value).startswith(line) and "\n" not in str(e.value)


def test_import_of_an_engines_line_without_a_gpu_is_refused(tmp_path):
    p = tmp_path / "serve.sh"
    p.write_text("vllm serve meta-llama/Llama-3.1-8B-Instruct --tensor-parallel-size 2\n")
    with pytest.raises(lc.InputError, match=r"^gpu: missing; serve.sh names no GPU"):
        lc.import_config(p)


# ---- pareto --json's profile: the Frontier's own record of it


def test_pareto_json_records_the_frontiers_profile(tmp_path):
    prof = tmp_path / "own.toml"
    prof.write_text("[hopper]\ngemm_eff_bf16 = 0.5\n")
    args = ("qwen3-30b-a3b", "--gpu", "h100", "--gpus", 1, "--tp", 1, "--isl", 512, "--osl", 128)
    cli_doc = json.loads(cli_ok("pareto", *args, "--calibration", prof, "--json"))
    f = lc.pareto("qwen3-30b-a3b", "h100", num_gpus=1, tp=1, workload=lc.Workload(isl=512, osl=128), calibration=str(prof))
    # the API's Frontier and the CLI's JSON record it alike, the wall time aside
    api_doc = plain(f.to_dict())
    assert {k: v for k, v in api_doc.items() if k != "seconds"} == {k: v for k, v in cli_doc.items() if k != "seconds"}
    assert api_doc["calibration"] == str(prof) and list(api_doc)[-1] == "calibration"
    # a Profile written to a file records that file; the bundled profile, nothing (as pareto --json without --calibration)
    assert lc.Profile(text=prof.read_text(), report=(), path=str(prof)).as_path() == str(prof)
    from dataclasses import replace

    assert replace(f, calibration=lc.Profile(text="", report=(), path=str(prof))).to_dict()["calibration"] == str(prof)
    assert "calibration" not in json.loads(cli_ok("pareto", *args, "--json"))
    assert "calibration" not in replace(f, calibration=None).to_dict()
    # a profile no path names is said so (calibration_unrecorded), never passed off as the bundled one
    d = replace(f, calibration=lc.Profile(text="[hopper]\n", report=())).to_dict()
    assert "calibration" not in d and d["calibration_unrecorded"].startswith("an unwritten Profile")


def test_export_point_refuses_a_frontier_whose_profile_no_path_names(tmp_path):
    from dataclasses import replace

    f = lc.pareto("llama-3.1-8b", "h100", num_gpus=1, tp=1, workload=lc.Workload(isl=512, osl=128))
    doc = tmp_path / "f.json"
    doc.write_text(json.dumps(plain(replace(f, calibration=lc.Profile(text="[hopper]\n", report=())).to_dict())))
    from conftest import cli

    code, out, err = cli("export-point", str(doc), "--index", "0", "-o", str(tmp_path / "x.yaml"))
    assert code == 2 and "an unwritten Profile" in out + err and not (tmp_path / "x.yaml").exists()


def test_the_api_references_import_and_mix_block_runs(tmp_path, monkeypatch, capsys):
    import re
    from pathlib import Path

    section = (Path(__file__).resolve().parents[1] / "docs" / "api.md").read_text().split("A frontier point's launch file priced again", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    monkeypatch.chdir(tmp_path)  # the block writes the launch file where it runs
    exec(compile(code, "docs/api.md", "exec"), {})
    out = capsys.readouterr().out
    assert re.fullmatch(r"TP1 TPOT \d+\.\d\d ms \d+\.\d+\nTTFT p90 \d+ ms, \d+ tok/s/GPU \(\d+, 7\)\n", out), out


# ---- the README's export-then-import, a newcomer's --gpu: an export states its GPU, model and engine


@pytest.mark.parametrize("flag,value,line", [
    ("--gpu", "b200", "gpu: 'b200' is not valid; left out or h100: v.yaml is an export, which states its gpu"),
    ("--model", "llama-3.1-70b", "model: 'llama-3.1-70b' is not valid; left out or llama-3.1-8b: v.yaml is an export"),
    ("--backend", "sglang", "backend: 'sglang' is not valid; left out or vllm: v.yaml is an export"),
])
def test_import_of_an_export_refuses_another_gpu_model_or_engine(exported, flag, value, line):
    # `import vllm.yaml --gpu b200` priced the export's own H200 and said nothing of the B200 asked for
    from conftest import cli

    code, out, err = cli("import", str(exported / "v.yaml"), flag, value)
    assert code == 2 and f"error: {line}" in out + err and "Traceback" not in out + err
    with pytest.raises(lc.InputError) as e:
        lc.import_config(exported / "v.yaml", **{flag[2:]: value})
    assert str(e.value).startswith(line)
    # the export's own (by any of its names) is no override: the same answer as without it
    own = {"--gpu": "H100", "--model": "meta-llama/Llama-3.1-8B-Instruct", "--backend": "vllm"}[flag]
    assert lc.import_config(exported / "v.yaml", **{flag[2:]: own}).to_dict() == lc.import_config(exported / "v.yaml").to_dict()


def test_import_of_a_dynamo_export_refuses_another_gpu(exported):
    with pytest.raises(lc.InputError, match=r"^gpu: 'h200' is not valid; left out or b200: dynamo.yaml is an export"):
        lc.import_config(exported / "dynamo.yaml", gpu="h200")


# ---- review fixes (branch revfix): an export's own engine by any name, options it would drop refused or honoured


@pytest.fixture(scope="module")
def more_exports(tmp_path_factory):
    d = tmp_path_factory.mktemp("import_more")
    cli_ok("export", *L8, "--tp", 1, "--backend", "trtllm", "--concurrency", 16, "-o", d / "t.yaml")
    cli_ok("export", *L8, "--tp", 1, "--backend", "vllm", "--spec", "eagle3", "--draft-len", 3, "--acceptance-rates", "0.8,0.6,0.5",
           "--draft-model", "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "--concurrency", 16, "-o", d / "e.yaml")
    return d


@pytest.mark.parametrize("name", ["tensorrt-llm", "TRTLLM", "trt-llm", " TensorRT_LLM "])
def test_import_of_an_export_takes_its_engine_by_any_of_its_names(more_exports, exported, name):
    # `_as_exported` compared the raw strings: TensorRT-LLM's own aliases and its name in capitals were refused
    from conftest import cli

    p = more_exports / "t.yaml"
    assert lc.import_config(p, backend=name).to_dict() == lc.import_config(p).to_dict()
    assert cli("import", str(p), "--backend", name)[0] == 0
    assert lc.import_config(exported / "v.yaml", backend="VLLM").to_dict() == lc.import_config(exported / "v.yaml").to_dict()


def test_import_of_an_export_refuses_an_unknown_engine_as_every_backend_is(more_exports):
    from conftest import cli

    # was "left out or trtllm: ...; export again with --backend bogus", an engine that does not exist
    line = "backend: 'bogus' is not valid; one of: trtllm, vllm, sglang"
    code, out, err = cli("import", str(more_exports / "t.yaml"), "--backend", "bogus")
    assert code == 2 and f"error: {line}" in out + err and "export again" not in out + err
    with pytest.raises(lc.InputError) as e:
        lc.import_config(more_exports / "t.yaml", backend="bogus")
    assert str(e.value).startswith(line)


def test_import_of_a_dynamo_export_takes_dynamo_or_its_workers_engine(exported):
    p = exported / "dynamo.yaml"
    base = lc.import_config(p).to_dict()
    # its header's backend is its workers' (TensorRT-LLM here): refused before as "export again with --backend trtllm"
    for name in ("dynamo", "Dynamo", "trtllm", "TRT-LLM"):
        assert lc.import_config(p, backend=name).to_dict() == base
    with pytest.raises(lc.InputError, match=r"^backend: 'vllm' is not valid; left out or dynamo or trtllm: dynamo.yaml is an export"):
        lc.import_config(p, backend="vllm")


def test_import_of_a_dynamo_export_honours_its_concurrency(exported):
    # `_import_dynamo` always priced the export's 256 requests: concurrency=5 gave .concurrency == 256

    p = exported / "dynamo.yaml"
    r = lc.import_config(p, concurrency=5)
    assert (r.concurrency, r.batch, r.to_dict()["concurrency"]) == (5, "--concurrency", 5)
    assert plain(r.to_dict()) == json.loads(cli_ok("import", p, "--concurrency", 5, "--json"))
    # the pools priced as disagg prices them at those 5 requests: estimate_disagg's own row
    from dataclasses import replace

    from llm_codesign.cost.calibration import calibration_for
    from llm_codesign.serve.disagg import estimate_disagg

    dd, pre = r.deployment, replace(r.deployment, plan=r.prefill.plan, num_gpus=r.prefill.num_gpus)
    row = estimate_disagg(r.model, pre, dd, calibration=calibration_for(dd.gpu), prefill_instances=1, decode_instances=2,
                          concurrencies=[5], isl=1024, osl=1024)["rows"][0]
    assert (r.answer["ttft_ms"], r.answer["tpot_ms"]) == (row["ttft_ms"], row["tpot_ms"])
    assert r.answer["tpot_ms"] < lc.import_config(p).answer["tpot_ms"]  # 5 requests a pool step, not 256


@pytest.mark.parametrize("kw,line", [
    ({"acceptance": 2.5}, "acceptance: 2.5 is not valid; left out: e.yaml is an export, priced at its own acceptance"),
    ({"acceptance_rates": "0.9,0.6,0.5"}, "acceptance_rates: '0.9,0.6,0.5' is not valid; left out or the export's own, 0.8,0.6,0.5: "
                                           "e.yaml is an export"),
    ({"acceptance_rates": [0.8, 0.6]}, "acceptance_rates: '0.8,0.6' is not valid; left out or the export's own, 0.8,0.6,0.5"),
])
def test_import_of_an_export_refuses_another_acceptance(more_exports, kw, line):
    # were dropped without a word: the export's own acceptance priced it whatever was asked
    from conftest import cli

    p = more_exports / "e.yaml"
    with pytest.raises(lc.InputError) as e:
        lc.import_config(p, **kw)
    assert str(e.value).startswith(line) and "\n" not in str(e.value)
    flag, value = next(iter(kw.items()))
    code, out, err = cli("import", str(p), "--" + flag.replace("_", "-"), value if isinstance(value, (str, float)) else "0.8,0.6")
    assert code == 2 and "error: " + line.split(" is not valid")[0] in out + err
    # its own rates are no override
    assert lc.import_config(p, acceptance_rates="0.8,0.6,0.5").to_dict() == lc.import_config(p).to_dict()


def test_import_of_an_export_without_speculation_refuses_an_acceptance(exported):
    with pytest.raises(lc.InputError, match=r"^acceptance: 2.0 is not valid; left out: v.yaml is an export of a deployment that drafts no tokens"):
        lc.import_config(exported / "v.yaml", acceptance=2.0)
    with pytest.raises(lc.InputError, match=r"^acceptance_rates: '0.8' is not valid; left out: v.yaml is an export of a deployment that"):
        lc.import_config(exported / "v.yaml", acceptance_rates="0.8")


@pytest.mark.parametrize("rates", ["0.8,0.6", "0.8,0.6,0.5,0.4,0.3"])
def test_import_of_an_engines_line_takes_one_acceptance_rate_per_draft_token(tmp_path, rates):
    # 2 or 5 rates for its 3 draft tokens were taken (explore.export's own parser had no length check)
    from conftest import cli

    p = tmp_path / "serve.yaml"
    p.write_text("model: meta-llama/Llama-3.1-8B\ntensor-parallel-size: 1\nmax-num-seqs: 16\n"
                 "speculative-config:\n  method: eagle3\n  num_speculative_tokens: 3\n  model: yuhuili/EAGLE3-LLaMA3.1-Instruct-8B\n")
    line = f"acceptance_rates: '{rates}' is not valid; 3 rates, one per draft token (the configuration drafts 3 tokens a step)"
    with pytest.raises(lc.InputError) as e:
        lc.import_config(p, gpu="h100", acceptance_rates=rates)
    assert str(e.value) == line
    code, out, err = cli("import", str(p), "--gpu", "h100", "--acceptance-rates", rates)
    assert code == 2 and f"error: {line}" in out + err
    r = lc.import_config(p, gpu="h100", acceptance_rates="0.8,0.6,0.5")
    assert (r.deployment.spec.k, r.deployment.spec.rates) == (3, (0.8, 0.6, 0.5))


@pytest.mark.parametrize("kw,line", [
    ({"path": ""}, "path: '' is not valid; an export's or an engine configuration's path"),
    ({"model": "  "}, "model: '  ' is not valid; a registry name"),
    ({"backend": ""}, "backend: '' is not valid; an engine's name"),
    ({"engine": " "}, "engine: ' ' is not valid; an engine's name"),
])
def test_import_names_a_blank_argument_as_given(exported, kw, line):
    # the refusal printed the type's name, 'str', for '' and '  '
    with pytest.raises(lc.InputError) as e:
        lc.import_config(**({"path": exported / "v.yaml"} | kw))
    assert str(e.value).startswith(line)


def test_mix_names_a_blank_argument_as_each_caller_gives_it():
    from conftest import cli

    m = lc.get_model("llama-3.1-8b")
    with pytest.raises(lc.InputError, match=r"^lengths: '' is not valid; a CSV's path \(columns isl, osl, and count or weight\), or None$"):
        lc.mix(m, lc.deployment(m, gpu="h100", num_gpus=1), lengths="")
    with pytest.raises(lc.InputError, match=r"^isl_dist: '  ' is not valid; fixed:N"):
        lc.mix(m, lc.deployment(m, gpu="h100", num_gpus=1), isl_dist="  ", osl_dist="fixed:1")
    # the CLI's empty option is one left out, worded as before the API shared the check
    code, out, err = cli("mix", *L8, "--lengths", "")
    assert code == 2 and "error: lengths: None is not valid; either --lengths FILE.csv or --isl-dist and --osl-dist" in out + err
    assert "or None" not in out + err


def test_import_refuses_an_empty_gpu_as_the_api_does(exported):
    # `_gpu(gpu) if gpu else None` dropped --gpu "" and priced the export's own GPU
    from conftest import cli

    code, out, err = cli("import", str(exported / "v.yaml"), "--gpu", "")
    assert code == 2 and "error: gpu: '' is not valid" in out + err
    with pytest.raises(lc.InputError, match=r"^gpu: '' is not valid"):
        lc.import_config(exported / "v.yaml", gpu="")


def test_import_of_an_export_priced_with_a_profile_by_another_spelling_says_nothing(tmp_path, monkeypatch):
    # profile_note compared the strings: own.toml exported, /abs/own.toml imported printed a note to pass own.toml
    monkeypatch.chdir(tmp_path)
    (tmp_path / "own.toml").write_text((Path(lc.__file__).parent / "data" / "calibration" / "fitted.toml").read_text())
    cli_ok("export", *L8, "--tp", 1, "--backend", "vllm", "--concurrency", 16, "--calibration", "own.toml", "-o", "c.yaml")
    assert lc.import_config("c.yaml", calibration=str(tmp_path / "own.toml")).note is None
    assert lc.import_config("c.yaml", calibration="./own.toml").note is None
    assert lc.import_config("c.yaml").note.startswith("exported with --calibration own.toml")


def test_import_of_a_local_models_export_from_another_directory(tmp_path, monkeypatch):
    # the file names mymodel's folder by its absolute path (review rvb #3; before, `mymodel` as given, which an import
    # from another directory refused): read from anywhere; --model with the model's path (its name the header's) is
    # honoured, another model refused as before
    from conftest import cli

    from llm_codesign.spec.registry import get_model

    src = tmp_path / "a"
    (src / "mymodel").mkdir(parents=True)
    cfg = Path(lc.__file__).parent / "data" / "models" / "Qwen--Qwen3-0.6B_config.json"
    (src / "mymodel" / "config.json").write_text(cfg.read_text())
    monkeypatch.chdir(src)
    cli_ok("export", "mymodel", "--gpu", "h100", "--gpus", 1, "--tp", 1, "--backend", "vllm", "--concurrency", 8, "-o", tmp_path / "c.yaml")
    here = lc.import_config(tmp_path / "c.yaml").to_dict()
    monkeypatch.chdir(tmp_path)
    assert lc.import_config("c.yaml").to_dict() == here
    assert lc.import_config("c.yaml", model=str(src / "mymodel")).to_dict() == here
    assert plain(here) == json.loads(cli_ok("import", "c.yaml", "--model", src / "mymodel", "--json"))
    code, out, err = cli("import", "c.yaml", "--model", "llama-3.1-8b")
    assert code == 2 and ("error: model: 'llama-3.1-8b' is not valid; left out or mymodel (or its config.json, of the shape the header "
                          "records): c.yaml is an export") in " ".join((out + err).split())
    assert get_model(str(src / "mymodel")).name == "mymodel"


def test_a_profile_no_path_names_is_one_word_in_pareto_json_and_export_point():
    # api._recorded and Frontier.profile each decided what an answer records, in their own words ("the frontier's
    # Calibration" against "a Calibration object"): one rule, explore.export.recorded_profile
    from dataclasses import replace

    from llm_codesign.cost.calibration import calibration_for
    from llm_codesign.explore.export import recorded_profile, same_profile

    h100 = lc.get_gpu("h100")
    other = replace(calibration_for(h100), moe_routing_alpha=0.5)
    f = lc.pareto("llama-3.1-8b", "h100", num_gpus=1, tp=1, workload=lc.Workload(isl=512, osl=128), calibration=other)
    assert f.to_dict()["calibration_unrecorded"] == "a Calibration object"
    with pytest.raises(lc.InputError, match=r"^calibration: 'a Calibration object' is not valid; a path, or a Profile written to one"):
        lc.export_point(f, 0)
    assert recorded_profile(calibration_for(h100), h100) == (None, None) and recorded_profile(other, h100) == (None, "a Calibration object")
    assert recorded_profile(Path("x.toml"), h100) == ("x.toml", None)
    assert same_profile("x.toml", str(Path("x.toml").resolve())) and not same_profile("x.toml", None)
