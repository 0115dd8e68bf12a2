"""An engine added through the registry alone (issue 37): a module-level `Engine` object and its calibration
section, and nothing else edited, is priced, listed by the CLI and the web form, and refused by name
where it is not registered or its calibration section is missing. A twin of vLLM under another name
prices exactly as vLLM: no code path keys on an engine's name."""
import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import llm_codesign as lc
from llm_codesign.cost.calibration import BACKEND_KEYED, calibration_for
from llm_codesign.errors import InputError
from llm_codesign.spec.engines import ENGINES, VLLM, Engine, register_engine


class ToyEngine(Engine):
    """A made-up engine: 4096 tokens and at most 48 sequences a step, NCCL for every all-reduce."""

    def step_tokens(self, gpu) -> int:
        return 4096

    def max_batch(self, gpu, kv_tokens=None, context_len: int = 0):
        return 48.0

    def own_allreduce(self, nbytes, n, family: str):
        return np.zeros(np.broadcast_shapes(np.shape(nbytes), np.shape(n)), dtype=bool)


TOY = ToyEngine(name="toy", title="Toy", kv_budget=("total", 0.90, 0.5), reserve=(0.5, float("inf")), fusions=(),
                attention_kernels={}, pdl={}, deepgemm=False, fp8_cutlass=False, eh_proj_tp=False)
TWIN = replace(VLLM, name="twin", title="Twin")  # vLLM's documented defaults under another name


def profile(path: Path, gpu_id: str, names=("toy", "twin")) -> str:
    """A calibration profile giving each engine of `names` vLLM's fitted values (its sections)."""
    values = calibration_for(lc.get_gpu(gpu_id)).engine_values("vllm")
    path.write_text("".join(f"[default.{t}]\n" + "".join(f"{n} = {values[t]!r}\n" for n in names) for t in BACKEND_KEYED))
    return str(path)


@pytest.fixture
def registered():
    for e in (TOY, TWIN):
        register_engine(e)
    yield
    for e in (TOY, TWIN):
        ENGINES.pop(e.name)


@pytest.mark.parametrize("model, args", [
    ("deepseek-r1", dict(gpu="h200", num_gpus=8, ep=8)),  # Hopper: DeepGEMM, MLA's attention kernels, custom all-reduce
    ("llama-3.1-70b", dict(gpu="b200", num_gpus=8, weight_dtype="fp8")),  # Blackwell: fused norms, BF16-KV decode, PDL
])
def test_a_twin_of_vllm_prices_as_vllm(registered, tmp_path, model, args):
    m = lc.get_model(model)
    cal = profile(tmp_path / "p.toml", args["gpu"])
    w = lc.Workload(isl=2048, osl=512, concurrency=64)
    got = {e: lc.estimate(m, lc.deployment(m, engine=e, **args), w, calibration=cal, breakdown=True).to_dict() for e in ("vllm", "twin")}
    assert got["twin"].pop("backend") == "twin" and got["vllm"].pop("backend") == "vllm"
    # the intervals differ, rightly: the twin has no measured run of its own, so its band widens and says why
    assert all(any(w.startswith("no serving run with Twin") for w in b["widened"]) for b in got["twin"].pop("intervals").values())
    got["vllm"].pop("intervals")
    # what sets the batch names each engine's own limit and its option (serve.estimate.batch_limit; a twin has no flag name)
    v, t = got["vllm"].pop("max_batch_text"), got["twin"].pop("max_batch_text")
    assert t == v.replace("vllm's", "twin's").replace("(--max-num-seqs)", "(its batch limit)"), (t, v)
    assert json.dumps(got["twin"], sort_keys=True, default=str) == json.dumps(got["vllm"], sort_keys=True, default=str)


def test_a_toy_engine_is_priced_with_its_own_defaults(registered, tmp_path):
    m = lc.get_model("llama-3.1-8b")
    cal = profile(tmp_path / "p.toml", "h100")
    dep = lc.deployment(m, gpu="h100", engine="toy")
    r = lc.estimate(m, dep, lc.Workload(isl=1024, osl=256, concurrency=64), calibration=cal).to_dict()
    # its step budget and batch limit: 48 of the 64 requests run at once, the other 16 wait for whole requests (queued)
    # (it reserves ISL + OSL: reserve 0.5 of the OSL is no less than the 0.5 a running sequence holds); the memory holds all 64
    assert (r["backend"], r["max_num_tokens"], r["max_batch"], r["fits"], r["queued"]) == ("toy", 4096, 48, True, 16)
    assert r["output_tok_s_per_gpu"] < 48 / (r["tpot_ms"] / 1e3)  # no more than 48 sequences' tokens, less the prefill
    vllm = lc.estimate(m, lc.deployment(m, gpu="h100", engine="vllm"), lc.Workload(isl=1024, osl=256, concurrency=64), calibration=cal).to_dict()
    assert (vllm["max_num_tokens"], vllm["fits"]) == (8192, True) and vllm["max_batch"] > 64 and r["ttft_ms"] > vllm["ttft_ms"]


def test_a_missing_section_or_name_is_one_line(registered, tmp_path):
    m = lc.get_model("llama-3.1-8b")
    dep = lc.deployment(m, gpu="h100", engine="toy")
    with pytest.raises(InputError, match=r"^engine: 'toy' is not valid; a name every per-engine calibration table lists; missing from "
                                         r"\[default.step_overhead_s\], .*\[default.seq_overhead_s\] \(data/calibration/default.toml"):
        lc.estimate(m, dep, lc.Workload(isl=1024, osl=256, concurrency=8))  # the bundled profile has no toy
    with pytest.raises(InputError, match=r"^backend: 'nope' is not valid; one of: trtllm, vllm, sglang, atom, toy, twin$"):
        lc.deployment(m, gpu="h100", engine="nope")


def test_the_cli_and_the_web_form_list_a_registered_engine(tmp_path):
    """In a fresh process: the engine registered before the CLI and the web app load is in --backend's
    help, the web form's choices and the exporters' refusal, and the CLI prices it."""
    pytest.importorskip("fastapi", reason="the web form needs the serve extra")
    cal = profile(tmp_path / "p.toml", "h100")
    code = f"""
import sys, typing, json
sys.path.insert(0, {str(Path(__file__).parent)!r})
import test_registry_extend as t
from llm_codesign.spec.engines import register_engine
register_engine(t.TOY)
from typer.testing import CliRunner
from llm_codesign.cli import app
from llm_codesign.cli.common import O_BACKEND
from llm_codesign.web.app import Engine
r = CliRunner().invoke(app, ["estimate", "llama-3.1-8b", "--gpu", "h100", "--backend", "toy", "--concurrency", "8",
                             "--calibration", {cal!r}, "--json"])
x = CliRunner().invoke(app, ["export", "llama-3.1-8b", "--gpu", "h100", "--engine", "toy", "-o", {str(tmp_path / "x.yaml")!r}])
print(json.dumps([O_BACKEND.help, typing.get_args(Engine), r.exit_code, json.loads(r.stdout)["backend"], x.exit_code, x.output]))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    help_, choices, code_, backend, x_code, x_out = json.loads(out.stdout.strip().splitlines()[-1])
    assert help_.startswith("trtllm, vllm, sglang, atom or toy (default: ") and choices == ["trtllm", "vllm", "sglang", "atom", "toy"]
    assert (code_, backend) == (0, "toy")
    # no exporter is registered for it: export refuses in one line naming those that are, and why not it
    assert x_code == 2 and " ".join(x_out.split()) == ("error: backend: 'toy' is not valid; one of: trtllm, vllm, sglang, dynamo (Toy has no "
                                                       "launch-configuration writer: it is priced, not exported)")


def test_engines_says_an_engine_without_an_exporter_is_priced_not_exported(registered):
    # the words came from each engine's about= (ATOM wrote them by hand); `engines` adds them for those outside EXPORTABLE
    from typer.testing import CliRunner

    from llm_codesign.cli import app

    r = CliRunner().invoke(app, ["engines", "--json"])
    about = {e["name"]: e["about"] for e in json.loads(r.stdout)}
    assert about["toy"] == "priced, not exported" and about["atom"] == "AMD's engine on AITER; priced, not exported"
    assert not about["vllm"].endswith("priced, not exported") and about["twin"] == about["vllm"] + "; priced, not exported"
