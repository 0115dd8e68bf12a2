"""The memory model against runs that ran (fixmem): the weights it counts for DeepSeek-R1 FP8, derived by hand from the
checkpoint's tensors, every shipped serving measurement's row held by it, and validate's policy on a row it refuses."""
from pathlib import Path

import numpy as np
import pytest

from llm_codesign.cost import memory
from llm_codesign.measure.validate import predict_serving, read_rows, serving_report
from llm_codesign.spec.plan import Plan
from llm_codesign.spec.precision import Precision
from llm_codesign.spec.registry import get_model

MEAS = Path(__file__).resolve().parents[1] / "src" / "llm_codesign" / "data" / "measurements"


def test_deepseek_r1_fp8_weights_per_gpu_at_tp4_are_the_checkpoints_less_its_mtp_layer():
    # DeepSeek-R1's FP8 checkpoint (config.json: hidden 7168, 61 layers, the first 3 dense of width 18432, 256 routed experts
    # of width 2048 + 1 shared, q_lora 1536, kv_lora 512 + rope 64, 128 heads of 128 + 64 / v 128, vocabulary 129280), one
    # byte a weight, held on 4 GPUs at TP 4 / MoE-TP 4 (block scales: 4 B per 128x128 block, 0.02% of the bytes, not counted
    # under "fp8"; norms, 32 KB a layer, not counted):
    #   MLA: q_a 7168x1536 + kv_a 7168x576 on every rank (15,138,816), q_b 1536x24576 + kv_b 512x32768 + o 16384x7168
    #        split 4 ways (171,966,464 / 4): 58,130,432 B a layer
    #   dense MLP 3x7168x18432 / 4 = 99,090,432 B (layers 0-2)
    #   MoE: 256 x 3x7168x2048 / 4 + shared 3x7168x2048 / 4 + router 7168x256 in BF16 on every rank = 2,833,252,352 B (58 layers)
    #   embedding and LM head in BF16 split 4 ways: 2 x 129280x7168x2 / 4 = 926,679,040 B
    # 61 x 58,130,432 + 3 x 99,090,432 + 58 x 2,833,252,352 + 926,679,040 = 169,098,543,104 B. Over the 4 GPUs, less the
    # replicated down-projections and routers, 672.99 GB: the checkpoint's 688.59 GB (model.safetensors.index.json
    # total_size 688,586,727,753 of DeepSeek-V3, whose tensors R1 shares) less its MTP layer 61 (one MoE layer 11.51 GB,
    # eh_proj 0.21 GB and its own embedding and head 3.71 GB in BF16: 15.43 GB), which SGLang loads only with NEXTN, and the
    # 0.16 GB of block scales: the memory model counts no weight that is not loaded
    m = get_model("deepseek-r1")
    w = memory.weight_bytes_per_gpu(m, Precision.of("fp8"), Plan(tp=4, moe_tp=4))
    assert float(w) == 169_098_543_104


def _memory_rows(path):
    rows = read_rows(path)
    preds, unmodeled = predict_serving(rows)
    refused = [(rows[i], p) for i, p in enumerate(preds) if p and p.get("memory_refused")]
    cannot = [u for u in unmodeled if "cannot run: needs" in u["reason"] or "GPU memory" in u["reason"]]
    over = [i for i, p in enumerate(preds) if p and not p.get("fits", True) and not p.get("memory_refused")]
    return refused, cannot, over


# every shipped serving measurement: runs the memory model refuses (priced with its check bypassed), runs it leaves unpriced for
# memory, and runs whose concurrency it says the deployment would not hold at once (priced: they queue; a count, not a failure)
# (attnproj, 2026-12-08: DeepSeek-R1 NVFP4's q/kv projections priced BF16 as the checkpoint keeps them (more weight bytes a GPU),
# so TensorRT-LLM's TP4 B200 run at 256 requests of 8192/1024 no longer holds all 256 at once: 14 -> 15, 18 -> 19)
SHIPPED = {"serving_measured_blackwell_clean.csv": (4, 15), "serving_measured_blackwell.csv": (10, 19),
           "serving_inferencex_blackwell.csv": (0, 0), "serving_inferencex_mi355x.csv": (0, 0), "serving_disagg_blackwell.csv": (0, 54),
           "published_runs.csv": (0, 0), "published_mtp_depth.csv": (0, 0), "trtllm_perf_overview.csv": (0, 0)}


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_every_shipped_run_is_held_by_the_memory_model(name):
    refused, cannot, over = _memory_rows(MEAS / name)
    n_refused, n_over = SHIPPED[name]
    # no run is left unpriced for memory: a run the model cannot hold even on the whole GPU would be a mislabelled plan
    assert cannot == [], cannot[:3]
    # the only deployment the memory model refuses: DeepSeek-R1 FP8 on 4 B200s under SGLang 0.5.9 at 8k/1k (image
    # lmsysorg/sglang:v0.5.9-cu130 in the sample's silicon_data_source). 169.1 GB of weights + 0.3 GB for one 9,216-token
    # sequence against SGLang's default mem_fraction_static 0.855 of 192.3 GB (server_args.py:1020-1063@0.5.9: 512 + 1.5 x
    # 16384 + 2 x 512 + 4/8 x 1024 MiB reserved of 183,359 MiB) = 164.4 GB: 5.06 GB short. The run ran, so its launch raised
    # mem_fraction_static to at least 0.881, a flag the sample does not record (SOURCES.md)
    assert len(refused) == n_refused
    for row, p in refused:
        # (the sample's dsr1_ runs are labelled DeepSeek-V3, the same architecture: SOURCES.md)
        assert row["model"] in ("deepseek-ai/DeepSeek-R1", "deepseek-ai/DeepSeek-V3")
        assert (row["gpu"], row["backend"], row["weight_dtype"], row["tp"], row["isl"]) == ("b200", "sglang", "fp8", "4", "8192")
        assert round(p["memory_short_gb"], 2) == 5.06 and p["ttft_ms"] > 0 and p["tpot_ms"] > 0
    assert len(over) == n_over, f"{name}: {len(over)} runs at a concurrency the memory model says the deployment does not hold at once"


def test_a_run_the_memory_model_refuses_is_priced_counted_and_flagged(tmp_path):
    # the clean sample's c4 run (line 728 of the sample as shipped): TTFT 585.9 ms, TPOT 11.54 ms. Priced with the engine's
    # memory fraction raised to the whole GPU, it holds 75 sequences of 9,216 tokens (192.3 - 169.1 GB over 0.31 GB), so
    # it queues nowhere; counted in the stats and listed with estimate's refusal and the shortfall
    head = "source,model,gpu,num_gpus,backend,weight_dtype,isl,osl,concurrency,tp,moe_tp,ttft_ms,tpot_ms\n"
    s = tmp_path / "s.csv"
    s.write_text(head + "a,deepseek-ai/DeepSeek-R1,b200,4,sglang,fp8,8192,1024,4,4,4,585.9,11.54\n")
    rows = read_rows(s)
    preds, unmodeled = predict_serving(rows)
    assert unmodeled == [] and preds[0]["fits"] is False and round(preds[0]["memory_short_gb"], 2) == 5.06
    assert preds[0]["memory_refused"].startswith("TP4 EP1/MoE-TP4 on 4xb200 cannot run: needs 157.8 GiB per GPU for one sequence, "
                                                 # 169.4e9 B / 2^30 = 157.8 GiB; 192.3e9 B = 179.1 GiB, x 0.855 = 153.1 GiB
                                                 "B200 reports 179.1 GiB (180 GB on the data sheet; 153.1 GiB usable by sglang)")
    assert np.isclose(preds[0]["tpot_ms"], 11.54, rtol=0.15)
    rep = serving_report(rows, preds, unmodeled)
    assert rep["modeled"] == 1 and rep["overall"]["tpot_ms"]["n"] == 1 and len(rep["memory_refused"]) == 1
    # validate lists it apart from the rows it leaves out, with the shortfall
    code, out = _cli("validate", "--serving", str(s))
    assert code == 0 and "1 of 1 rows modelled" in out
    assert "1 row the memory model says cannot run, priced with its memory check bypassed and counted above: if it ran" in out
    assert "(line 2); short by 4.7 GiB per GPU for one sequence" in out  # 5.06e9 B / 2^30 = 4.71 GiB



def _cli(*args):
    from typer.testing import CliRunner

    from llm_codesign.cli import app

    r = CliRunner().invoke(app, list(args), env={"COLUMNS": "2000"})
    return r.exit_code, " ".join(r.stdout.split())
