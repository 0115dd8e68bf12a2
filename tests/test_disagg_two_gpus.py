"""Disaggregated pools on two GPU types (issue 20): each pool is priced on its own GPU, and the KV
cache crosses both ends' NICs."""
import numpy as np
import pytest
from conftest import disagg_pair
from typer.testing import CliRunner

from llm_codesign.cli import app
from llm_codesign.cost.calibration import calibration_for
from llm_codesign.cost.memory import kv_bytes_per_token
from llm_codesign.serve.disagg import evaluate_disagg
from llm_codesign.spec.hardware import get_gpu
from llm_codesign.spec.plan import Plan
from llm_codesign.spec.registry import get_model

M = get_model("llama-3.1-70b")
PREC = M.default_precision
P, D = Plan.parse("tp=4", M, "prefill"), Plan.parse("tp=8", M, "decode")
C, ISL, OSL = np.array([1.0, 16.0]), 4096, 512


def _run(prefill_gpu, decode_gpu, decode=D):
    gp, gd = get_gpu(prefill_gpu), get_gpu(decode_gpu)
    return evaluate_disagg(M, *disagg_pair(gp, PREC, P, decode, decode_gpu=gd), calibration=calibration_for(gp),
                           decode_calibration=calibration_for(gd), prefill_instances=1, decode_instances=1, concurrency=C,
                           isl=ISL, osl=OSL)


def test_each_pool_is_priced_on_its_own_gpu():
    mixed, all_h100, all_h200 = _run("h100", "h200"), _run("h100", "h100"), _run("h200", "h200")
    # decode on H200: its decode step and KV room; prefill on H100: its prompt time
    assert np.allclose(mixed["tpot_s"], all_h200["tpot_s"], rtol=1e-12)
    assert np.allclose(mixed["max_concurrency"], all_h200["max_concurrency"], rtol=1e-12)
    assert np.allclose(mixed["prefill_alone_s"], all_h100["prefill_alone_s"], rtol=1e-12)
    assert np.all(mixed["tpot_s"] < all_h100["tpot_s"])  # H200's 4.8 TB/s against H100's 3.35


def test_kv_cache_crosses_both_nics():
    gp, gd = get_gpu("h100"), get_gpu("b200")
    r = _run("h100", "b200")
    # the one decode rank (TP8) receives the whole prompt's cache, 1/8 per GPU, each on its own NIC:
    # no faster than those bytes at the slower NIC's line rate
    per_gpu = float(kv_bytes_per_token(M, PREC, Plan(tp=8), ISL)) * ISL
    floor = per_gpu / min(gp.scale_out_bandwidth_bytes_per_s, gd.scale_out_bandwidth_bytes_per_s)
    assert float(np.min(r["kv_transfer_s"])) >= floor
    # TP4 + TP4 on one GPU type fit one 8-GPU NVLink domain; on two types the cache crosses NICs, 9x slower links
    d4 = Plan.parse("tp=4", M, "decode")
    assert float(np.min(_run("h100", "b200", d4)["kv_transfer_s"])) > 3.0 * float(np.max(_run("h100", "h100", d4)["kv_transfer_s"]))


def test_cli_decode_gpu():
    res = CliRunner().invoke(app, ["disagg", "llama-3.1-70b", "--gpu", "h100", "--decode-gpu", "h200", "--prefill", "tp=4",
                                   "--decode", "tp=8", "--concurrency", "1,16", "--json"])
    assert res.exit_code == 0, res.output
    import json

    d = json.loads(res.stdout)
    assert d["gpu"] == "h100" and d["decode_gpu"] == "h200" and d["num_gpus"] == 12
    bad = CliRunner().invoke(app, ["disagg", "llama-3.1-70b", "--gpu", "h100", "--decode-gpu", "h9000", "--prefill", "tp=4",
                                   "--decode", "tp=8"])
    assert bad.exit_code == 2 and "h9000" in bad.stderr


@pytest.mark.parametrize("decode_gpu", ["h100", None])
def test_same_gpu_named_twice_is_the_one_gpu_deployment(decode_gpu):
    g = get_gpu("h100")
    base = evaluate_disagg(M, *disagg_pair(g, PREC, P, D), calibration=calibration_for(g), prefill_instances=1,
                           decode_instances=1, concurrency=C, isl=ISL, osl=OSL)
    r = evaluate_disagg(M, *disagg_pair(g, PREC, P, D, decode_gpu=get_gpu(decode_gpu) if decode_gpu else None),
                        calibration=calibration_for(g), prefill_instances=1, decode_instances=1, concurrency=C, isl=ISL, osl=OSL)
    for k in ("ttft_s", "tpot_s", "kv_transfer_s", "output_tok_s_per_gpu"):
        assert np.array_equal(np.asarray(base[k]), np.asarray(r[k])), k
