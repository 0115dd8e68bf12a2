"""How requests reach the engine (the benchmark harness's arrival pattern) and the scheduler flags a run
sets, where they shape the serving model beyond the engine's own defaults.

Arrival patterns (`Workload.arrival`, serve.aggregated prices each):
- "waves": a closed loop of C slots with identical lengths and ignore-EOS that starts as a burst, the
  aiconfigurator silicon sample's harness (aiperf --concurrency C --num-requests 20C, warm-up drained first:
  data/measurements/campaigns.toml). The first wave's prefill makes cohorts (the prompts one step completes,
  or the whole wave on an engine that prefills first) that refill and prefill together round after round; a
  share of the rest of the wave re-arrives with each (prefill_queue_fraction, fitted per engine); the first
  wave, 1 / rounds of the requests, queues as the burst it is (serve.aggregated._own_prefill).
- "closed_loop": C slots, each refilled the moment its request finishes, lengths drawn with a spread
  (vLLM's benchmark_serving `--max-concurrency C --request-rate inf --random-range-ratio 0.8`, CLOSED_LOOP_RANGE_RATIO, as
  InferenceX runs it: SemiAnalysisAI/InferenceX@843c6254 benchmarks/benchmark_lib.sh:680-700): after a
  lifetime the completions, hence the arrivals, are spread out, C / (life in iterations) per iteration,
  and a request shares its prefill step only with those arriving within the scheduler's receive window.
- "burst": all C requests sent at once and kept in lockstep waves: each waits for the prefills of those
  ahead of it in its wave; a wave lands on an engine its last one left idle, so it waits out no running step and
  none queued ahead (ARRIVAL_PHASE_STEPS, EngineCosts.wait_steps).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, fields

from llm_codesign.errors import InputError

ARRIVALS = ("waves", "closed_loop", "burst")
# a closed loop's spread of lengths: vLLM's bench at --random-range-ratio 0.8 draws each ISL and OSL from
# [floor(L (1 - r)), ceil(L (1 + r))] (RandomDataset.get_sampling_params, vllm/benchmarks/datasets.py:488-491@0.11.0)
CLOSED_LOOP_RANGE_RATIO = 0.8
# what a concurrency of requests of one ISL and OSL means where no harness is named: C identical requests started
# together, as a benchmark of fixed lengths runs them (aiperf, trtllm-bench; vLLM's and SGLang's bench_serving at their
# default random range ratio 0), which stay in step ("closed_loop" is the same loop with lengths spread)
DEFAULT_ARRIVAL = "waves"
# the offline maximum throughput: every request queued at once with one ISL and OSL, kept in step (trtllm-bench
# throughput on its synthetic sets, the TensorRT-LLM perf overview's harness: data/measurements/SOURCES.md)
OFFLINE_ARRIVAL = "waves"
# the phase of a new request's wait, in steps: the rest of the step running when it reaches the engine's queue, which the
# arrival fixes, not the engine (docs/modelling-notes.md#wait-arrival-phase). A closed loop (waves, closed_loop) sends it
# as its slot's last token returns, which every engine emits only after processing that step's output, once the next
# step has started: it arrives phase-locked at a step's start and waits that step whole (1). A burst on an idle engine
# waits for none (0). A random (Poisson) arrival would wait half a step on average (0.5; no harness here sends one).
# The steps the scheduler has queued ahead of it are the engine's (EngineCosts.ttft_wait_steps)
ARRIVAL_PHASE_STEPS = {"waves": 1.0, "closed_loop": 1.0, "burst": 0.0}


def longest_request(isl: int, osl: int, arrival: str) -> int:
    """The longest request (prompt + output tokens) the arrival's harness sends for a workload of `isl` / `osl`: a closed
    loop's largest draws, ceil(ISL (1 + r)) + ceil(OSL (1 + r)) (CLOSED_LOOP_RANGE_RATIO), else the lengths themselves
    (the other harnesses send fixed lengths). What a launch file must admit (an export's vLLM max-model-len)."""
    if arrival != "closed_loop":
        return int(isl) + int(osl)
    return sum(math.ceil(int(n) * (1.0 + CLOSED_LOOP_RANGE_RATIO)) for n in (isl, osl))


def check_arrival(value) -> str:
    """The arrival pattern named, or one line naming the known ones."""
    if value not in ARRIVALS:
        raise InputError("arrival", value, "one of: " + ", ".join(ARRIVALS))
    return value


@dataclass(frozen=True)
class SchedulerFlags:
    """Scheduler flags a run sets beyond the engine's defaults, each a number or an array over
    deployments (validate reads them per measurement row: data/measurements/campaigns.toml and the
    serving files' optional columns). The defaults change nothing: the engine's own behaviour.

    - max_prefill_tokens: prompt tokens one step admits (SGLang --max-prefill-tokens; the step's
      budget is the smaller of it and the chunk, max_num_tokens).
    - max_running_requests: sequences a rank runs at once (SGLang --max-running-requests, TensorRT-LLM
      max_batch_size, vLLM --max-num-seqs): below the engine's own limit, or in place of it where the engine takes
      a stated cap so (Engine.batch_limit: vLLM's).
    - cuda_graph_max_bs: the largest decode batch per rank replayed from a CUDA graph (SGLang
      --cuda-graph-max-bs, TensorRT-LLM cuda_graph_config.max_batch_size), every batch up to it padded to a
      captured size (SGLang pads by default; the campaigns' TensorRT-LLM configs set enable_padding or list every
      size); a larger one runs eagerly and pays the host launch of every kernel. NaN: the engine's default
      capture (Engine.graphs_default: TensorRT-LLM's 1-32, 64 and 128 unpadded; SGLang's 8-512 by GPU memory and TP;
      vLLM's 2 x max_num_seqs x (1 + k) tokens up to 512, 1,024 on SM100).
    - recv_interval: decode iterations between the scheduler's polls for new requests (SGLang
      --scheduler-recv-interval; a prefill step polls at once: SchedulerRecvSkipper weighs a decode
      step 1 and an extend step 1000, sglang 0.5.12 managers/scheduler_recv_skipper.py, environ.py:229-232).
    - ignore_eos: every request generates its whole OSL (bench_serving --ignore-eos), which changes
      SGLang's admission (Engine.admits_past_cache).
    - mixed_chunk: whether prefill chunks share steps with decodes (SGLang --enable-mixed-chunk);
      None: the engine's default (Engine.mixes_prefill).
    - chunked_prefill: whether a prompt past the step's budget is split into chunks (TensorRT-LLM
      enable_chunked_prefill); None: the deployment's launch option (Deployment.chunked_prefill), else the
      engine's default (Engine.chunks_prefill).
    - kv_fraction: the fraction of the engine's KV budget (Engine.kv_budget: SGLang --mem-fraction-static,
      vLLM --gpu-memory-utilization, TensorRT-LLM free_gpu_memory_fraction); NaN: the engine's own.
    - rounds: requests each concurrency slot sends in the timed run ("waves": aiperf --num-requests over
      --concurrency); its first wave, a share 1 / rounds, arrives as one burst. inf: the steady state only.
    - queued_steps: steps the build's scheduler has queued ahead of a new request, 0 (a synchronous loop: vLLM
      before async scheduling, 0.11) to 1 (an overlap loop); NaN: the engine's documented count
      (EngineCosts.ttft_wait_steps, default.toml [default.ttft_wait_steps]).
    """
    max_prefill_tokens: object = float("inf")
    max_running_requests: object = float("inf")
    cuda_graph_max_bs: object = float("nan")
    recv_interval: object = 1.0
    ignore_eos: object = False
    mixed_chunk: object = None
    chunked_prefill: object = None
    kv_fraction: object = float("nan")
    rounds: object = float("inf")
    queued_steps: object = float("nan")


FLAG_NAMES = tuple(f.name for f in fields(SchedulerFlags))
# the most decode iterations between a scheduler's polls `disagg --decode-recv-interval` takes (a bound against typos:
# the recipes set 1-30)
MAX_RECV_INTERVAL = 1 << 10
DEFAULT_FLAGS = SchedulerFlags()
FRACTION = "a fraction in (0, 1]"


def memory_fraction(value) -> float | None:
    """`value` as a share of memory (SchedulerFlags.kv_fraction, Deployment.kv_fraction, an engine's option): a number in
    (0, 1], which every engine requires of it, else None (text, true/false, NaN, 0, 1.5): the caller's one line (FRACTION)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if 0.0 < value <= 1.0 else None


# how each arrival pattern (spec.harness.ARRIVALS) reads beside a TTFT: the answer turns on it (llama-3.1-70b on 8x
# H200 at 128 requests, SGLang: 4223 ms in waves, 117.6 ms in a closed loop), and "in waves" at a basis row's end hid it.
# "waves" is not every request sent at once (that is "burst"): after the first wave, the cohorts its prefill formed refill
# and prefill together (serve.aggregated._cohort); it read "every request of a wave sent at once" beside a TTFT of 200 ms
# for 64 requests of llama-3.1-8b on one H100, where a burst of 64 prompts takes 866 ms (newcomer review 2026-12-06)
ARRIVAL_TEXT = {
    "waves": "waves: identical requests kept in step by a closed loop, refilled in the cohorts the first wave's prefill "
             "formed, as fixed-length benchmarks run them; --arrival burst for every request sent at once, closed_loop for "
             "one request per freed slot",
    "closed_loop": "closed loop: one request sent per freed slot, lengths spread (bench_serving --max-concurrency); "
                   "--arrival waves for identical requests kept in step, burst for every request sent at once",
    "burst": "burst: every request sent at once and kept in lockstep; --arrival waves or closed_loop for the harnesses' patterns",
}
