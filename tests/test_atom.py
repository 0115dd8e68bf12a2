"""spec/engines/atom.py: ATOM registered as an engine, with its documented defaults (ROCm/ATOM@ffdf3bb5)."""
import numpy as np

from llm_codesign.cost.calibration import calibration_for, documented
from llm_codesign.spec.engines import ATOM, engine_names, get_engine, listed
from llm_codesign.spec.hardware import get_gpu


def test_atom_is_registered_with_its_calibration():
    assert get_engine("ATOM") is ATOM and "atom" in engine_names() and listed().endswith("or atom")
    # every per-engine table of the bundled profiles lists it (vLLM's documented values to start)
    v = documented().engine_values("atom")
    assert v["ttft_wait_steps"] == 1.0 and v["step_overhead_s"] == 0.16e-3
    assert set(calibration_for(get_gpu("mi355x")).engine_values("atom")) == set(v)


def test_atom_defaults():
    g = get_gpu("mi355x")
    # max_num_batched_tokens 16384, max_num_seqs 512, gpu_memory_utilization 0.9 of the whole GPU
    assert ATOM.step_tokens(g) == 16384 and ATOM.max_batch(g) == 512.0 and ATOM.kv_budget == ("total", 0.90, 0.5)
    assert not ATOM.mixes_prefill and ATOM.admission == (0.0, 0.0) and not ATOM.deepgemm
    # AITER's all-reduce carries the residual + RMSNorm on CDNA at TP8 for a decode-sized message, not past 8 MiB,
    # and there is no such kernel of ATOM's on NVIDIA GPUs
    fused = ATOM.ar_norm_fused("DeepseekV3ForCausalLM", adp=np.array([1]), nbytes=np.array([16384.0, 16e6]), n=np.array([8.0]),
                               family="cdna4")
    assert fused.tolist() == [True, False]
    assert not ATOM.ar_norm_fused("DeepseekV3ForCausalLM", adp=1, nbytes=16384.0, n=8.0, family="hopper")
    assert ATOM.pdl_share("cdna4") == 0.0
