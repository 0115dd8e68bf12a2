"""Engine exports: every key a documented option of the stated engine version, and the way back gives the
same deployment (explore/export.py, explore/export_engines/, data/engines/*.toml)."""
import json
import shlex
from dataclasses import replace

import pytest
import yaml  # PyYAML: an independent parser of what the exports write

from llm_codesign.errors import InputError
from llm_codesign.explore.export import engine_spec, export_config, export_dynamo, read_dynamo, read_export
from llm_codesign.explore.export_engines.base import per_rank
from llm_codesign.explore.search import SearchSpace, plans
from llm_codesign.spec.engines import get_engine
from llm_codesign.spec.hardware import get_gpu
from llm_codesign.spec.plan import Deployment, Plan, SpecDecoding
from llm_codesign.spec.precision import Precision
from llm_codesign.spec.registry import get_model


def documented(engine: str, opts: dict):
    """Assert every key is one of the engine's documented options, and every key of a mapping value one of
    the fields the data documents for that option (an option with no [nested] entry takes no mapping)."""
    es = engine_spec(engine)
    allowed, nested = set(es["options"]), es.get("nested", {})
    for k, v in opts.items():
        assert k in allowed, f"{k} is not a documented {engine} {es['version']} option"
        if isinstance(v, dict):
            assert k in nested, f"{k} takes a mapping that {engine}.toml does not document"
            assert set(v) <= set(nested[k]["keys"]), (k, set(v) - set(nested[k]["keys"]))
            assert not any(isinstance(x, dict) for x in v.values())  # one level deep, as documented


def parsed(engine: str, text: str) -> dict:
    """The options of an export as the engine would read them: YAML for vLLM/TensorRT-LLM, argv for SGLang."""
    if engine == "sglang":
        words = shlex.split(" ".join(x for x in text.replace("\\\n", " ").splitlines() if not x.startswith("#")))
        assert words[:3] == ["python", "-m", "sglang.launch_server"]
        opts, key = {}, None
        for w in words[3:]:
            if w.startswith("--"):
                key = w[2:]
                opts[key] = True
            else:
                opts[key] = w
        return opts
    return yaml.safe_load(text)


def deployments():
    h200, b200 = get_gpu("h200"), get_gpu("b200")
    llama, r1 = get_model("llama-3.1-70b"), get_model("deepseek-r1")
    mtp = SpecDecoding("mtp", 3, 2.6)
    yield llama, Deployment(gpu=h200, num_gpus=8, plan=Plan(8), precision=Precision.of("fp8", kv="fp8"), max_num_tokens=4096), 64
    yield llama, Deployment(gpu=h200, num_gpus=4, plan=Plan(2, 2), precision=llama.default_precision), 16
    yield r1, Deployment(gpu=b200, num_gpus=8, plan=Plan(1, 1, 8, 1, 8, 1), precision=r1.default_precision, spec=mtp), 512
    yield r1, Deployment(gpu=b200, num_gpus=8, plan=Plan(8, 1, 1, 8, 1, 1), precision=r1.default_precision), 32
    # Helix KV parallelism and an EAGLE-3 draft model: the nested cp_config and the draft's speculative keys
    eagle = SpecDecoding("eagle3", 3, 2.4, draft_model="yuhuili/EAGLE3-LLaMA3.1-Instruct-8B")
    yield llama, Deployment(gpu=h200, num_gpus=8, plan=Plan(4, 1, 1, 1, 1, 2), precision=llama.default_precision, spec=eagle), 32


@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm"])
def test_export_keys_are_documented_and_read_back(engine):
    for model, dep, conc in deployments():
        dep = replace(dep, backend=engine)
        text = export_config(model, dep, engine=engine, concurrency=conc)
        documented(engine, parsed(engine, text))
        if engine == "trtllm":
            launch = next(x for x in text.splitlines() if x.startswith("# launch: "))[len("# launch: "):]
            flags = [w[2:] for w in shlex.split(launch) if w.startswith("--")]
            assert set(flags) <= set(engine_spec("trtllm")["command_options"])
        back = read_export(text)
        # the export states the step budget the estimate assumed (the engine's default where none was set), and TensorRT-LLM's
        # CUDA graphs padded up to the per-rank batch (the LLM API's default capture stops at 128), which its import reads
        graphs = {"cuda_graph_max_bs": per_rank(conc, int(dep.plan.adp))} if engine == "trtllm" else {}
        # and its batch cap, the rank's share of the concurrency (max_batch_size / max-num-seqs / max-running-requests)
        assert back.deployment == replace(dep, max_num_tokens=dep.step_tokens, max_batch=per_rank(conc, int(dep.plan.adp)), **graphs)
        # every engine loads fp8 weights from an fp8 checkpoint, the registry's of this shape (nvidia's, llama-3.1-70b-fp8), which
        # is read back as the model the header names: the round trip's own entry (newc8 #6: it came back as llama-3.1-70b-fp8)
        assert "Llama-3.1-70B-Instruct-FP8" in text or dep.precision.weight == model.default_precision.weight
        assert back.concurrency == conc and back.model.name == model.name


def test_engine_options_state_the_plan():
    """The figures in the files are the deployment's own: sizes, per-rank batch, step budget, KV format."""
    r1, b200 = get_model("deepseek-r1"), get_gpu("b200")
    dep = Deployment(gpu=b200, num_gpus=8, plan=Plan(1, 1, 8, 1, 8, 1), precision=Precision.of("fp8_block", kv="fp8"),
                     backend="vllm", max_num_tokens=2048, spec=SpecDecoding("mtp", 2, 2.2))
    o = yaml.safe_load(export_config(r1, dep, engine="vllm", concurrency=512))
    assert (o["tensor-parallel-size"], o["data-parallel-size"], o["enable-expert-parallel"]) == (1, 8, True)
    assert (o["max-num-seqs"], o["max-num-batched-tokens"], o["kv-cache-dtype"]) == (64, 2048, "fp8")
    assert o["speculative-config"] == {"method": "mtp", "num_speculative_tokens": 2}
    assert "quantization" not in o  # the checkpoint's own FP8 blocks
    t = yaml.safe_load(export_config(r1, replace(dep, backend="trtllm"), engine="trtllm", concurrency=512))
    assert (t["tensor_parallel_size"], t["enable_attention_dp"], t["moe_expert_parallel_size"], t["max_batch_size"]) == (8, True, 8, 64)
    assert t["speculative_config"] == {"decoding_type": "MTP", "max_draft_len": 2}
    # TensorRT-LLM's chunked prefill at its default, off (whole prompts a step, as the estimate prices them), on only where
    # a prompt is longer than the 2,048-token budget (it runs chunked or not at all)
    assert "enable_chunked_prefill" not in t and t["max_num_tokens"] == 2048
    long = yaml.safe_load(export_config(r1, replace(dep, backend="trtllm"), engine="trtllm", concurrency=512, extra={"isl": 4096, "osl": 256}))
    assert long["enable_chunked_prefill"] is True
    s = parsed("sglang", export_config(r1, replace(dep, backend="sglang"), engine="sglang", concurrency=512))
    assert (s["tp-size"], s["attn-dp-size"], s["ep-size"], s["max-running-requests"]) == ("8", "8", "8", "512")


@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm"])
def test_every_searched_plan_round_trips(engine):
    """Each plan the search tries for an engine (search.plans: Engine.runs_plans) exports and reads back unchanged; the
    plans it leaves out (vLLM: EP x MoE-TP; TensorRT-LLM: attention DP x TP) are refused in one line as a Deployment."""
    r1, b200 = get_model("deepseek-r1"), get_gpu("b200")
    plan, inst = plans(r1, b200, SearchSpace(8), engine=get_engine(engine))
    every, every_inst = plans(r1, b200, SearchSpace(8), engine=get_engine("sglang"))  # SGLang launches every one of them
    for i in range(len(inst)):
        p = Plan(*(int(x[i]) for x in (plan.tp, plan.pp, plan.ep, plan.moe_tp, plan.adp, plan.kvp)))
        dep = Deployment(gpu=b200, num_gpus=int(inst[i]), plan=p, precision=r1.default_precision, backend=engine)
        back = read_export(export_config(r1, dep, engine=engine, concurrency=40))
        assert back.deployment.plan == dep.plan and back.concurrency >= 40
    assert len(inst) >= 10 and (len(inst) == len(every_inst)) == (engine == "sglang")
    left = {every.at(i) for i in range(len(every_inst))} - {plan.at(i) for i in range(len(inst))}
    for p in left:
        with pytest.raises(InputError, match=f"plan: '{p.label()}' is not valid; a plan {get_engine(engine).title} launches"):
            Deployment(gpu=b200, num_gpus=int(p.gpus), plan=p, precision=r1.default_precision, backend=engine)


@pytest.mark.parametrize("backend", ["trtllm", "vllm", "sglang"])
def test_dynamo_manifest(backend):
    r1, b200 = get_model("deepseek-r1"), get_gpu("b200")
    pre = Deployment(gpu=b200, num_gpus=8, plan=Plan(8, 1, 8, 1, 1, 1), precision=r1.default_precision, backend=backend, max_num_tokens=8192)
    dec = Deployment(gpu=b200, num_gpus=8, plan=Plan(1, 1, 8, 1, 8, 1), precision=r1.default_precision, backend=backend, max_num_tokens=8192)
    text = export_dynamo(r1, prefill=pre, decode=dec, prefill_instances=3, decode_instances=2, concurrency=1024)
    doc = yaml.safe_load(text)
    ds = engine_spec("dynamo")
    assert (doc["apiVersion"], doc["kind"]) == (ds["api_version"], ds["kind"])

    def paths(obj, prefix=""):
        if isinstance(obj, dict):
            for k, v in obj.items():
                yield prefix + k
                yield from paths(v, prefix + k + ".")
        elif isinstance(obj, list):
            for v in obj:
                yield from paths(v, prefix[:-1] + "[].")

    assert set(paths(doc)) <= set(ds["manifest_keys"])
    comps = {c["type"]: c for c in doc["spec"]["components"]}
    assert set(comps) == {"frontend", "prefill", "decode"}
    assert (comps["prefill"]["replicas"], comps["decode"]["replicas"]) == (3, 2)
    for kind in ("prefill", "decode"):
        box = comps[kind]["podTemplate"]["spec"]["containers"][0]
        assert box["command"] == ["python3", "-m", f"dynamo.{backend}"]
        assert box["resources"]["limits"]["nvidia.com/gpu"] == "8"
        flags = {w[2:] for w in box["args"] if w.startswith("--")}
        allowed = set(ds["options"][backend]) | (set(engine_spec(backend)["options"]) if backend != "trtllm" else set())
        assert flags <= allowed, flags - allowed
        if backend == "trtllm":
            documented("trtllm", json.loads(box["args"][box["args"].index("--override-engine-args") + 1]))
    fe = comps["frontend"]["podTemplate"]["spec"]["containers"][0]
    assert {w[2:] for w in fe["args"] if w.startswith("--")} <= set(ds["options"]["frontend"])
    back = read_dynamo(text)
    # each pool's batch cap per rank, ceil(1024 / 3) and 1024 / 2 / 8, and TensorRT-LLM's CUDA graphs padded up to it
    pre, dec = replace(pre, max_batch=342), replace(dec, max_batch=64)
    if backend == "trtllm":
        pre, dec = replace(pre, cuda_graph_max_bs=342), replace(dec, cuda_graph_max_bs=64)
    assert back["prefill"]["deployment"] == pre and back["decode"]["deployment"] == dec
    assert (back["prefill"]["instances"], back["decode"]["instances"]) == (3, 2)
    if backend == "trtllm":  # the engine fields inside the worker's override mapping are checked too
        with pytest.raises(InputError, match="cuda_graph_config.padding"):
            read_dynamo(text.replace('"enable_padding"', '"padding"'))


def test_refusals_are_one_line():
    r1, h200 = get_model("deepseek-r1"), get_gpu("h200")
    with pytest.raises(InputError, match="a plan vLLM launches \\(it runs the experts expert-parallel"):
        Deployment(gpu=h200, num_gpus=8, plan=Plan(8, 1, 4, 2, 1, 1), precision=r1.default_precision, backend="vllm")
    dep = Deployment(gpu=h200, num_gpus=8, plan=Plan(8, 1, 4, 2, 1, 1), precision=r1.default_precision, backend="trtllm")
    with pytest.raises(InputError, match="exported engine"):
        export_config(r1, dep, engine="sglang", concurrency=8)
    with pytest.raises(InputError, match="one of: trtllm, vllm, sglang, dynamo"):
        engine_spec("tgi")
    with pytest.raises(InputError, match="llm-codesign export"):
        read_export("model: x\n")


def test_nested_keys_come_from_the_engine_data():
    """Each mapping-valued option states its class, version and source; the exports write every nested key
    through that list (TensorRT-LLM's kv_cache_config, cuda_graph_config, cp_config, speculative_config and
    vLLM's speculative-config), and an import refuses a field the list does not hold."""
    from llm_codesign.explore.export_engines.base import nested
    from llm_codesign.explore.export_engines.trtllm import trtllm_options

    for name in ("vllm", "trtllm"):
        for opt, n in engine_spec(name)["nested"].items():
            assert opt in engine_spec(name)["options"] and n["class"] and n["version"] and n["source"] and n["keys"]
    with pytest.raises(KeyError, match="kv_cache_config.free_memory is not a documented trtllm"):
        nested("trtllm", "kv_cache_config", free_memory=0.9)
    llama, h200 = get_model("llama-3.1-70b"), get_gpu("h200")
    dep = Deployment(gpu=h200, num_gpus=8, plan=Plan(4, 1, 1, 1, 1, 2), precision=Precision.of("fp8", kv="fp8"), backend="trtllm")
    o = trtllm_options(llama, dep, 64)
    assert o["cp_config"] == {"cp_type": "HELIX"} and o["kv_cache_config"] == {"dtype": "fp8", "free_gpu_memory_fraction": 0.9}
    assert o["cuda_graph_config"] == {"enable_padding": True, "max_batch_size": 64}
    text = export_config(llama, dep, engine="trtllm", concurrency=64)
    assert read_export(text).deployment.plan == dep.plan
    with pytest.raises(InputError, match="kv_cache_config.free_memory"):
        read_export(text.replace("free_gpu_memory_fraction:", "free_memory:"))
    with pytest.raises(InputError, match="max_batch_size.x"):  # a mapping where the option takes a number
        read_export(text.replace("max_batch_size: 64\n", "max_batch_size:\n  x: 1\n", 1))
    # a number where the option takes a mapping, and a context parallelism other than Helix: one line each
    i, j = text.index("kv_cache_config:"), text.index("\n", text.index("free_gpu_memory_fraction:"))
    with pytest.raises(InputError, match="kv_cache_config: 5.*a mapping of trtllm"):
        read_export(text[:i] + "kv_cache_config: 5" + text[j:])
    with pytest.raises(InputError, match="cp_config.cp_type: 'RING'"):
        read_export(text.replace('cp_type: HELIX', 'cp_type: RING'))


def test_engine_data_states_version_and_source():
    for name in ("vllm", "sglang", "trtllm"):
        es = engine_spec(name)
        assert es["version"] and es["source"] and es["engine"] == name
        assert len(es["options"]) == len(set(es["options"]))
    assert engine_spec("dynamo")["version"] == "1.6.1"
    # the documented flags of the stated versions, as extracted from their wheels
    assert {"tensor-parallel-size", "max-num-batched-tokens", "max-num-seqs", "speculative-config"} <= set(engine_spec("vllm")["options"])
    assert {"tp-size", "attn-dp-size", "chunked-prefill-size", "max-running-requests"} <= set(engine_spec("sglang")["options"])


def test_cli_export_then_import_prices_the_same(tmp_path):
    """`import` on an exported file reports what `estimate` reported for the flags that made it."""
    from typer.testing import CliRunner

    from llm_codesign.cli import app

    runner = CliRunner()
    args = ["llama-3.1-8b", "--gpu", "h100", "--tp", "2", "--concurrency", "32", "--isl", "2048", "--osl", "256",
            "--weight-dtype", "fp8", "--kv-dtype", "fp8", "--max-num-tokens", "4096"]
    for engine in ("vllm", "sglang", "trtllm"):
        out = tmp_path / f"{engine}.cfg"
        r = runner.invoke(app, ["export", *args, "--engine", engine, "-o", str(out)])
        assert r.exit_code == 0, r.output
        est = json.loads(runner.invoke(app, ["estimate", *args, "--backend", engine, "--json"]).stdout)
        back = json.loads(runner.invoke(app, ["import", str(out), "--json"]).stdout)
        for k in ("ttft_ms", "tpot_ms", "output_tok_s_per_gpu", "concurrency", "plan", "precision", "max_num_tokens", "engine_release"):
            assert back[k] == est[k], (engine, k)
        # the release the figures price, the runs' (Engine.release), beside the newer one the file's options are read at
        assert est["engine_release"] == {"vllm": "0.11-0.14", "sglang": "0.5.7-0.5.23", "trtllm": "1.3.0rc1-1.3.0rc27"}[engine]
    bad = runner.invoke(app, ["export", "deepseek-r1", "--gpu", "h200", "--tp", "8", "--ep", "4", "--engine", "vllm",
                              "-o", str(tmp_path / "x.yaml")])
    assert bad.exit_code == 2 and not (tmp_path / "x.yaml").exists()


def test_step_budget_is_searched_and_every_point_states_it():
    """--max-num-tokens-grid joins the step token budget to the space: the evaluated count grows by the
    grid's size, each point records its budget and batch, and the default search is unchanged."""
    from llm_codesign.cost.calibration import calibration_for
    from llm_codesign.explore.search import search

    m, g = get_model("llama-3.1-8b"), get_gpu("h100")
    cal = calibration_for(g)
    base = search(m, g, cal, SearchSpace(2), isl=2048, osl=256, engine=get_engine("vllm"), max_ttft_ms=1500)
    one = search(m, g, cal, SearchSpace(2, step_tokens=(2048,)), isl=2048, osl=256, engine=get_engine("vllm"), max_ttft_ms=1500)
    grid = search(m, g, cal, SearchSpace(2, step_tokens=(1024, 2048, 8192)), isl=2048, osl=256, engine=get_engine("vllm"), max_ttft_ms=1500)
    assert grid.evaluated == 3 * base.evaluated
    # vLLM's default on an 80 GB H100 is 8192 tokens a step: naming 2048 alone is another search, the grid holds both
    assert [p.output_tok_s_per_gpu for p in base.points] != [p.output_tok_s_per_gpu for p in one.points]
    best = lambda r: max(p.output_tok_s_per_gpu for p in r.points)  # noqa: E731
    assert best(grid) >= max(best(base), best(one))
    for p in grid.points:
        assert p.deployment.max_num_tokens in (1024, 2048, 8192) and p.concurrency >= 1


def test_export_point_of_a_frontier(tmp_path):
    from typer.testing import CliRunner

    from llm_codesign.cli import app

    runner = CliRunner()
    f = tmp_path / "f.json"
    r = runner.invoke(app, ["pareto", "qwen3-30b-a3b", "--gpu", "h100", "--gpus", "4", "--backend", "trtllm",
                            "--max-num-tokens-grid", "2048,8192", "--json"])
    assert r.exit_code == 0, r.output
    f.write_text(r.output)
    points = json.loads(r.stdout)["frontier"]
    for i in (0, len(points) - 1):
        out = tmp_path / f"p{i}.yaml"
        assert runner.invoke(app, ["export-point", str(f), "--index", str(i), "-o", str(out)]).exit_code == 0
        o = yaml.safe_load(out.read_text())
        rec = points[i]["deployment"]
        assert o["max_num_tokens"] == rec["max_num_tokens"]
        back = json.loads(runner.invoke(app, ["import", str(out), "--json"]).stdout)
        assert back["tpot_ms"] == pytest.approx(points[i]["tpot_ms"], rel=1e-9)
        assert back["output_tok_s_per_gpu"] == pytest.approx(points[i]["output_tok_s_per_gpu"], rel=1e-9)
    assert runner.invoke(app, ["export-point", str(f), "--index", "999", "-o", str(tmp_path / "x")]).exit_code == 2


def test_a_quantized_point_launches_the_registrys_checkpoint_of_its_format(tmp_path):
    """Newcomer review item 9: an fp8 point of llama-3.1-70b launched `trtllm-serve meta-llama/Llama-3.1-70B` (the bf16
    base) though the registry names nvidia/Llama-3.1-70B-Instruct-FP8 (registry.toml llama-3.1-70b-fp8): TensorRT-LLM
    quantizes nothing as it loads, so the launch names the checkpoint of the format, and import prices it the same."""
    from typer.testing import CliRunner

    from llm_codesign.cli import app
    from llm_codesign.explore.export_engines.base import quantized_checkpoint
    from llm_codesign.spec.precision import get_dtype

    q = lambda n, w: quantized_checkpoint(get_model(n), get_dtype(w, "weight_dtype"))  # noqa: E731
    assert (q("llama-3.1-70b", "fp8"), q("llama-3.3-70b", "fp8")) == ("nvidia/Llama-3.1-70B-Instruct-FP8", "nvidia/Llama-3.3-70B-Instruct-FP8")
    assert q("qwen3-32b", "nvfp4") == "nvidia/Qwen3-32B-NVFP4" and q("deepseek-r1", "nvfp4") == "nvidia/DeepSeek-R1-NVFP4"
    # no FP8 release of the 8B in the registry; kimi-k2.5 (int4) is one shape but another release than kimi-k2
    assert q("llama-3.1-8b", "fp8") is None and q("kimi-k2", "int4") is None and q("llama-3.1-70b", "bf16") is None
    runner = CliRunner()
    args = ["llama-3.1-70b", "--gpu", "h200", "--tp", "8", "--concurrency", "16", "--weight-dtype", "fp8", "--kv-dtype", "fp8"]
    out = tmp_path / "t.yaml"
    r = runner.invoke(app, ["export", *args, "--engine", "trtllm", "-o", str(out)])
    assert r.exit_code == 0, r.output
    text = out.read_text()
    assert "trtllm-serve nvidia/Llama-3.1-70B-Instruct-FP8 --backend pytorch" in text and "meta-llama/Llama-3.1-70B " not in text
    assert "# weights: fp8, read from nvidia/Llama-3.1-70B-Instruct-FP8 (the registry's fp8 checkpoint of this shape)" in text
    assert "point the model at such a checkpoint" not in text
    est = json.loads(runner.invoke(app, ["estimate", *args, "--backend", "trtllm", "--json"]).stdout)
    back = json.loads(runner.invoke(app, ["import", str(out), "--json"]).stdout)
    assert (back["precision"], back["tpot_ms"], back["ttft_ms"]) == (est["precision"], est["tpot_ms"], est["ttft_ms"])
    # vLLM and SGLang serve the same checkpoint (newc5 #4), not `quantization: fp8` (per-tensor dynamic FP8 of the BF16
    # base, another accuracy than the checkpoint quoted), say where the weights come from, and import prices the same
    r = runner.invoke(app, ["export", *args, "--engine", "vllm", "-o", str(tmp_path / "v.yaml")])
    o = yaml.safe_load((tmp_path / "v.yaml").read_text())
    assert r.exit_code == 0 and o["model"] == "nvidia/Llama-3.1-70B-Instruct-FP8" and "quantization" not in o
    assert "weights: fp8, read from nvidia/Llama-3.1-70B-Instruct-FP8" in r.output
    for eng, f in (("vllm", "v.yaml"), ("sglang", "s.sh")):
        r = runner.invoke(app, ["export", *args, "--engine", eng, "-o", str(tmp_path / f)])
        text = (tmp_path / f).read_text()
        assert r.exit_code == 0, r.output
        assert "--quantization" not in text and (eng == "vllm" or "--model-path nvidia/Llama-3.1-70B-Instruct-FP8" in text)
        est = json.loads(runner.invoke(app, ["estimate", *args, "--backend", eng, "--json"]).stdout)
        back = json.loads(runner.invoke(app, ["import", str(tmp_path / f), "--json"]).stdout)
        assert (back["precision"], back["tpot_ms"], back["ttft_ms"]) == (est["precision"], est["tpot_ms"], est["ttft_ms"])
    # no FP8 release of the 8B in the registry: vLLM quantizes as it loads, and serves the Instruct model the registry lists
    r = runner.invoke(app, ["export", "llama-3.1-8b", "--gpu", "h200", "--weight-dtype", "fp8", "--engine", "vllm", "-o", str(tmp_path / "8.yaml")])
    o = yaml.safe_load((tmp_path / "8.yaml").read_text())
    assert r.exit_code == 0 and (o["model"], o["quantization"]) == ("meta-llama/Llama-3.1-8B-Instruct", "fp8")
    # with no such checkpoint in the registry, the header says to point at one
    r = runner.invoke(app, ["export", "llama-3.1-8b", "--gpu", "h200", "--weight-dtype", "fp8", "--engine", "trtllm", "-o", str(tmp_path / "e.yaml")])
    assert r.exit_code == 0 and "point the model at such a checkpoint" in (tmp_path / "e.yaml").read_text()


def test_export_says_sglangs_fitted_request_cost_as_estimate_does(tmp_path):
    # newc11 #9: the chosen MI355X point runs 284 requests per instance; SGLang's fitted per-request cost (fitted.toml
    # ttft_overhead_s 24.8903 ms), served one at a time to a wave, is (284 + 1) / 2 x 24.8903 = 3546.9 ms of its TTFT:
    # export says it in estimate's words (serve.estimate.fitted_ttft_notes), in its text and its JSON
    from conftest import cli

    args = ["export", "qwen3-30b-a3b", "--gpu", "mi355x", "--gpus", "8", "--weight-dtype", "fp8", "--kv-dtype", "fp8",
            "--min-tps-user", "50", "-o", str(tmp_path / "q30.sh")]
    out = json.loads(cli(*args, "--json")[1])
    assert out["concurrency"] == 284
    assert len(out["fitted_notes"]) == 1 and out["fitted_notes"][0].startswith("3547 ms of TTFT (80%) is SGLang's fitted per-request cost")
    assert "note: 3547 ms of TTFT (80%) is SGLang's fitted per-request cost" in " ".join(cli(*args)[1].split())
