"""What the answers say, after a newcomer's first hour (newc5 #5, #10, #12, #18-#22): each extra line priced by the same
estimate it stands beside, memory in one unit, and the tables and titles that misled."""
from __future__ import annotations

import json
import re

import pytest
from conftest import cli

L70 = ("llama-3.1-70b", "--gpu", "h100", "--tp", "8", "--isl", "2048", "--osl", "512", "--concurrency", "41")


def _row(out: str, name: str) -> str:
    """The value of the estimate table's row `name` (a wide console: one line)."""
    line = next(x for x in out.splitlines() if x.startswith(f"│ {name} "))
    return line.split("│")[2].strip()


def _json(*args) -> dict:
    code, out, err = cli(*args, "--json")
    assert code == 0, err
    return json.loads(out)


def test_closed_loop_ttft_beside_waves_is_priced():
    """#5: SGLang in waves at 41 requests: TTFT 2601.0 ms against the closed loop's 164.7 ms, x15.79 > x1.5, so the row is
    there; its figure is estimate --arrival closed_loop's own TTFT (priced, not guessed), and the part it names first is the
    whole-wave prefill. The front end's share is SGLang's fitted 24.8903 ms x (41 + 1) / 2 = 522.70 ms (fitted.toml)."""
    code, out, err = cli("estimate", *L70, "--backend", "sglang")
    assert code == 0, err
    waves = _json("estimate", *L70, "--backend", "sglang")["ttft_ms"]
    loop = _json("estimate", *L70, "--backend", "sglang", "--arrival", "closed_loop")["ttft_ms"]
    said = _row(out, "TTFT, closed loop")
    assert said.startswith(f"{loop:.1f} ms (waves x{waves / loop:.2f}; prefill_kernels ")
    assert waves / loop > 15.0
    # the front end's share in waves: 24.8903 x 21 = 522.70 ms (the whole-wave prefill moves more)
    br = {o["name"]: o["time_ms"] for o in _json("estimate", *L70, "--backend", "sglang", "--breakdown")["breakdown"]}
    assert br["first/front_end"] == pytest.approx(24.8903 * 21, abs=0.01)
    # asked for the closed loop itself: nothing to set beside it
    code, out, err = cli("estimate", *L70, "--backend", "sglang", "--arrival", "closed_loop")
    assert code == 0 and "TTFT, closed loop" not in out


def test_no_closed_loop_row_within_ratio():
    """#5: vLLM with one request: waves and the closed loop wait the same arrival phase (1 step each, spec.harness), so
    the TTFTs are within x1.5 and no row is printed."""
    one = ("llama-3.1-70b", "--gpu", "h100", "--tp", "8", "--concurrency", "1", "--backend", "vllm")
    a, b = _json("estimate", *one)["ttft_ms"], _json("estimate", *one, "--arrival", "closed_loop")["ttft_ms"]
    assert max(a / b, b / a) <= 1.5
    code, out, _ = cli("estimate", *one)
    assert code == 0 and "TTFT, closed loop" not in out


def test_padded_tpot_in_trtllm_eager_region():
    """#18: TensorRT-LLM at 41 requests on TP8 misses its default capture (1-32, 64, 128 unpadded), so decode runs eager;
    the row gives TPOT with the padded capture export writes (max_batch_size 41 = the batch per rank), and that TPOT is
    estimate --cuda-graph-max-bs 41's own, below the eager one."""
    code, out, err = cli("estimate", *L70, "--backend", "trtllm")
    assert code == 0, err
    eager = _json("estimate", *L70, "--backend", "trtllm")
    padded = _json("estimate", *L70, "--backend", "trtllm", "--cuda-graph-max-bs", "41")
    assert "eager_decode" in eager and "eager_decode" not in padded
    said = _row(out, "TPOT, padded graphs")
    assert said.startswith(f"{padded['tpot_ms']:.2f} ms with cuda_graph_config enable_padding: true, max_batch_size 41")
    assert padded["tpot_ms"] < eager["tpot_ms"]
    # a capture the user set, or a batch the default captures (32 <= 32): no row
    code, out, _ = cli("estimate", *L70, "--backend", "trtllm", "--cuda-graph-max-bs", "41")
    assert "TPOT, padded graphs" not in out
    code, out, _ = cli("estimate", *L70[:-1], "32", "--backend", "trtllm")
    assert "TPOT, padded graphs" not in out


def test_one_request_wait_is_the_harness_phase():
    """#19: one vLLM request in a closed loop waits one whole step before its prefill (ARRIVAL_PHASE_STEPS 1, none queued
    at C = 1): the wait row equals TPOT's step (one request, no other prompts: TPOT = the step), and its text names the
    harness's arrival phase."""
    r = _json("estimate", "llama-3.1-70b", "--gpu", "h100", "--tp", "8", "--concurrency", "1", "--backend", "vllm", "--breakdown")
    wait = next(o for o in r["breakdown"] if o["name"] == "first/wait_steps")
    assert wait["time_ms"] == pytest.approx(r["tpot_ms"], rel=1e-9)
    assert wait["what"].startswith("the decode steps it waits before its prefill: the harness's arrival phase")


def test_memory_in_gib():
    """#10: H100's capacity 85.5e9 B usable is 85.5e9 / 2^30 = 79.6 GiB, beside the data sheet's 80 GB; no "GB usable"."""
    code, out, _ = cli("estimate", "llama-3.1-70b", "--gpu", "h100", "--tp", "8", "--concurrency", "8")
    mem = _row(out, "memory per GPU")
    assert re.search(r"free \d+\.\d of 79\.6 GiB \(the capacity nvidia-smi / rocm-smi report; 80 GB on the data sheet\)", mem)
    assert " GB usable" not in out and mem.startswith("weights 16.4 GiB")  # 70.6e9 x 2 B / 8 = 17.6e9 B = 16.4 GiB
    # the TP1 refusal in the same unit: weights alone 70.6e9 x 2 B = 131.5 GiB > 79.6 GiB
    code, _, err = cli("estimate", "llama-3.1-70b", "--gpu", "h100", "--tp", "1")
    assert code == 2 and "H100 SXM reports 79.6 GiB (80 GB on the data sheet)" in err
    need = float(re.search(r"needs (\d+\.\d) GiB per GPU", err)[1])
    assert need > 131.5


def test_mix_arrival():
    """#20: mix prices the arrival it is given: one fixed length is estimate's answer at that length and arrival, and the
    closed loop's TTFT lies below the waves one (each prompt shares its steps with fewer); the 'alone' line is printed
    above the percentiles. A bad arrival is one line."""
    args = ("mix", "llama-3.1-70b", "--gpu", "h100", "--tp", "8", "--isl-dist", "fixed:2048", "--osl-dist", "fixed:512",
            "--concurrency", "41", "--backend", "sglang")
    loop = _json(*args, "--arrival", "closed_loop")["ttft_ms"]["mean"]
    waves = _json(*args)["ttft_ms"]["mean"]
    assert loop == pytest.approx(_json("estimate", *L70, "--backend", "sglang", "--arrival", "closed_loop")["ttft_ms"], rel=1e-9)
    assert waves == pytest.approx(_json("estimate", *L70, "--backend", "sglang")["ttft_ms"], rel=1e-9)
    code, out, _ = cli(*args, "--arrival", "closed_loop")
    assert code == 0 and out.splitlines()[0].startswith("TTFT percentiles (closed_loop): each length priced as if the whole batch held it alone")
    code, _, err = cli(*args, "--arrival", "poisson")
    assert code == 2 and err.strip() == "error: arrival: 'poisson' is not valid; one of: waves, closed_loop, burst"


def test_models_ids_whole_at_80_columns():
    """#21: at 80 columns every Hugging Face id stands whole on one line (listed beneath the table); at 200 beside it."""
    from llm_codesign.spec.registry import list_models

    ids = [x for m in list_models() for x in m["hf_ids"][:2]]
    for cols in (80, 200):
        code, out, _ = cli("models", columns=cols)
        assert code == 0 and all(x in out for x in ids), cols
    code, out, _ = cli("gpus", columns=80)
    assert code == 0 and "Blackwell" in out  # the RTX PRO 6000's name folds between its words, never inside one


def test_lint_weight_beside_severity():
    """#22: the severity cell says what the cost means: an error at 0% is a plan that cannot run."""
    from types import SimpleNamespace as F

    from llm_codesign.cli.design import _weight

    assert _weight(F(severity="error", cost_pct=0.0)) == "blocks a plan"
    # a cost is the % column's to say (words here folded the rule's name at 80 columns); an error with a cost blocks nothing
    assert _weight(F(severity="info", cost_pct=86.6)) == "" and _weight(F(severity="info", cost_pct=0.0)) == ""
    assert _weight(F(severity="error", cost_pct=12.0)) == ""


def test_compare_engines_note_above_table():
    """#5: compare across GPUs whose default engines differ marks TTFT* and says why before the first table."""
    code, out, err = cli("compare", "llama-3.1-8b", "--gpu", "h100,mi355x", "--min-tps-user", "50", "--isl", "1024", "--osl", "256")
    assert code == 0, err
    lines = out.splitlines()
    note = next(i for i, x in enumerate(lines) if x.startswith("* rows run different engines"))
    table = next(i for i, x in enumerate(lines) if "TTFT*" in x)
    assert note < table


def test_disagg_frontier_announced_and_design_progress(monkeypatch):
    """#21: pareto --disagg says at its top that a second table follows; design says each stage on a terminal's stderr
    (piped, nothing beyond _progress's lines: a script's output stays as it was)."""
    code, out, err = cli("pareto", "llama-3.1-8b", "--gpu", "h100", "--gpus", "2", "--disagg", "--isl", "1024", "--osl", "256")
    assert code == 0, err
    assert out.splitlines()[0].startswith("--disagg: each aggregated frontier below is followed by its disaggregated one")
    code, out, err = cli("design", "--params", "8e9", "--gpu", "h100", "--gpus", "1")
    assert code == 0 and "design: " not in err, err
    from llm_codesign.cli import design

    monkeypatch.setattr(design, "_stderr_is_terminal", lambda: True)
    code, out, err = cli("design", "--params", "8e9", "--gpu", "h100", "--gpus", "1")
    assert code == 0, err
    said = [x for x in err.splitlines() if x.startswith("design: ")]
    assert said[0] == "design: searching shapes of 8B parameters on 1x H100 SXM (progress every 5 s)"
    assert said[1].startswith("design: pricing the report of the best ")
