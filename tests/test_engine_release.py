"""Every answer names the engine release it prices (Engine.release, the measured runs' releases: newcomer finding #14):
estimate, compare, pareto, import and export, in --json (`engine_release`) and on the engine line; and an export writes
the priced capture where the release it writes options for would capture another batch by default."""
import json

import pytest
from conftest import cli

import llm_codesign as lc
from llm_codesign.explore.export import engine_spec, export_config
from llm_codesign.spec.engines import ENGINES

RELEASES = {"vllm": "0.11-0.14", "sglang": "0.5.7-0.5.23", "trtllm": "1.3.0rc1-1.3.0rc27", "atom": "ROCm/ATOM@ffdf3bb5"}
E8 = ("llama-3.1-8b", "--gpu", "h100", "--concurrency", "8")


def _json(*args):
    code, out, err = cli(*args, "--json")
    assert code == 0, err
    return json.loads(out)


def test_engines_list_the_release_with_its_note_as_before():
    assert {n: ENGINES[n].release for n in RELEASES} == RELEASES
    # `llm-codesign engines`' column: the release, then what departs from it
    assert ENGINES["vllm"].versions == "0.11-0.14 (a few defaults read up to 0.24; export's options at 0.33.0)"
    assert ENGINES["trtllm"].versions == "1.3.0rc1-1.3.0rc27 (export's options at 1.4.0rc4)"
    assert ENGINES["sglang"].versions == "0.5.7-0.5.23" and ENGINES["vllm"].priced_as == "vllm (defaults as 0.11-0.14)"


@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm"])
def test_estimate_names_the_release_it_prices(engine):
    assert _json("estimate", *E8, "--backend", engine)["engine_release"] == RELEASES[engine]
    code, out, _ = cli("estimate", *E8, "--backend", engine)
    assert code == 0 and f"{engine} (defaults as {RELEASES[engine]})" in " ".join(out.split())


def test_export_says_the_priced_release_on_its_predicted_line(tmp_path):
    out = tmp_path / "v.yaml"
    code, text, err = cli("export", *E8, "--backend", "vllm", "-o", str(out))
    said = " ".join((text + err).split())
    # the file's options at 0.33.0, the figures at 0.11-0.14's defaults
    assert code == 0 and f"options as vllm {engine_spec('vllm')['version']} reads them" in said and engine_spec("vllm")["version"] == "0.33.0"
    assert "priced at 0.11-0.14" in said
    assert "predicted (vllm, defaults as 0.11-0.14): TTFT" in said
    d = _json("export", *E8, "--backend", "vllm", "-o", str(out))
    assert (d["version"], d["engine_release"]) == ("0.33.0", "0.11-0.14")
    back = _json("import", str(out))
    assert back["engine_release"] == "0.11-0.14" and back["tpot_ms"] == pytest.approx(d["predicted"]["tpot_ms"], rel=1e-6)
    code, text, _ = cli("import", str(out))
    assert code == 0 and "vllm (defaults as 0.11-0.14): 8 requests" in " ".join(text.split())


def test_compare_and_pareto_name_the_release():
    c = _json("compare", "llama-3.1-8b", "--gpu", "h100", "--gpus", "1", "--backend", "sglang")
    rows = c["rows"] if isinstance(c, dict) else c
    assert rows and {r["engine_release"] for r in rows} == {"0.5.7-0.5.23"}
    code, out, _ = cli("compare", "llama-3.1-8b", "--gpu", "h100", "--gpus", "1", "--backend", "sglang")
    assert code == 0 and "on 1x h100, sglang (defaults as 0.5.7-0.5.23)" in " ".join(out.split())
    p = _json("pareto", "llama-3.1-8b", "--gpu", "h100", "--gpus", "1", "--backend", "trtllm")
    assert p["backend"] == "trtllm" and p["engine_release"] == "1.3.0rc1-1.3.0rc27"


def _small_gpu(tmp_path):
    # an L40S with 24 GiB as the driver reports it: SGLang's default capture there is 24 at TP1 at the runs' releases
    # (graph_max_bs: 20-35 GiB, tp_size < 4), 48 at 0.5.23, the release the export writes for (EXPORT_SMALL_GPU_BS)
    from importlib import resources

    toml = resources.files("llm_codesign").joinpath("data/gpus/l40s.toml").read_text()
    lines = [("id = \"small24\"" if ln.startswith("id = ") else "aliases = []" if ln.startswith("aliases = ")
              else "memory_bytes = 25769803776" if ln.startswith("memory_bytes = ") else ln) for ln in toml.splitlines()]
    path = tmp_path / "small24.toml"
    path.write_text("\n".join(lines) + "\n")
    return lc.get_gpu(str(path))


def test_sglang_export_writes_the_priced_capture_where_its_release_moved_the_default(tmp_path):
    from llm_codesign.spec.engines.sglang import export_graph_max_bs, graph_max_bs

    g = _small_gpu(tmp_path)
    assert (float(graph_max_bs(g, 1)), float(export_graph_max_bs(g, 1))) == (24.0, 48.0)
    assert (float(graph_max_bs(g, 4)), float(export_graph_max_bs(g, 4))) == (80.0, 160.0)
    m = lc.get_model("llama-3.1-8b")
    dep = lc.deployment(m, gpu=g, weight_dtype="fp8", kv_dtype="fp8", backend="sglang")
    assert dep.cuda_graph_max_bs is None  # the engine's default capture, priced at 24
    # 32 requests a rank: priced with graphs up to 24 (the rest eager); 0.5.23 left to its default would capture 48, all
    # of them: the file writes 24
    text = export_config(m, dep, engine="sglang", concurrency=32, file_name="s.sh")
    assert "--cuda-graph-max-bs-decode 24" in text
    # 16 requests: both captures hold them, nothing written
    assert "cuda-graph" not in export_config(m, dep, engine="sglang", concurrency=16, file_name="s.sh")
    # priced as the estimate it was written from (the header dropped: an export names its GPU by id, this one's a file)
    plain = tmp_path / "s.sh"
    plain.write_text("\n".join(ln for ln in text.splitlines() if not ln.startswith("# llm-codesign export")))
    est = lc.estimate(m, dep, lc.Workload(isl=1024, osl=1024, concurrency=32)).to_dict()
    back = lc.import_config(str(plain), gpu=g, concurrency=32).to_dict()
    assert back["deployment"]["cuda_graph_max_bs"] == 24
    for k in ("ttft_ms", "tpot_ms", "output_tok_s_per_gpu"):
        assert back[k] == pytest.approx(est[k], rel=1e-6), k
    # a catalog GPU's releases agree (H100, 80 GB: 256 at TP1 both): the file is as before
    h = lc.deployment(m, gpu="h100", backend="sglang")
    assert "cuda-graph" not in export_config(m, h, engine="sglang", concurrency=64, file_name="s.sh")
