"""Regression guard on the reached error figures (with a margin), so a change cannot silently make
the model worse. Figures are measured against the shipped measurements (data/measurements, docs/accuracy.md)."""
from pathlib import Path

import numpy as np
import pytest

from llm_codesign.measure.validate import kernel_report, per_user_with_ctx, predict_serving, read_rows, serving_report

MEAS = Path(__file__).resolve().parents[1] / "src" / "llm_codesign" / "data" / "measurements"
KERNELS = MEAS / "kernels"  # the shipped kernel tables, gzipped

# kind -> ceilings on the overall median and 90th-percentile APE (%), reached figures + margin
KERNEL_CEILING = {"gemm": 9.0, "decode_attention": 15.0, "prefill_attention": 8.0, "collectives": 9.0, "moe": 12.0}
# (moe: 11.3 / 42.7 since the MoE block prices its top-k kernel, which the tables' fused MoE op runs; 10.7 / 40.6 before)
KERNEL_P90_CEILING = {"gemm": 27.0, "decode_attention": 46.0, "prefill_attention": 23.0, "collectives": 25.0, "moe": 45.0}


@pytest.mark.parametrize("kind", sorted(KERNEL_CEILING))
def test_kernel_errors_do_not_regress(kind):
    rep, rows, pred = kernel_report(KERNELS / f"{kind}.csv.gz")
    assert rep["kind"] == kind and rep["modeled"] == rep["rows"]
    assert rep["overall"]["latency_ms"]["median_ape"] <= KERNEL_CEILING[kind]
    assert rep["overall"]["latency_ms"]["p90_ape"] <= KERNEL_P90_CEILING[kind]


def test_serving_errors_do_not_regress():
    # the sample with each measurement once, under the plan its run name states (llm_codesign.measure.audit);
    # the profile is fitted on it with Qwen3.5 held out
    rows = read_rows(MEAS / "serving_measured_blackwell_clean.csv")
    rep = serving_report(rows, *predict_serving(rows))
    o = rep["overall"]
    # reached: TPOT 10.2 / 32.4, TTFT 21.0 / 64.8 (median / p90) without 19 runs that contradict every reading of their
    # columns (issue 40, measure.audit) and re-fitted; 10.4 / 35.0, 21.0 / 70.4 with them, Qwen3.5's 156 rows included, with issue 39's "waves" read as
    # the cohorts of the sample's own harness (aiconfigurator's workflow) in place of two fitted scales per engine: worse in
    # sample, better held out (docs/crossval.md: fitted on InferenceX, this sample's TTFT 42.1 -> 35.6); 10.8 / 34.9,
    # 20.0 / 65.5 before, with issue 39's MoE block and
    # kernel families (11.5 / 36.2, 20.3 / 66.7 before, with the serving values fitted on all three campaigns, issue 39;
    # 11.3 / 37.0, 20.6 / 64.0 fitted on this sample alone; 11.4 / 37.6,
    # 20.7 / 64.1 before PDL's credit per kernel boundary; 11.3 / 36.2, 20.5 / 62.5 before the attention kernels by kind, W4A16, the MTP passes, the MoE top-k and the engines'
    # memory rules; 10.8 / 37.4 and 21.5 / 63.2 with step_kernel_overhead_scale = 0.28)
    assert o["tpot_ms"]["median_ape"] <= 12.0 and o["ttft_ms"]["median_ape"] <= 22.5
    assert o["tpot_ms"]["p90_ape"] <= 38.5 and o["ttft_ms"]["p90_ape"] <= 72.0
    assert o["tpot_ms"]["n"] == 1346  # with the 4 runs the memory model refuses (DeepSeek-R1 FP8 on 4 B200s under SGLang at
    # 8k/1k: 169 GB per GPU for one sequence against the 164 GB SGLang's memory fraction leaves) priced with its check bypassed
    # and counted (fixmem; 1,342 while they were left out), 1,348 before 2 runs of a series that records no plans left, 1,367
    # before 19 runs that contradict every reading of their columns left (issue 40)
    assert [round(u["short_gb"], 2) for u in rep["memory_refused"]] == [5.06] * 4
    # per engine (reached TTFT / TPOT: vLLM 15.8 / 9.3, TensorRT-LLM 29.2 / 10.2, SGLang 29.5 / 13.0 without issue 40's left-out
    # runs, re-fitted; vLLM 15.7 / 9.2, TensorRT-LLM 29.9 / 10.6, SGLang 30.1 / 12.7 with the cohorts; vLLM 12.3
    # / 9.6, TensorRT-LLM 30.7 / 11.5, SGLang 32.6 / 13.4 before them; 13.3 / 9.5, 30.5 / 11.9,
    # 31.1 / 13.9 before issue 39's MoE block; fitted on this sample alone 12.7 / 9.8, 30.5 / 11.7, 34.5 / 14.3)
    for backend, (ttft, tpot) in {"vllm": (17.0, 10.5), "trtllm": (32.0, 12.0), "sglang": (37.5, 15.5)}.items():
        b = rep["by"]["backend"][backend]
        assert b["ttft_ms"]["median_ape"] <= ttft and b["tpot_ms"]["median_ape"] <= tpot, backend
    # the interactive end (1-4 requests, 229 rows) weighs as much in the fit as the bulk: reached 21.1 / 8.6 re-fitted without
    # issue 40's left-out runs (18.6 / 8.6 at the values before that re-fit, which trades this band's TTFT median for the
    # tail: 33+ requests' p90 87.4 -> 76.4); 20.6 / 10.5 on 236 rows with them (18.4 / 10.9
    # before issue 39's MoE block, with the serving values fitted on the block before it; 14.4 / 10.0
    # fitted on this sample alone: InferenceX's first tokens at a few requests want a smaller per-request cost)
    lo = rep["by"]["concurrency"]["1-4"]  # 229 rows with the c4 run the memory model refuses, priced (fixmem; 228 without)
    assert lo["ttft_ms"]["n"] == 229 and lo["ttft_ms"]["median_ape"] <= 21.5 and lo["tpot_ms"]["median_ape"] <= 11.0
    # Qwen3.5 (Gated DeltaNet hybrid) is held out of the serving fit: reached TPOT 13.5, TTFT 25.7 (signed -19.7: SGLang's
    # re-fitted prefill_queue_fraction, issue 40); TTFT 26.2 (-0.2), TPOT 13.7 before it; 13.8, 29.3 earlier (14.4, 29.4 before issue
    # 39's MoE block; 14.5, 31.9 before the serving values fitted on three campaigns)
    q = rep["by"]["model"]["qwen3.5-397b"]  # grouped by the model each name resolves to
    assert q["tpot_ms"]["n"] == 156 and q["tpot_ms"]["median_ape"] <= 16.0 and q["ttft_ms"]["median_ape"] <= 33.0
    reasons = {u["reason"] for u in rep["unmodeled"]}
    assert any("heads" in r for r in reasons)  # DeepSeek-R1 at TP 72 etc.: listed, not dropped
    # by workload shape, in ISL then OSL order, every modelled row in exactly one group
    lengths = rep["by"]["lengths"]
    assert list(lengths)[:3] == ["1024/1024", "1024/8192", "4000/1000"] and sum(v["tpot_ms"]["n"] for v in lengths.values()) == 1346


def test_serving_errors_on_the_sample_as_shipped():
    # the same runs with repeats weighed again and 139 rows priced on 16-64 GPUs where one node ran
    rows = read_rows(MEAS / "serving_measured_blackwell.csv")
    o = serving_report(rows, *predict_serving(rows))["overall"]
    # reached: TPOT 12.8 / 37.5, TTFT 22.0 / 64.3 (13.0 / 38.5, 23.0 / 62.7 before issue 39; 12.4 / 24.6 with step_kernel_overhead_scale; 11.1 / 23.7 when
    # per-engine collective scales were fitted); TTFT holds the 25, TPOT misses its 12 here
    assert o["tpot_ms"]["median_ape"] <= 13.5 and o["ttft_ms"]["median_ape"] <= 25.0
    assert o["tpot_ms"]["n"] == 1973  # the 10 runs the memory model refuses (above) priced and counted (fixmem; 1,963 without them)


def test_offline_throughput_generalises():
    # TensorRT-LLM perf-overview tables are not used for fitting: a held-out check
    rows = read_rows(MEAS / "trtllm_perf_overview.csv")
    rep = serving_report(rows, *predict_serving(rows))
    # reached 9.6 / 39.9 (median / p90); 10.9 / 45.4 since an eager step's launches are paced by the slowest of its
    # ranks (9.7 / 40.8 before): TP4-8 runs with 2k-20k prompts read low (ISL 5000 at TP8 -11.4 -> -15.4% signed),
    # where the host's launches overlap kernels long enough to hide them, which the additive eager cost does not price;
    # 10.2 / 42.5 at trtllm-bench's own max_num_tokens and max_batch_size (spec/engines/trtllm_bench.py: Llama 4 on H100
    # +86.3 -> +59.2% signed in v1.0, the tool's 2-3k-token steps where 8192 was priced)
    assert rep["overall"]["output_tok_s_per_gpu"]["median_ape"] <= 11.0
    # 10.1 / 43.6 since the serving re-fit 43e853e (10.2 / 43.0 on the same code before it), the fit no longer offset by the
    # compensating MLA price removed (docs/modelling-notes.md#mla-decode-ctas, #mla-decode-hopper-tiles)
    assert rep["overall"]["output_tok_s_per_gpu"]["p90_ape"] <= 43.7
    assert len(rep["unmodeled"]) + rep["modeled"] == rep["rows"]


def test_published_single_runs_held_out():
    # published runs with their whole configuration (SOURCES.md), never fitted on; reached, signed error %:
    # blog 1's strict MTP3 at its final kernels (340 tok/s/user at the printed 2.82, its MoE on moe_backend=TRTLLM
    # as the B200 kernel tables time it) +12.1, where the same plan's best-perf row (274.7, acceptance not printed)
    # is +38.7 and the depth scan's MTP3 at the blog's earlier kernels (253) +50.6 (docs/accuracy.md#one-request-step);
    # B200 max throughput +5.8 / -0.3; H200 max throughput +21.1; min latency B200 +37.1 per GPU and +38.5 per user
    # (strict MTP), +13.7 (relaxed), H200 +54.1 per GPU (+66.9 before TensorRT-LLM's CUTLASS MoE paid its time per
    # expert the rank holds, moe_kernel_expert_s: 64 experts per rank at EP 4); Maverick at c=1 -8.6 against a floor of 1,000 tok/s/user, with
    # issue 39's MoE block and Hopper kernel families beside the one-request step's inventory, the serving values
    # re-fitted on both (H200's batch-1 MoE now what the H100 table's 1-token rows time, 35-45 us, where the previous
    # pair's 2 x 12.7 us fixed cost stood in for the one-token step's missing floors); since an eager step's launches are
    # paced by the slowest of its ranks: B200 max throughput +2.2 / -4.0, H200 +18.3, min latency +36.4, relaxed +13.8,
    # H200 +66.3, Maverick -8.4
    # (the one-request step alone: +2.8 / -2.4, +27.1, +37.8, +39.4, +14.4, +52.9, -9.5; before it: +3.9 / -1.2,
    # +26.9, +45.3, +46.8, +20.5, +51.2, -1.5)
    # (with the serving values fitted on all three campaigns and DeepSeek's MTP layer in BF16 under NVFP4: +43.5, +44.7,
    # +18.8, +49.5, -5.5 before: the fit lowered TensorRT-LLM's host step and the one-shot all-reduce)
    # (with TensorRT-LLM's steps taking whole prompts, chunked prefill being off in trtllm-bench's PyTorch flow, the
    # BF16-KV run's 1,536-token budget takes one 1k prompt a step, not 1.5: B200 max throughput -3.2 -> -8.2 (BF16 KV),
    # H200 +18.8 -> +18.0, the rest unchanged)
    # (re-fitted on the merged model of 2026-12-05 09:15: vLLM's fusion by build, TensorRT-LLM's whole prompts and its
    # wait documented, trtllm-bench's runs priced offline as the perf overview's: +40.7 min latency, +0.6 / -10.1 max
    # throughput, H200 +17.0, H200 min latency +55.7, strict +15.6, relaxed +17.4, Maverick -2.9)
    # (the MoE exchange under attention DP as TensorRT-LLM runs it on an 8-GPU board, AllGatherReduceScatter, not an
    # all-to-all, i46g, on the profile fitted before it: max throughput +0.7 / -10.0 -> -5.0 / -13.9, H200 +17.1 -> +15.3)
    # (before PDL's credit per kernel boundary: +39.4, +40.5, +15.3, +46.9, -8.6; before the MTP passes and the
    # MoE top-k: +45.2, +46.5, +20.2, +50.7, -6.9; before the engines' fusions
    # replaced step_kernel_overhead_scale: +55.2, +28.7, +100.2, -22.1)
    rows = read_rows(MEAS / "published_runs.csv")
    preds, unmodeled = predict_serving(rows)
    assert not unmodeled and len(rows) == 8
    # (with the one-shot all-reduce's latency measured, not fitted: Blackwell 4.8 us, H100's 2.83 x 1.69, in place of the
    # serving fit's 5.67, the profile not re-fitted: min latency +40.7 -> +42.8, strict +15.6 -> +17.3, relaxed +17.4 ->
    # +19.1, H200 min latency +60.6, max throughput +0.7 / -10.0, H200 +17.1, Maverick -0.3)
    # (MLA decode on TRTLLM-Gen priced as its kernel's CTAs, two 64-head tiles a token where 128 head items cost 0.78 ms a
    # layer at 768 sequences, with its RoPE / FP8-query pass, branch tdd, the profile not re-fitted: max throughput -4.7 /
    # -13.8 -> +35.9 / +13.1, min latency +40.8 -> +41.3, strict +15.6 -> +16.1, relaxed +17.5 -> +17.9, H200 unmoved. The
    # old MLA price, 5-9x TensorRT-LLM's own MLA generation table at 512-1,024 sequences, hid the rest of the 896-sequence
    # step: its NVFP4 MoE at 7-16k tokens a rank is priced 24-37% under the same database's B200 balanced rows
    # (docs/modelling-notes.md#mla-decode-ctas))
    # (MLA decode on Hopper priced as FlashMLA's 64-row tiles, 2 a sequence at 128 heads where 128 head items were, branch
    # hml, the profile not re-fitted: H200 max throughput +15.3 -> +29.7, min latency +59.5 -> +60.0. H100's MLA table now
    # reads -29 / -35% (BF16 / FP8 KV) at 256+ sequences, not +285 / +263%: the old count hid a ~46 ns cost a tile and
    # TensorRT-LLM's FP8-cache kernel at the BF16 rate, docs/modelling-notes.md#mla-decode-hopper-tiles; FlashMLA's 5 key
    # blocks of overhead a sequence, branch hml: +29.7 -> +27.5)
    # (the serving re-fit 43e853e on the model without the compensating MLA price, docs/modelling-notes.md#mla-decode-ctas,
    # #mla-decode-hopper-tiles: max throughput +35.9 / +13.1 -> +39.3 / +15.9, H200 +27.5 -> +28.6, min latency +41.4,
    # strict +16.0, relaxed +17.8, H200 min latency +59.9, Maverick -3.3)
    # (TRTLLM-Gen's MoE on its own token-tile grid, B200's MoE three re-fitted, docs/modelling-notes.md#moe-tile, the serving
    # profile not re-fitted: max throughput +39.3 / +15.9 -> +40.7 / +8.8, min latency +41.4 -> +41.2, strict +16.0 -> +15.8,
    # relaxed +17.8 -> +17.6, Eagle-3 -3.2 -> -4.1, H200 unmoved)
    # (TensorRT-LLM's CUTLASS MoE on Hopper takes DeepSeek's block-FP8 tokens in BF16, gathered and permuted so under
    # attention DP, branch hopmax, the profile not re-fitted: H200 max throughput +28.6 -> +25.2, docs/modelling-notes.md#hopper-max-throughput)
    # (H200 min latency's ceiling was still 68, set before its row came down to +56.8 per GPU at a9ae149 (+58.9 per user
    # with PDL off, not what this row checks): now that figure + ~2 points, branch revfix)
    # (branch fixN5a, newc12 #1: deepseek-r1-nvfp4's attention priced at NVFP4, as the checkpoint's o_proj is, where it was
    # all BF16; its q/kv projections, 6.1 GB a GPU at TP1, said and not priced: max throughput +30.4 / -0.9 -> +41.1 / +4.6)
    # (branch attnproj: those q/kv projections priced BF16 beside its NVFP4 o_proj, as TensorRT-LLM builds them: max
    # throughput +41.1 / +4.6 -> +37.1 / +2.7, min latency +36.3 -> +38.5, strict +9.9 -> +11.7, relaxed +11.4 -> +13.2)
    ceiling = {"b200-max-throughput-fp8-kv": 39, "b200-max-throughput-bf16-kv": 16, "h200-max-throughput": 26,
               "b200-min-latency": 44, "b200-strict-mtp3": 18, "b200-relaxed-mtp3": 20, "h200-min-latency": 59, "b200-eagle3": 10}
    for r, p in zip(rows, preds, strict=True):
        m = "output_tok_s_per_gpu" if r["output_tok_s_per_gpu"] else "output_tok_s_per_user"
        err = 100 * abs(p[m] / float(r[m]) - 1)
        assert err <= ceiling[r["source"].split(":")[1]], (r["source"], err)


def test_mtp_depth_scan_at_one_request_held_out():
    # TensorRT-LLM blog 1's scan of MTP depths on 8xB200 (published_mtp_depth.csv, never fitted on): the draft
    # passes' cost against what they save reproduces the published speedups over no MTP to 3.6% at every
    # depth (reached 1.80 / 2.26 / 2.33 / 2.28 / 2.18 against 1.78 / 2.25 / 2.28 / 2.21 / 2.15) and the best
    # depth, 3; every row is +52-57% fast in absolute terms, the target step's own error at that software
    # (its 253 stage; 368 later; docs/accuracy.md#one-request-step)
    rows = read_rows(MEAS / "published_mtp_depth.csv")
    preds, unmodeled = predict_serving(rows)
    assert not unmodeled and len(rows) == 6
    m = "output_tok_s_per_user"
    y = [float(r[m]) for r in rows]
    p = [q[m] for q in preds]
    for yk, pk in zip(y[1:], p[1:], strict=True):
        assert abs((pk / p[0]) / (yk / y[0]) - 1) <= 0.04
    assert int(np.argmax(p)) == int(np.argmax(y)) == 3
    # (+55-59% with the one-shot all-reduce's latency measured, 4.8 us on Blackwell in place of the fitted 5.67; +52.1-57.5%
    # -> +53.7-60.2% with TRTLLM-Gen's MoE on its own token-tile grid and B200's MoE three re-fitted,
    # docs/modelling-notes.md#moe-tile, the serving profile not re-fitted; +47.9-54.1% with the shared expert's NVFP4 quantise
    # and the MTP worker's 25 + 6k kernels, #onestep-inventory; +41.0-47.5% with the early-2025 gate's sigmoid and bias add
    # as kernels of their own, campaigns.toml routing_fusion false, #onereq-hopper; +38.2-44.5% with tok/s/user read as
    # trtllm-bench's, the prefill in each request's latency, campaigns.toml per_user_with_ctx, #onereq3-per-user; +38.7-45.0%
    # -> +40.9-47.1% with the checkpoint's q/kv projections priced BF16, as TensorRT-LLM builds them: at one request a BF16
    # GEMM with no input quantise beside NVFP4's GEMM and its quantise kernel, #attnproj-per-projection)
    assert all(0.39 <= pk / yk - 1 <= 0.48 for yk, pk in zip(y, p, strict=True))


def test_max_num_tokens_column(tmp_path):
    # a run's own step token budget replaces the engine default; a smaller budget chunks the prefill more
    head = "model,gpu,num_gpus,backend,isl,osl,concurrency,tp,max_num_tokens\n"
    s = tmp_path / "m.csv"
    s.write_text(head + "llama-3.1-70b,h200,8,trtllm,8192,128,4,8,\nllama-3.1-70b,h200,8,trtllm,8192,128,4,8,8192\n"
                 "llama-3.1-70b,h200,8,trtllm,8192,128,4,8,1024\n")
    p, _ = predict_serving(read_rows(s))
    assert p[0]["ttft_ms"] == p[1]["ttft_ms"] < p[2]["ttft_ms"]
    s.write_text(head + "llama-3.1-70b,h200,8,trtllm,8192,128,4,8,0\n")
    _, unmodeled = predict_serving(read_rows(s))  # skipped and listed with its line (issue 21), not the end of the run
    assert unmodeled[0]["reason"].startswith("line 2 max_num_tokens")


def test_speculative_rows_need_a_measured_acceptance():
    row = {"source": "x", "model": "deepseek-r1", "gpu": "b200", "num_gpus": "8", "backend": "trtllm", "weight_dtype": "fp8",
           "isl": "1024", "osl": "1024", "concurrency": "8", "tp": "8", "ep": "8", "moe_tp": "1", "spec_method": "mtp",
           "spec_draft_len": "3", "spec_acceptance": "", "tpot_ms": "10"}
    preds, unmodeled = predict_serving([row, {**row, "spec_acceptance": "2.8"}, {**row, "spec_acceptance": "2.8", "spec_draft_len": ""}])
    # said as what the row lacks: the bundled MI355X file's 69 MTP runs read "spec_acceptance: '' is not valid"
    assert [(u["row"], u["reason"]) for u in unmodeled] == [
        (0, "speculative decoding with no mean accepted length recorded (spec_acceptance: the model needs it to price a speculative run)"),
        (2, "speculative decoding with no draft length recorded (spec_draft_len: the model needs it to price a speculative run)")]
    assert preds[1]["tpot_ms"] > 0


def test_committed_validation_report_is_current(tmp_path):
    # docs/validation_report.md holds every quoted figure and accuracy.toml the pooled errors by engine and load; a model or
    # profile change must regenerate both
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[1]
    shipped = root / "src" / "llm_codesign" / "data" / "calibration" / "accuracy.toml"
    intervals = shipped.with_name("intervals.toml")
    subprocess.run([sys.executable, str(root / "benchmarks" / "validation_report.py"), "--accuracy", str(tmp_path / "a.toml"),
                    "--intervals", str(tmp_path / "i.toml"), "--out", str(tmp_path / "report.md")],
                   capture_output=True, text=True, check=True, cwd=root)
    regen = (f"regenerate: python benchmarks/validation_report.py --out docs/validation_report.md --accuracy {shipped.relative_to(root)} "
             f"--intervals {intervals.relative_to(root)}")
    assert (tmp_path / "report.md").read_text().strip() == (root / "docs" / "validation_report.md").read_text().strip(), regen
    assert (tmp_path / "a.toml").read_text() == shipped.read_text(), regen
    # the intervals every prediction quotes and their reliability diagram, from the same command (issue 40)
    assert (tmp_path / "i.toml").read_text() == intervals.read_text(), regen
    assert (tmp_path / "reliability.svg").read_text() == (root / "docs" / "reliability.svg").read_text(), regen


def test_blank_kv_dtype_reads_fp8_with_fp8_or_nvfp4_weights():
    from llm_codesign.measure.validate import _precision
    from llm_codesign.spec.registry import get_model

    m = get_model("MiniMaxAI/MiniMax-M2.5")
    for backend in ("trtllm", "vllm", "sglang"):
        assert _precision(m, {"weight_dtype": "fp8", "kv_dtype": "", "backend": backend}).kv.name == "fp8"
        assert _precision(m, {"weight_dtype": "nvfp4", "kv_dtype": "", "backend": backend}).kv.name == "fp8"
        # other weights keep the checkpoint's own KV format; a recorded kv_dtype always wins
        assert _precision(m, {"weight_dtype": "bf16", "kv_dtype": "", "backend": backend}).kv.name == "bf16"
        assert _precision(m, {"weight_dtype": "fp8", "kv_dtype": "bf16", "backend": backend}).kv.name == "bf16"


def _cli(*args):
    from typer.testing import CliRunner

    from llm_codesign.cli import app

    r = CliRunner().invoke(app, list(args), env={"COLUMNS": "2000"})
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        raise AssertionError(f"uncaught {type(r.exception).__name__}: {r.exception}") from r.exception
    return r.exit_code, r.stdout, r.stderr


SERVING_HEAD = "source,model,gpu,num_gpus,backend,isl,osl,concurrency,tp,ttft_ms,tpot_ms,output_tok_s_per_gpu,output_tok_s_per_user\n"


def test_validate_table_shows_only_finite_figures_as_json_does(tmp_path):
    # a throughput of 1e-306 measured: the model's ~950 tok/s against it is an error of inf% (the table printed
    # inf and nan, --json refused it); both refuse it in the same one line, now as the file is read (below the
    # least a measurement may hold: it was the result's last check, naming no input), and --out writes nothing
    s, out = tmp_path / "s.csv", tmp_path / "pred.csv"
    s.write_text(SERVING_HEAD + "a,llama-3.1-8b,h100,1,vllm,1024,1024,8,1,50,8,1e-306,\nb,llama-3.1-8b,h100,1,vllm,1024,1024,64,1,80,9,1e-306,1e-306\n")
    why = "output_tok_s_per_gpu: '1e-306' is not valid; 0 or empty (not measured), or at least 0.001"
    line = f"error: serving: '{s}' is not valid; a file with at least one row the model can price; none of its 2 rows is (line 2 {why}; line 3 {why})"
    for extra in ((), ("--json",), ("--out", str(out))):
        code, stdout, err = _cli("validate", "--serving", str(s), *extra)
        assert (code, err.strip(), stdout) == (2, line, ""), (code, err, stdout[-300:])
    assert not out.exists()


def test_a_measurement_below_its_least_is_listed_not_priced(tmp_path):
    # a TTFT of 1e-300 ms beside a good row: it put an error of 1.8e304 % in the report, which its last check refused
    # (exit 2, naming result.overall.ttft_ms.median_ape); now the row is listed with the column at fault and the good
    # row is reported alone
    s = tmp_path / "s.csv"
    s.write_text(SERVING_HEAD + "a,llama-3.1-8b,h100,1,vllm,1024,1024,8,1,1e-300,8,,\nb,llama-3.1-8b,h100,1,vllm,1024,1024,8,1,50,8,,\n")
    rows = read_rows(s)
    preds, unmodeled = predict_serving(rows)
    assert unmodeled == [{"row": 0, "source": "a", "reason": "line 2 ttft_ms: '1e-300' is not valid; 0 or empty (not measured), or at least 0.001"}]
    rep = serving_report(rows, preds, unmodeled)
    assert rep["overall"]["ttft_ms"]["n"] == 1
    assert rep["overall"]["ttft_ms"]["median_ape"] == pytest.approx(abs(preds[1]["ttft_ms"] / 50 - 1) * 100)


def test_a_row_past_the_cores_bounds_or_the_models_context_is_listed_not_priced(tmp_path):
    # a concurrency of 1e12 and a 1e9-token prompt were priced (errors of 2.6e14 % and 6.1e12 %), and a 200k-token one
    # beyond Llama 3.1 8B's 131,072-token context, which estimate refuses
    s = tmp_path / "s.csv"
    s.write_text(SERVING_HEAD + "a,llama-3.1-8b,h100,1,vllm,1024,1024,1000000000000,1,50,8,,\n"
                 "b,llama-3.1-8b,h100,1,vllm,1000000000,1,8,1,50,8,,\nc,llama-3.1-8b,h100,1,vllm,200000,1024,8,1,50,8,,\n"
                 "d,llama-3.1-8b,h100,1,vllm,1024,1024,8,1,50,8,,\n")
    preds, unmodeled = predict_serving(read_rows(s))
    assert unmodeled == [
        {"row": 0, "source": "a", "reason": "line 2 concurrency: '1000000000000' is not valid; a whole number from 1 to 1,048,576 or empty"},
        {"row": 1, "source": "b", "reason": "line 3 isl: '1000000000' is not valid; a whole number from 1 to 16,777,216 or empty"},
        {"row": 2, "source": "c", "reason": "isl+osl: 201024 is not valid; at most llama-3.1-8b's context of 131,072 tokens "
                                             "(max_position_embeddings with its RoPE scaling)"}]
    assert preds[3]["ttft_ms"] > 0


@pytest.mark.parametrize("kind,text", [
    ("serving", SERVING_HEAD.replace("tpot_ms", "ttft_ms") + "a,llama-3.1-8b,h100,1,vllm,1024,1024,8,1,50,8,,\n"),
    ("kernels", "system,trtllm_version,gemm_dtype,m,n,k,latency_ms,latency_ms\nh100_sxm,x,bfloat16,4096,4096,4096,0.2,9\n"),
])
def test_a_csv_naming_a_column_twice_is_one_line(tmp_path, kind, text):
    # csv.DictReader kept the second column of a name and dropped the first in silence (a TPOT read as the TTFT)
    s = tmp_path / "s.csv"
    s.write_text(text)
    twice = "ttft_ms" if kind == "serving" else "latency_ms"
    code, stdout, err = _cli("validate", f"--{kind}", str(s))
    assert (code, err.strip()) == (2, f"error: {kind}: '{s}' is not valid; a readable CSV file, plain or gzipped, whose header names "
                                      f"each column once ({twice!r} is named twice)")


def test_a_kernel_latency_below_its_least_is_listed_not_priced(tmp_path):
    # a GEMM timed at 1e-300 ms: its error of 1.8e301 % reached the report's last check (validate) and sank calibrate's fit
    k = tmp_path / "gemm.csv"
    k.write_text("system,trtllm_version,gemm_dtype,m,n,k,latency_ms\nh100_sxm,x,bfloat16,4096,4096,4096,1e-300\n"
                 "h100_sxm,x,bfloat16,4096,4096,4096,0.2\n")
    rep, rows, pred = kernel_report(k)
    assert rep["unmodeled"] == [{"row": 0, "reason": "line 2: latency_ms '1e-300' is not a time of at least 0.0001 ms (a kernel's launch "
                                                     "alone takes microseconds)"}]
    assert rep["overall"]["latency_ms"]["n"] == 1


def test_a_ragged_serving_line_is_listed_not_a_crash(tmp_path):
    # a line with 4 of the header's 13 fields (csv fills the rest with None: was an AttributeError)
    s = tmp_path / "s.csv"
    s.write_text(SERVING_HEAD + "a,llama-3.1-8b,h100,1\nb,llama-3.1-8b,h100,1,vllm,1024,1024,8,1,50,8,,\n")
    preds, unmodeled = predict_serving(read_rows(s))
    assert unmodeled == [{"row": 0, "source": "a", "reason": "line 2: 4 fields where the header has 13 (no backend)"}]
    assert preds[1]["ttft_ms"] > 0


def test_a_plan_off_its_gpu_count_is_listed_with_its_own_sizes(tmp_path):
    # each said only "the parallel sizes must multiply to the GPU count: tp*attention_dp*kvp*pp = ep*moe_tp*pp = gpus"
    s = tmp_path / "s.csv"
    s.write_text("source,model,gpu,num_gpus,backend,isl,osl,concurrency,tp,pp,ep,moe_tp,attention_dp,ttft_ms,tpot_ms\n"
                 "a,llama-3.3-70b,h200,8,vllm,1024,1024,8,4,1,1,1,1,95,7.4\n"
                 "b,deepseek-r1,b200,8,sglang,1024,1024,8,8,1,4,1,1,95,7.4\n"
                 "c,deepseek-r1,b200,8,sglang,1024,1024,8,2,2,2,1,1,95,7.4\n"
                 "d,llama-3.3-70b,h200,8,vllm,1024,1024,8,8,1,1,1,1,95,7.4\n")
    preds, unmodeled = predict_serving(read_rows(s))
    why = " (the parallel sizes must multiply to the GPU count)"
    assert unmodeled == [
        {"row": 0, "source": "a", "reason": "line 2: tp 4 x attention_dp 1 x pp 1 = 4 GPUs, num_gpus 8" + why},
        {"row": 1, "source": "b", "reason": "line 3: ep 4 x moe_tp 1 x pp 1 = 4 GPUs, num_gpus 8" + why},
        {"row": 2, "source": "c", "reason": "line 4: tp 2 x attention_dp 1 x pp 2 = 4 GPUs and ep 2 x moe_tp 1 x pp 2 = 4 GPUs, "
                                             "num_gpus 8" + why}]
    assert preds[3]["ttft_ms"] > 0


def test_a_framework_column_is_read_where_it_names_the_backends_engine(tmp_path):
    from llm_codesign.measure.validate import columns_read

    # the shipped disaggregated file's framework (dynamo-trt, dynamo-sglang) was "not read", noise on a file we ship
    shipped = read_rows(Path(__file__).parents[1] / "src/llm_codesign/data/measurements/serving_disagg_blackwell.csv")
    assert columns_read(shipped) == {"not_read": [], "absent_metrics": []}
    s = tmp_path / "s.csv"
    s.write_text(SERVING_HEAD.replace("backend,", "framework,backend,") + "a,llama-3.1-8b,h100,1,dynamo-trt,vllm,1024,1024,8,1,50,8,,\n"
                 "b,llama-3.1-8b,h100,1,vllm,vllm,1024,1024,8,1,50,8,,\nc,llama-3.1-8b,h100,1,trt,,1024,1024,8,1,50,8,,\n"
                 "d,llama-3.1-8b,h100,1,,sglang,1024,1024,8,1,50,8,,\n"
                 # InferenceX's AMD disaggregated SGLang runs, under their old and new labels: the file was refused whole
                 "e,llama-3.1-8b,h100,1,mori-sglang,sglang,1024,1024,8,1,50,8,,\nf,llama-3.1-8b,h100,1,sglang-disagg,sglang,1024,1024,8,1,50,8,,\n"
                 "g,llama-3.1-8b,h100,1,mori-sglang,vllm,1024,1024,8,1,50,8,,\n")
    preds, unmodeled = predict_serving(read_rows(s))
    # a row whose framework says another engine than the backend that prices it is named, not priced as the backend says
    assert unmodeled == [{"row": 0, "source": "a", "reason": "line 2 framework: 'dynamo-trt' is not valid; one naming its backend "
                                                             "column's engine, vllm (e.g. dynamo-vllm), or empty"},
                         {"row": 6, "source": "g", "reason": "line 8 framework: 'mori-sglang' is not valid; one naming its backend "
                                                             "column's engine, vllm (e.g. dynamo-vllm), or empty"}]
    assert all(preds[i]["ttft_ms"] > 0 for i in (1, 2, 3, 4, 5))


def test_a_run_on_a_build_without_the_all_reduce_norm_fusion_pays_its_norm_kernels():
    # the same TP8 Llama-3.1-70B run, once under a model name the silicon sample's 2025-10 vLLM runs (0.11: no all-reduce +
    # RMSNorm fusion, campaigns.toml) carry, once under an alias of it no campaign entry names (0.19.0's default: fused at
    # 4 x 8,192 BF16 values): every decode step launches the two add + RMSNorm kernels of each of its 80 layers again and
    # runs the layer's two all-reduces in vLLM's custom kernel, with its two flag barriers each, instead of FlashInfer's
    # Lamport one: 80 x 2 x (3 + 2 x 1) us = 0.80 ms, nearly all of TPOT at 8,192 output tokens a request
    from llm_codesign.cost.calibration import calibration_for
    from llm_codesign.spec.hardware import get_gpu

    row = {"source": "aiconfigurator-core-0.12.0-silicon-sample:x", "model": "meta-llama/Llama-3.1-70B", "gpu": "b200", "num_gpus": "8",
           "backend": "vllm", "weight_dtype": "fp8", "kv_dtype": "", "isl": "1024", "osl": "8192", "concurrency": "4", "tp": "8", "pp": "1",
           "ep": "1", "moe_tp": "8", "attention_dp": "1", "ttft_ms": "90", "tpot_ms": "6.5"}
    (old, new), unmodeled = predict_serving([row, {**row, "model": "meta-llama/Llama-3.1-70B-Instruct"}])
    assert not unmodeled
    cal = calibration_for(get_gpu("b200"))
    step = 80 * 2 * (cal.kernel_overhead_s + 2 * cal.custom_ar_barrier_s)
    assert (old["tpot_ms"] - new["tpot_ms"]) / 1e3 == pytest.approx(step, rel=0.02)


def test_a_moe_row_with_blank_ep_and_moe_tp_reads_them_as_lc_deployment_fills_them():
    # MoE-TP is what EP and PP leave of the GPUs (2 // (1 x 1) = 2), as lc.deployment fills it: read as 1, the TP2 row
    # was a plan of 2 attention and 1 expert GPU, not priced ("moe_tp x ep must be the stage's GPUs")
    row = {"source": "x", "model": "Qwen/Qwen3-30B-A3B", "gpu": "h100", "num_gpus": "2", "backend": "vllm", "weight_dtype": "bf16",
           "isl": "1024", "osl": "1024", "concurrency": "8", "tp": "2", "pp": "1", "ep": "", "moe_tp": "", "attention_dp": "1",
           "tpot_ms": "8"}
    preds, unmodeled = predict_serving([row, {**row, "ep": "1", "moe_tp": "2"}])
    assert unmodeled == [] and preds[0] == preds[1] and preds[0]["tpot_ms"] > 0


def test_a_row_that_cannot_run_is_listed_with_estimates_reason_not_scored(tmp_path):
    # Llama-3.1-70B in BF16 on one H100: 70.6B parameters x 2 B = 141 GB of weights alone against the 86 GB an H100 SXM
    # reports, so no sequence fits (estimate refuses: "needs 145 GB per GPU for one sequence", the weights, activations and
    # one 1024+512-token sequence's 0.5 GB of KV cache). It was scored (tok/s/GPU 4.7%, TPOT 3581%); now listed, as estimate says
    # it. A load past what a deployment holds still prices (it queues): the B200 row at 8 requests stays in the stats.
    s = tmp_path / "s.csv"
    s.write_text(SERVING_HEAD + "a,llama-3.1-70b,h100,1,vllm,1024,512,512,1,120,9.5,1500,\n"
                 "b,llama-3.1-70b,b200,4,vllm,1024,1024,8,4,108.9,8.18,,\n")
    rows = read_rows(s)
    preds, unmodeled = predict_serving(rows)
    assert unmodeled == [{"row": 0, "source": "a", "reason": "TP1 on 1xh100 cannot run: needs 135.3 GiB per GPU for one sequence, H100 SXM "
                          # 85.52e9 B / 2^30 = 79.6 GiB, x vLLM's 0.92 = 73.3 GiB usable; 145.3e9 B = 135.3 GiB
                          "reports 79.6 GiB (80 GB on the data sheet; 73.3 GiB usable by vllm): at least 2 GPUs hold it, e.g. TP2 (priced: one sequence fits), or lower the precision"}]
    assert preds[0] == {} and preds[1]["ttft_ms"] > 0
    rep = serving_report(rows, preds, unmodeled)
    assert rep["modeled"] == 1 and rep["overall"]["ttft_ms"]["n"] == 1 and "output_tok_s_per_gpu" not in rep["overall"]
    code, out, _ = _cli("validate", "--serving", str(s))
    assert code == 0 and "1 of 2 rows modelled" in out
    assert "TP1 on 1xh100 cannot run: needs 135.3 GiB per GPU for one sequence" in out and "(line 2)" in out


def test_a_model_named_two_ways_is_one_group(tmp_path):
    # "llama-3.1-70b" and "meta-llama/Llama-3.1-70B" resolve to one registry model, priced alike: one group, as the GPU
    # "H200" and "h200" are one
    s = tmp_path / "s.csv"
    s.write_text(SERVING_HEAD + "a,llama-3.1-70b,h200,8,trtllm,1024,1024,8,8,60,8,,\n"
                 "b,meta-llama/Llama-3.1-70B,H200,8,trtllm,1024,1024,64,8,90,12,,\n")
    rows = read_rows(s)
    rep = serving_report(rows, *predict_serving(rows))
    assert list(rep["by"]["model"]) == ["llama-3.1-70b"] and rep["by"]["model"]["llama-3.1-70b"]["ttft_ms"]["n"] == 2
    assert list(rep["by"]["gpu"]) == ["h200"]


def test_per_user_with_ctx_is_output_tokens_over_the_request_latency():
    # hand-derived: 101 tokens, the first at 50 ms, 100 more at 4 ms each: 101 / (0.05 + 0.4) s = 224.44 tok/s (1 / TPOT: 250)
    assert per_user_with_ctx(50.0, 4.0, 101) == pytest.approx(224.444444, rel=1e-6)
    np.testing.assert_allclose(per_user_with_ctx(np.array([50.0, 20.0]), np.array([4.0, 2.0]), np.array([101, 1])), [224.444444, 50.0])  # one token: 1 / TTFT


def test_trtllm_bench_one_request_rows_price_tok_s_per_user_with_their_prefill():
    # the published one-request rows (trtllm-bench, campaigns.toml per_user_with_ctx): tok/s/user = OSL over TTFT + (OSL - 1)
    # TPOT, so at one request it is the row's own tok/s/GPU x its GPUs, as the page's figures are (H200 158.12 per user,
    # 19.758 x 8 = 158.07 in all; B200 274.72, 34.302 x 8 = 274.42); the Maverick row (Artificial Analysis, after the
    # first token) stays 1 / TPOT
    rows = read_rows(MEAS / "published_runs.csv")
    preds, _ = predict_serving(rows)
    checked = []
    for r, p in zip(rows, preds, strict=True):
        name = r["source"].split(":")[1]
        if r["concurrency"] != "1":
            continue
        checked.append(name)
        osl = float(r["osl"])
        if name == "b200-eagle3":
            assert p["output_tok_s_per_user"] == pytest.approx(1e3 / p["tpot_ms"], rel=1e-12)
            continue
        assert p["output_tok_s_per_user"] == pytest.approx(1e3 * osl / (p["ttft_ms"] + (osl - 1) * p["tpot_ms"]), rel=1e-12), name
        assert p["output_tok_s_per_user"] < 1e3 / p["tpot_ms"]
        assert p["output_tok_s_per_user"] == pytest.approx(p["output_tok_s_per_gpu"] * int(r["num_gpus"]), rel=0.005), name
    # the five one-request rows of published_runs.csv: the best-perf page's two, blog 1's two, the Maverick EAGLE-3 row
    assert checked == ["b200-min-latency", "h200-min-latency", "b200-strict-mtp3", "b200-relaxed-mtp3", "b200-eagle3"]
