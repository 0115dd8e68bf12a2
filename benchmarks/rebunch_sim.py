"""Where a waves harness's re-bunching could come from: the harness and each engine's admission rule as a small
discrete-event loop (issue 39 mechanism 2, branch sgrb; docs/modelling-notes.md#sgrb-rebunch-sim).

The harness (aiperf as aiconfigurator runs it, data/measurements/campaigns.toml): C slots, a warm-up of 2C requests
drained first, then 20C timed requests from a burst of C; one ISL, one OSL, ignore_eos; a slot sends its next request
`--tau` ms after its last token is emitted. TTFT is timed from the send to the first token's emission.

The engines' admission rules (read, not installed):
- "sglang-mixed": SGLang 0.5.9 with --enable-mixed-chunk and the overlap loop: a step takes the waiting prompts first
  come first served while PrefillAdder's budget lasts, max_prefill_tokens (ISL + 1500, aiconfigurator
  generator/rule_plugin/benchmark/sglang.rule:5 @2fc13d121) less the running decodes (schedule_policy.py:393, 400), the
  first prompt always (:747), a further one only below what is left (:747, :766); every running decode joins the step
  (scheduler.py:2184-2197). The overlap loop (scheduler.py:1135) schedules step n+1 while n runs: a request is taken
  only if it arrived before the running step started.
- "sglang-eagle": the same build with --speculative-algorithm NEXTN (the rule file writes it where the task sets nextn,
  sglang.rule:30-32 @2fc13d121; aiconfigurator's tasks set nextn = 1 for DeepSeek until cf5b256e0): NEXTN is EAGLE,
  which turns mixed chunks and the overlap loop off (server_args.py:2354-2395 @0.5.9, SGLANG_ENABLE_SPEC_V2 False,
  environ.py:414): a prefill step runs alone whenever a prompt waits (scheduler.py:1930-1940, "Run prefill first"), the
  decodes stall, budget max_prefill_tokens whole (no decodes to subtract); each decode step accepts 1 + Bernoulli(p)
  tokens a request (one draft).
- "trtllm": TensorRT-LLM as aiconfigurator's generator sets it (max_num_tokens = batch + ISL + 1500, chunked prefill
  off, overlap on: docs/modelling-notes.md#trtllm-first-token-steps): decodes and whole prompts in one step, a prompt
  admitted only if it fits what the decodes leave, the first one too.
- "vllm": vLLM V1 (chunked prefill on, decodes first, then the waiting prompts first come first served, the last one
  chunked, to max_num_batched_tokens = batch + ISL + 1500 as the workflow sets it).

Step times are the model's (serve.aggregated.evaluate on the clean sample's row: its decode step at each batch and a
prefill step's cost per prompt token), so the loop adds only the scheduling. Prints, per concurrency, the simulated
mean TTFT, the mean cohort of every timed request (requests whose prompts ran in the same uninterrupted prefill run: one step where the engine
mixes, the run of prefill-only steps where it does not), the share of the rest of the wave that the cohorts after
the first wave imply (serve.aggregated._cohort: q = q_c + d (C - q_c), q_c the prompts one step takes, 1 at 8k, 2 at
1k), the mean TPOT, and the measured rows' TTFT.

    python benchmarks/rebunch_sim.py                      # B200 DeepSeek-R1 FP8 TP8 8k/1k, the four rules
    python benchmarks/rebunch_sim.py --isl 1024 --osl 1024
"""
from __future__ import annotations

import argparse
import csv
import sys
from collections import deque
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
CLEAN = ROOT / "src/llm_codesign/data/measurements/serving_measured_blackwell_clean.csv"


def step_times(row: dict):
    """(decode step at batch b, prefill cost of n prompt tokens in a step) from the model for a clean-sample row:
    evaluate's decode step at a grid of batches and its prefill step for one prompt at 1/8, 1/4, 1/2, 1 of the ISL
    alone (concurrency 1), a line through them."""
    from llm_codesign.measure import validate as v
    from llm_codesign.serve.aggregated import Serving, evaluate

    (objs, idx), = v._grouped([row], None, None, v.row_problem)[0]
    model, gpu, prec, engine, spec, cal = objs
    from llm_codesign.spec.plan import Plan
    i = lambda k: int(row[k])  # noqa: E731
    plan = Plan(i("tp"), i("pp"), i("ep"), i("moe_tp"), i("attention_dp"), 1)
    at = Serving(gpu=gpu, prec=prec, plan=plan, engine=engine, spec=spec, max_num_tokens=None)
    isl, osl = float(row["isl"]), float(row["osl"])
    bs = np.array([1, 2, 4, 8, 16, 32, 64, 128, 256, 512], float)
    dec = evaluate(model, at, cal=cal, concurrency=bs, isl=isl, osl=osl)["step_s"]
    toks = isl * np.array([0.125, 0.25, 0.5, 1.0])
    pf = np.array([np.ravel(evaluate(model, at, cal=cal, concurrency=1.0, isl=t, osl=2.0)["prefill_step_s"])[0] for t in toks])
    slope, icpt = np.polyfit(toks, pf, 1)
    return (lambda b: float(np.interp(b, bs, np.broadcast_to(dec, bs.shape)))), (lambda n: icpt + slope * n), (icpt, slope)


def simulate(rule: str, *, C: int, isl: int, osl: int, t_dec, t_pf, tau=0.002, rounds=20, warm=2, mnbt=None,
             accept=0.7, rng=None) -> dict:
    """One run of the harness against `rule`: mean TTFT (s) of the timed requests, their mean cohort, TPOT (s).
    `accept`: the draft's acceptance where the rule speculates (sglang-eagle); `tau`: s from a last token to the
    next request in the engine's queue; `mnbt`: vLLM's max_num_batched_tokens, by default the workflow's
    batch + ISL + 1500 (vllm.rule:15, data/measurements/campaigns.toml), the batch the concurrency."""
    rng = rng or np.random.default_rng(0)
    budget = isl + 1500
    mnbt = C + isl + 1500 if mnbt is None else mnbt
    overlap = rule in ("sglang-mixed", "trtllm", "vllm")
    mixes = rule != "sglang-eagle"
    t = 0.0
    arrivals: list[tuple[float, int]] = []  # (time in the engine's queue, request id)
    sent, first, done, gen = {}, {}, {}, {}
    cohort = {}
    nxt = 0
    total = warm * C + rounds * C
    timed_from = warm * C

    def send(at):
        nonlocal nxt
        if nxt >= total or (nxt == timed_from and any(r not in done for r in range(timed_from))):
            return False
        sent[nxt] = at
        arrivals.append((at + tau, nxt))
        nxt += 1
        return True

    for _ in range(C):
        send(0.0)
    waiting: deque[int] = deque()
    running: list[int] = []  # decoding
    partial: dict[int, int] = {}  # prompt tokens done of a request mid-prefill (vLLM chunks)
    pending_slots = 0  # warm-up slots idle until the warm-up drains
    prev_start = 0.0
    run_members: list[int] = []
    while len(done) < total:
        # the engine's view of the queue: what arrived by now (overlap: by the start of the step now running)
        seen = prev_start if overlap else t
        for a in sorted(arrivals):
            if a[0] <= seen:
                waiting.append(a[1])
        arrivals[:] = [a for a in arrivals if a[0] > seen]
        if not waiting and not running and not partial:
            if not arrivals:
                break
            t = max(t, min(a[0] for a in arrivals))
            prev_start = t
            continue
        # form the step
        pf: list[tuple[int, int]] = []  # (request, tokens this step)
        dec = list(running)
        if rule == "vllm":
            room = mnbt - len(dec)
            for r in list(partial) + list(waiting):
                if room <= 0 or (r not in partial and len(dec) + len(partial) + len(pf) >= C):
                    break
                n = min(isl - partial.get(r, 0), room)
                pf.append((r, n))
                room -= n
            for r, _ in pf:
                if r in waiting:
                    waiting.remove(r)
        elif waiting:
            room = budget + (C if rule == "trtllm" else 0) - (len(dec) if rule in ("sglang-mixed", "trtllm") else 0)
            while waiting and len(running) + len(pf) < C:
                if rule == "trtllm":
                    if isl > room:
                        break
                elif pf and isl >= room:
                    break
                pf.append((waiting.popleft(), isl))
                room -= isl
        if pf and not mixes:
            dec = []  # prefill first: the decodes stall
        n_tok = sum(n for _, n in pf)
        dt = (t_dec(len(dec)) if dec else 0.0) + (t_pf(n_tok) - (t_pf(0) if dec else 0.0) if pf else 0.0)
        start, end = t, t + dt
        # a run of prefill-only steps (no mixing) or one mixed step is a cohort
        if pf:
            run_members += [r for r, n in pf if n > 0]
        if dec or mixes:
            for r in run_members:
                cohort[r] = len(run_members)
            run_members = []
        # results of this step
        for r, n in pf:
            partial[r] = partial.get(r, 0) + n
            if partial[r] >= isl:
                del partial[r]
                first[r] = end
                gen[r] = 1
                running.append(r)
        for r in dec:
            gen[r] += 1 + (rng.random() < accept if rule == "sglang-eagle" else 0)
            if gen[r] >= osl:
                done[r] = end
                running.remove(r)
                if nxt == timed_from and len(done) == timed_from:  # the warm-up drained: the timed burst
                    for _ in range(pending_slots + 1):
                        send(end)
                    pending_slots = 0
                elif not send(end):
                    pending_slots += 1
        prev_start, t = start, end
    timed = [r for r in range(timed_from, total) if r in first]
    ttft = np.array([first[r] - sent[r] for r in timed])
    tpot = np.array([(done[r] - first[r]) / (osl - 1) for r in timed])
    q = np.array([cohort.get(r, 1) for r in timed])
    # the model prices the first timed wave (a burst, 1 / rounds of the requests) apart: the share is the rest's
    return {"ttft": ttft.mean(), "ttft_p50": np.median(ttft), "q": q.mean(), "q_rest": q[C:].mean(), "tpot": tpot.mean()}


def measured(model: str, gpu: str, wd: str, tp: int, ep: int, isl: int, osl: int) -> dict:
    out: dict = {}
    for r in csv.DictReader(open(CLEAN)):
        if (r["model"].lower().endswith(model) and r["gpu"] == gpu and r["weight_dtype"] == wd and int(r["tp"]) == tp
                and int(r["ep"]) == ep and int(r["isl"]) == isl and int(r["osl"]) == osl):
            out.setdefault(r["backend"], {}).setdefault(int(r["concurrency"]), []).append(float(r["ttft_ms"]))
            out.setdefault("row", r)
    return out


RULES = ("trtllm", "sglang-mixed", "sglang-eagle", "vllm")


def model_cohort(isl: int) -> float:
    """The model's cohort where the engine mixes: the whole prompts one step's budget, ISL + 1500 (sglang.rule:5), takes."""
    return float((isl + 1500) // isl)


def _positive(kind):
    """An argparse type: a finite number above 0 (`kind` int or float), else one line naming what is valid."""
    def parse(text: str):
        try:
            v = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not valid; a {'positive integer' if kind is int else 'finite number above 0'}") from None
        if not (np.isfinite(v) and v > 0):
            raise argparse.ArgumentTypeError(f"{text!r} is not valid; a {'positive integer' if kind is int else 'finite number above 0'}")
        return v
    return parse


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="deepseek-r1")
    ap.add_argument("--gpu", default="b200")
    ap.add_argument("--wd", default="fp8")
    ap.add_argument("--tp", type=_positive(int), default=8)
    ap.add_argument("--ep", type=_positive(int), default=1)
    ap.add_argument("--isl", type=_positive(int), default=8192)
    ap.add_argument("--osl", type=_positive(int), default=1024)
    ap.add_argument("--tau", type=float, default=2.0, help="ms from a slot's last token to its next request in the queue")
    # aiconfigurator's own assumption for DeepSeek's first draft (sdk/task.py:348 @77374298: nextn_accept_rates 0.85); the
    # rows record none
    ap.add_argument("--accept", type=_positive(float), default=0.85, help="NEXTN's draft acceptance (sglang-eagle)")
    ap.add_argument("--rounds", type=_positive(int), default=20, help="timed requests per slot (aiperf --request-count / C)")
    ap.add_argument("--pf-scale", type=_positive(float), default=1.0, help="what-if: the model's prefill step times this")
    ap.add_argument("--conc", type=_positive(int), nargs="+", default=[4, 8, 16, 32, 64, 128])
    ap.add_argument("--rules", nargs="+", choices=RULES, default=list(RULES))
    args = ap.parse_args()
    if not 0.0 <= args.tau < float("inf"):
        ap.error(f"argument --tau: {args.tau!r} is not valid; a finite number of ms, 0 or more")
    if args.accept > 1.0:
        ap.error(f"argument --accept: {args.accept!r} is not valid; a share above 0 and at most 1")
    meas = measured(args.model, args.gpu, args.wd, args.tp, args.ep, args.isl, args.osl)
    if "row" not in meas:
        print(f"error: --isl/--osl and the row's other fields: no clean-sample row is {args.model} {args.gpu} {args.wd} TP{args.tp} "
              f"EP{args.ep} {args.isl}/{args.osl}; choose one that {CLEAN.name} holds", file=sys.stderr)
        raise SystemExit(2)
    t_dec, t_pf0, (icpt, slope) = step_times({**meas["row"], "backend": "sglang"})
    t_pf = lambda n: args.pf_scale * t_pf0(n)  # noqa: E731
    print(f"{args.model} {args.gpu} {args.wd} TP{args.tp} EP{args.ep} {args.isl}/{args.osl}: the model's decode step "
          + ", ".join(f"{b}: {t_dec(b) * 1e3:.1f}" for b in (1, 8, 32, 128)) + f" ms; prefill step {icpt * 1e3:.1f} ms + "
          f"{slope * 1e6:.2f} us a token ({t_pf(args.isl) * 1e3:.0f} ms a prompt)")
    print("C    | " + " | ".join(f"{r}: TTFT ms (cohort, share) TPOT" for r in args.rules) + " | measured TTFT ms")
    for C in args.conc:
        cells = []
        for rule in args.rules:
            s = simulate(rule, C=C, isl=args.isl, osl=args.osl, t_dec=t_dec, t_pf=t_pf, tau=args.tau / 1e3, accept=args.accept,
                         rounds=args.rounds)
            qc = model_cohort(args.isl)
            share = (s["q_rest"] - qc) / max(C - qc, 1.0)  # after the first wave, as the model's share
            cells.append(f"{s['ttft'] * 1e3:6.0f} ({s['q']:5.1f}, {share:4.2f}) {s['tpot'] * 1e3:5.1f}")
        m = "; ".join(f"{b} {'/'.join(f'{x:.0f}' for x in v[C])}" for b, v in meas.items() if b != "row" and C in v)
        print(f"{C:4d} | " + " | ".join(cells) + f" | {m}")


if __name__ == "__main__":
    main()
