"""How far to trust each predicted number: 80% and 95% intervals built from validation residuals.

For every predicted metric (TTFT, TPOT, tok/s/user, tok/s/GPU) `data/calibration/intervals.toml` holds,
per slice of the measured runs (mode x engine x GPU family x model class x load x lengths), the
split-conformal quantiles of r = log(measured / predicted): with the n residuals of a slice, the 80%
interval runs from the floor((n+1) 0.1)-th smallest to the ceil((n+1) 0.9)-th, the 95% from the
floor((n+1) 0.025)-th to the ceil((n+1) 0.975)-th (equal-tailed split conformal prediction: Lei, G'Sell,
Rinaldo, Tibshirani and Wasserman 2018, "Distribution-free predictive inference for regression", JASA
113:1094; per category, "Mondrian" conformal prediction: Vovk, Gammerman and Shafer 2005, ch. 4.5), and
its median absolute deviation (`mad`). The bundled bounds are locally adaptive (normalised split conformal,
Lei et al. 2018 sec. 5.2; Papadopoulos, Gammerman and Vovk 2008): each run's score is z = (r - m) / mad,
m and mad those of the slice it falls in, and a slice's bounds are m + mad x the conformal quantiles of z
pooled over every slice of its metric, mode, model class and load (`spread`), so a slice's width is its own
typical error's size and the shape of its tails the pool's: held out, this meets the per-fold target in
more folds than each slice's own quantiles (docs/modelling-notes.md#interval-adaptive). That holds at 80%;
at 95% a pool's tail is a few queueing runs 10-100x off, so the 95% bounds are each slice's own, each side
moved out by as much as normalising moved the slice's own 80% bound on that side (never in): the slice's own
tail beyond its 80% bound, laid past the normalised one (docs/modelling-notes.md#interval-nested). A profile's own
slices keep their own quantiles (they are the user's campaign). The bounds are not symmetric where the
residuals are biased: a slice whose first tokens come early has its whole interval above the prediction.
A slice with fewer than MIN_ROWS runs is not stored; a question takes the most specific stored slice
along HIERARCHY (slice -> engine x family x load -> engine x family, then across GPU families: engine x
class x load x lengths -> engine x load -> engine, then, for an engine with no slice, across engines: family x
class x load x lengths -> family x load -> family, then the mode), and the answer names it. TTFT's levels naming the
engine are walked first with the harness's arrival pattern too (waves, closed loop, burst: `hierarchy`): how first
tokens queue is the harness's, so a question takes its engine's runs sent as its requests are before its own GPU
family's sent otherwise (docs/modelling-notes.md#interval-arrival).

Measured runs of one campaign (a harness, its engine builds) or one GPU family share a shift that
another's do not, so the slices' own spread is the within-slice part of a random-effects decomposition
of r (a between-group shift plus a within-slice spread) and every interval of the bundled table also
carries a between-group part T (`between` in the file, per level): the bounds about the slice's median m
are q_lo - T and q_hi + T (q_lo, q_hi the within-slice bounds above, log units): the within-slice bounds
conformalised over new groups, each held-out run scored by how far it lies beyond them, max(q_lo - r, r - q_hi)
(conformalized quantile regression's score: Romano, Patterson and Candes 2019, "Conformalized quantile
regression", NeurIPS 32, sec. 3.1, floored at 0 here: a band never narrows below its slice's own). It replaced
the random-effects prediction interval m -+ sqrt(within^2 + T^2) (Higgins, Thompson and Spiegelhalter 2009, JRSS
A 172:137), which takes a slice's spread and a group's shift as independent, so the same T widened a wide slice's
bound little and a narrow one's much; held out, the fold x metric cells meeting both coverage targets rose 26 -> 29
of 86 with T added (docs/modelling-notes.md#cov40-linear). T is the one a new group needs: on leave-one-group-out folds of every kind
(campaigns, GPU families, engines, shapes), the term that just covers each held-out run, and
T the quantile at the stated level of the held-out runs' pooled CDF (Dunn, Wasserman and Ramdas 2023,
"Distribution-free prediction sets for two-layer hierarchical models", JASA 118), each group weighing
n / (n + n0) for its n runs (a random-effects weight, n0 = within / between variance, DerSimonian and
Laird 1986): alike where the groups differ far beyond their sampling noise, less for a group of a few runs.
Inside the calibrated envelope T is the campaign term (`campaign`: held-out runs with no reason below);
outside it (a GPU family, engine, shape class or precision with no measured run, a GEMM, attention or
collectives kernel without a table, MoE expert kernels without one, a model no run measures, speculative
decoding, a concurrency, ISL or OSL more than BEYOND times past its engine's measured range in its mode) T is the
largest of the terms measured for those reasons, and the answer names what is missing. `benchmarks/validation_report.py --intervals PATH`
writes the file and reports each fold's coverage in docs/validation_report.md; a test fails when it is
stale. A profile written by `calibrate --serving` carries the slices of its own runs ([intervals]); they
replace the bundled ones where they cover a question, and the answer says so: its runs are the user's
own campaign, so they carry no campaign term (only a reason's).
"""
from __future__ import annotations

import json
import math
import re
import tomllib
from dataclasses import KW_ONLY, dataclass, replace
from functools import lru_cache
from importlib import resources
from statistics import NormalDist

import numpy as np

from llm_codesign.measure.stats import BAND_NAMES, CONCURRENCY_BANDS
from llm_codesign.outputs import VALIDATE_BOUND_SUFFIX, bound_columns
from llm_codesign.serve.aggregated import DECODE_LAUNCH_RANGE_S, launch_range
from llm_codesign.spec.plan import accepted_within, cached_tokens

METRICS = ("ttft_ms", "tpot_ms", "tok_s_per_user", "output_tok_s_per_gpu")
# the column a serving CSV measures each metric in (validate's names)
COLUMNS = {"ttft_ms": "ttft_ms", "tpot_ms": "tpot_ms", "tok_s_per_user": "output_tok_s_per_user",
           "output_tok_s_per_gpu": "output_tok_s_per_gpu"}
LABELS = {"ttft_ms": "TTFT", "tpot_ms": "TPOT", "tok_s_per_user": "tok/s/user", "output_tok_s_per_gpu": "tok/s/GPU"}
LEVELS = (80, 95)  # the stated coverages, %
KEYS = ("mode", "engine", "family", "model_class", "load", "lengths")
# from the slice to the whole mode, a lattice walked in one order: each level drops first the dimension the question
# has no slice for. A question on a family no run covers skips to the levels across families (same engine, class, load
# and lengths first); one on an engine with no slice (no run, or under MIN_ROWS: ATOM's 36) to the levels across
# engines (same family, class, load and lengths first), the runs of its own GPUs rather than every engine and family
# pooled: the nearest exchangeable group (Lei et al. 2018 sec. 5.2's scores are exchangeable within a slice; partial
# pooling toward the nearest parent group, Gelman and Hill 2007 ch. 12). One order serves every case: a level holds at
# most its parent's runs, so an engine with no (mode, engine) slice has no slice at any level naming it, and one with it
# stops there before the levels across engines; where every dimension is measured the order is the one before.
HIERARCHY = (KEYS, ("mode", "engine", "family", "load"), ("mode", "engine", "family"), ("mode", "engine", "model_class", "load", "lengths"),
             ("mode", "engine", "load"), ("mode", "engine"), ("mode", "family", "model_class", "load", "lengths"),
             ("mode", "family", "load"), ("mode", "family"), ("mode",))
# the metrics whose slices also split by how the harness sent the requests (Context.arrival), at the levels naming the
# engine, walked before every level without it: a waves harness's first tokens queue behind their cohort's prefills, a
# closed loop's behind arrivals spread over the requests' lives (spec/harness.py), and the serving fit learnt each engine's
# queueing from its campaigns' harnesses, so an engine's TTFT residuals shift with the harness more than with the GPU
# family. Held out, B's and C's SGLang TTFT sit on each other's closed loops, not on A's waves on B's family: B's TTFT
# 89.0 -> 83.8% inside the 80% interval, C's 94.2 -> 85.2%; TPOT's residuals do not shift so (A's waves priced from B's
# closed loops x1.02 on TPOT, x1.32 on TTFT) and C's TPOT fell out of its target with them (docs/modelling-notes.md#interval-arrival)
ARRIVAL_METRICS = ("ttft_ms",)


def hierarchy(metric: str) -> tuple[tuple[str, ...], ...]:
    """The levels a question's slice of `metric` is looked for along, most specific first: HIERARCHY, after its levels
    naming the engine with the arrival pattern too for ARRIVAL_METRICS."""
    if metric not in ARRIVAL_METRICS:
        return HIERARCHY
    return (*((*lv, "arrival") for lv in HIERARCHY if "engine" in lv), *HIERARCHY)


# the modes whose slices keep the load band before the engine: a level dropping it comes after every level keeping it
# (mode x load last of those). The 175 disaggregated runs (all DeepSeek-R1 on Blackwell, 133 TensorRT-LLM's) hold
# TensorRT-LLM slices at 33+ requests only, so HIERARCHY's walk answered 1-4 requests from the engine's 133 runs of every
# load, 89 of them at 33+ (TTFT 80% x0.29-x5.4 of the prediction), where both engines' 42 runs at 1-4 requests give
# x0.88-x2.3 (docs/modelling-notes.md#dband-load): the prefill pool's queue, not the engine, sets a disaggregated TTFT's
# spread. Aggregated modes keep HIERARCHY (their engine x load slices are populated; the folds measured that order)
LOAD_FIRST_MODES = ("disaggregated",)
# a load band too thin for a slice at any level keeping it (LOAD_FIRST_MODES), pooled with a neighbour band before the
# walk drops the load: the 21 disaggregated runs at 5-32 requests (under MIN_ROWS at every level, mode x load included)
# took the engine's runs of every load, 89 of TensorRT-LLM's 133 at 33+ (TTFT 80% x19.4 wide). Each metric pools on the
# side its residuals resemble, chosen nested (each 5-32 run scored with the side chosen leave-one-run-out on the band's
# other runs, benchmarks/interval_disagg.py; docs/modelling-notes.md#dband2-load): TTFT with 33+ (`load_above`: the
# prefill queue and the decode-slot wait grow with the load; with 1-4 the 5-32 runs' TTFT fell to 66.7% inside the 80%),
# the decode rates with 1-4 (`load_below`: a few requests a rank, the step a weight read). A band with a slice of its
# own (1-4, 33+) finds it first, so only a thin band's questions reach the pooled levels
LOAD_POOLS = {"load_below": {"1-4": "1-32", "5-32": "1-32"}, "load_above": {"5-32": "5+", "33+": "5+"}}
POOL_SIDE = {"ttft_ms": "load_above", "tpot_ms": "load_below", "tok_s_per_user": "load_below", "output_tok_s_per_gpu": "load_below"}


def levels_for(metric: str, mode: str) -> tuple[tuple[str, ...], ...]:
    """hierarchy(metric) as a `mode` question walks it: for LOAD_FIRST_MODES the levels keeping the load band first
    (then mode x load), then the same levels with the load band pooled with its neighbour on the metric's side
    (POOL_SIDE, LOAD_POOLS; then mode x the pooled bands), in hierarchy's order within each part, so that a thin load band
    pools across engines and families, then with the next band, before it pools across loads (Gelman and Hill 2007
    ch. 12's nearest parent, taken as the load's)."""
    h = hierarchy(metric)
    if mode not in LOAD_FIRST_MODES:
        return h
    keep, side = [lv for lv in h if "load" in lv], POOL_SIDE.get(metric)
    pooled = [tuple(side if k == "load" else k for k in lv) for lv in (*keep, ("mode", "load"))] if side else []
    return (*keep, ("mode", "load"), *pooled, *(lv for lv in h if "load" not in lv))


def _skipped(level: tuple[str, ...], ctx) -> bool:
    """A level a record or question has no key at: the arrival pattern not said (offline), or no pooled load band
    (LOAD_POOLS: its band is not pooled on that side)."""
    return ("arrival" in level and not ctx.arrival) or any(k in level and not getattr(ctx, k) for k in LOAD_POOLS)


MIN_ROWS = 39  # the fewest residuals whose 97.5th percentile is an order statistic: ceil((n+1) 0.975) <= n
# A profile's own runs make a slice from the fewest whose 90th percentile is one, ceil((n+1) 0.9) <= n: 9 (split conformal's
# finite-sample rule, Lei, G'Sell, Rinaldo, Tibshirani & Wasserman 2018, JASA 113:1094, Thm 2.2; Angelopoulos & Bates 2021,
# arXiv:2107.07511, sec. 1.1: the ceil((n+1)(1-a))/n empirical quantile), its 80% band from them; its 95% is the bundled
# one until MIN_ROWS (band: no order statistic bounds it). newc11 #15: 30 runs at -2.4/+6.5% had kept the bundled -12.5/+14.5%
OWN_MIN_ROWS = 9
MODES = ("serving", "offline", "disaggregated")
# a slice's typical error below which z would blow up (log units: 0.1%; no slice of the shipped runs is this narrow)
MAD_FLOOR = 1e-3
# what each between-group term stands for: a new campaign (every bundled answer), then the reasons a
# question lies outside the calibrated envelope
WIDEN = ("family", "kernel", "moe", "engine", "shape", "model", "spec", "load", "low_load", "lengths", "adp_wait")
BETWEEN = ("campaign", *WIDEN)
# reasons no shipped run measures by construction, so intervals.toml holds no term for them. "eager": a decode step
# outside the CUDA graphs (serve.eager.EagerDecode), priced from its host launches (serve.aggregated.decode_launch_host:
# DECODE_LAUNCH_S each, documented, not fitted) beyond its kernels; no campaign row decodes eagerly
# (docs/modelling-notes.md#cg128-default-graphs, #ppeager-eager): widened by its own terms (eager_terms), not the table's
UNRUN = ("eager",)
# reasons of a kind of their own, widened by another kind's between-group term: "request_cost", an engine's fitted
# per-request cost priced on a model of a class its fit never saw (request_cost_outside), by the held-out models' term (the
# closest folds measure to an engine cost carried to models unlike its runs; newc6 #1). Its own kind so that the bands of
# the metrics it cannot move (DECODE_ONLY) drop it by kind, not by matching its text. "what_if", a GPU no run measured
# (what_if_gpu), by the held-out GPU families' term: a GPU whose runs no fit saw, priced from its figures (newc9 #5)
# "arrival": a band of an arrival no run was sent as (arrival_reason), by the family term, the waves band's where its
# slice is another family's
TERM_OF = {"request_cost": "model", "prefix_lengths": "lengths", "what_if": "family", "arrival": "family"}
# "adp_wait": TensorRT-LLM's fitted attention-DP hold (adp_wait_steps, 60 decode iterations) priced in a TTFT. It serves the
# DeepSeek runs it was fitted on and misses gpt-oss-120b's (its 1k-prompt runs read 3-4x over, none in the 80% band): no
# mechanism read prices both (docs/modelling-notes.md#fixADP-wait-band), so a TTFT band with it widens by its own term,
# measured on the clean sample's and InferenceX's TensorRT-LLM attention-DP runs, each model one group
# (benchmarks/interval_folds.adp_wait_term); TTFT's alone (ARRIVAL_METRICS: the hold is before the first token)
ADP_WAIT = ("the fitted attention-DP wait (adp_wait_steps, cause unread): fitted on DeepSeek-R1/V3 runs, it prices "
            "gpt-oss-120b's 1k-prompt runs 3-4x over")
# a prefix-cache hit (Context.prefix_hit): no bundled run used a prefix cache (no serving CSV has a prefix or hit column),
# so no fold measures a term for it. Where the tokens a request prefills lie more than BEYOND below its engine's smallest
# measured ISL, "prefix_lengths": the lengths term (held-out runs under 1/2 their engine's smallest ISL: a prefill length
# outside the runs'); else "prefix", said and not widened (no term in [between]): crev9 #2
NO_TERM = ("prefix",)
# the eager term at each level: the launch cost's range's ends read as its 95% range, a normal's z ratio below it (as the
# between-group terms are measured at each level: 80% is z 1.2816 against 1.96)
EAGER_LEVEL = {80: 1.2816 / 1.9600, 95: 1.0}
# the metrics that fall as TPOT rises: their band's lower side takes TPOT's up move (tok/s/GPU over a request's life, whose
# decode part is at most all of it: TPOT's move bounds its own)
FALLS_WITH_TPOT = ("tok_s_per_user", "output_tok_s_per_gpu")
# a band's keys shaped as its prediction (one per point of a frontier)
POINTWISE = ("lo80", "hi80", "lo95", "hi95", "centre", "span95", "predictable")


@dataclass(frozen=True)
class Context:
    """What a question is, as the residual slices see it: serving at a concurrency, offline max
    throughput or disaggregated; the engine; the GPU's family; dense or MoE; the concurrency band
    (stats.concurrency_band); the ISL/OSL class; and, for the envelope, the model's layer kinds, the
    weight/activation format the GPU runs its experts in (a MoE model's) or its GEMMs (a dense one's), whether it
    speculates, the MoE kernel families the engine runs for its experts that have no fitted values (unfitted_moe), the
    model's name ("" for a shape `design` made), the requests in flight, ISL and OSL (None: not known, e.g. offline's
    concurrency), how the requests arrive (spec.harness.ARRIVALS; "": not said, e.g. offline) and the format a MoE
    model's dense GEMMs run where it is not its experts' (`gemm_fmt`, "": `fmt`): gpt-oss's BF16 attention projections
    beside its W4A8 experts on TensorRT-LLM's Blackwell (needed_tables)."""
    mode: str
    engine: str
    family: str
    model_class: str
    load: str
    lengths: str
    kinds: tuple[str, ...] = ()
    fmt: str = ""
    spec: bool = False
    moe_kernels: tuple[str, ...] = ()
    model: str = ""
    concurrency: float | None = None
    isl: float | None = None
    osl: float | None = None
    arrival: str = ""
    gemm_fmt: str = ""
    # a decode step outside the CUDA graphs (serve.eager.EagerDecode): UNRUN's reason, TPOT's (down, up) log moves at the
    # launch cost's range's ends (serve.aggregated.eager_tpot_moves); (0, 0): none
    eager: tuple[float, float] = (0.0, 0.0)
    # a measured run's metrics its own repeat does not reproduce (unreproduced): scored, kept out of the slices' quantiles
    unreproduced: tuple[str, ...] = ()
    # TTFT's (down, up) log moves there (serve.aggregated.eager_ttft_moves: the decode steps it waits out)
    eager_ttft: tuple[float, float] = (0.0, 0.0)
    # that step replays vLLM's piecewise graphs (serve.eager.EagerDecode.piecewise): the ops between the pieces, priced alike
    eager_piecewise: bool = False
    # the share of each prompt in the prefix cache (spec.plan.Workload.prefix_hit): NO_TERM's reason, or TERM_OF's
    prefix_hit: float = 0.0
    # a GPU no run measured (what_if_gpu: a GPU .toml of one's own, the page's what-if GPU), in words; "": a catalog GPU
    what_if: str = ""
    # the engine's fitted attention-DP hold is priced in its TTFT (EngineCosts.adp_hold_steps > 0): ADP_WAIT's reason
    adp_hold: bool = False

    @property
    def load_below(self) -> str:
        """The load band pooled with its lower neighbour (LOAD_POOLS; "" where it is not pooled so)."""
        return LOAD_POOLS["load_below"].get(self.load, "")

    @property
    def load_above(self) -> str:
        """The load band pooled with its upper neighbour (LOAD_POOLS; "" where it is not pooled so)."""
        return LOAD_POOLS["load_above"].get(self.load, "")

    def key(self, level: tuple[str, ...]) -> str:
        return "|".join(getattr(self, k) for k in level)


def load_of(concurrency) -> str:
    """The concurrency band of a number of requests in flight (stats.concurrency_band), "offline" for None."""
    if concurrency is None:
        return "offline"
    return BAND_NAMES[sum(float(concurrency) > b for b in CONCURRENCY_BANDS)]


def lengths_class(isl: float, osl: float) -> str:
    """prefill-heavy (ISL >= 4 OSL), decode-heavy (OSL >= 4 ISL) or balanced."""
    return "prefill-heavy" if isl >= 4 * osl else "decode-heavy" if osl >= 4 * isl else "balanced"


def format_label(prec) -> str:
    """The GEMM format a (GPU-executable) precision runs: its own name where weights and activations
    share it (bf16, fp8, fp8_block, nvfp4), else W<bits>A<bits> (W4A16: 4-bit weights, BF16 math)."""
    w, a = prec.weight, prec.activation
    if w.name == a.name or (w.math == a.math == "bf16" and w.bits == a.bits):
        return w.name
    return f"W{w.bits}A{16 if a.math == 'bf16' else a.bits}"


def context(model, gpu, prec, *, engine: str, concurrency, isl: float, osl: float, spec: bool = False,
            disaggregated: bool = False, arrival: str = "", eager: tuple[float, float] = (0.0, 0.0),
            eager_ttft: tuple[float, float] = (0.0, 0.0), eager_piecewise: bool = False, prefix_hit: float = 0.0,
            adp: int = 1) -> Context:
    """The Context of a question: `prec` as asked (mapped here to what `gpu` executes), `concurrency`
    None for offline max throughput (its `arrival` is then not said: every request queued at once)."""
    from llm_codesign.cost.ffns import moe_step_activation
    from llm_codesign.spec.engines import ENGINES
    from llm_codesign.spec.kinds import MoE
    from llm_codesign.spec.precision import executable

    run = executable(prec, gpu)[0]
    # the dense GEMMs' format: a MoE model with no dense FFN runs them in its attention's weights where the checkpoint keeps
    # those apart (gpt-oss's BF16 attention: attn-W:bf16), else in the precision's own
    dense = not model.is_moe or any(not isinstance(layer.ffn, MoE) and layer.ffn.kind != "none" for layer, _ in model.groups)
    gemm_fmt = format_label(run if dense or run.attn_weight is None else replace(run, weight=run.attn_weight, activation=run.attn_weight))
    # where the engine or AITER's MoE runs these steps' experts on quantised activations (TensorRT-LLM's and SGLang's MXFP8 on
    # Blackwell, AITER's switch on CDNA4 from 256 tokens), its format's runs
    high = moe_step_activation(model, gpu, run, ENGINES.get(engine), concurrency)
    if high is not None:
        run = replace(run, activation=high)
    mode = "disaggregated" if disaggregated else "offline" if concurrency is None else "serving"
    kinds = sorted(({layer.attn.kind for layer, _ in model.groups} | {layer.ffn.kind for layer, _ in model.groups}) - {"none"})
    load = load_of(concurrency)
    return Context(mode, engine, gpu.family, "moe" if model.is_moe else "dense", load, lengths_class(isl, osl), tuple(kinds),
                   format_label(run), spec, unfitted_moe(gpu, run, engine) if model.is_moe else (), model.name,
                   None if concurrency is None else float(concurrency), float(isl), float(osl), "" if concurrency is None else arrival,
                   gemm_fmt if gemm_fmt != format_label(run) else "", tuple(eager), eager_ttft=tuple(eager_ttft),
                   eager_piecewise=bool(eager_piecewise), prefix_hit=float(prefix_hit), what_if=what_if_gpu(gpu),
                   adp_hold=adp_holds(ENGINES.get(engine), adp, concurrency))


def priced_terms(plan, eager=None, *, osl: float) -> dict:
    """context's terms of what was priced, one rule for estimate's, mix's and design's bands (crev12 #2): `plan`'s
    attention-DP ranks (adp_holds: the fitted hold's widening) and, where the decode step misses the CUDA graphs (`eager`:
    serve.eager.EagerDecode; None where it does not, or where nothing priced it), TPOT's and TTFT's moves at the launch
    cost's range's ends (Context.eager, eager_ttft, eager_piecewise); none at one output token (no decode step:
    serve.metrics.no_decode, nothing eager to widen by)."""
    adp = {"adp": int(np.max(np.asarray(plan.adp)))}
    if eager is None or osl <= 1:
        return adp
    return adp | {"eager": eager.moves, "eager_ttft": eager.ttft_moves, "eager_piecewise": eager.piecewise}


def running_load(concurrency, max_batch):
    """The load a band is looked up at: the batch that runs, min(`concurrency`, `max_batch`), not the requests offered (64
    requests on 16 slots run as 16, the queue's cohorts ahead priced apart: newc7 #7); None where no load is given. One
    rule for estimate's bands and mix's (crev12's left-over: mix looked up the concurrency offered, equal below the cap)."""
    return None if concurrency is None else min(concurrency, max_batch)


def adp_holds(engine, adp, concurrency) -> bool:
    """Whether `engine` prices its fitted attention-DP hold at `adp` ranks and `concurrency` requests
    (EngineCosts.adp_hold_steps' condition: Engine.holds_adp_requests, more than one rank and, where it holds only while
    every rank decodes, more requests than ranks), a hold runs informed (Engine.adp_hold_runs: TensorRT-LLM's 60 steps;
    vLLM's bundled adp_wait_steps is 0, fitted.toml)."""
    if engine is None or not engine.holds_adp_requests or not engine.adp_hold_runs or concurrency is None or int(adp) <= 1:
        return False
    return not engine.adp_hold_needs_every_rank_decoding or float(concurrency) > int(adp)


def what_if_gpu(gpu) -> str:
    """A GPU no run measured, in words: one not in the catalog (a GPU .toml of one's own) or derived from a catalog GPU
    (`base_id`: the page's what-if GPU), its bandwidth (and BF16 peak, where it differs) against its base's or else the
    nearest catalog GPU of its family by bandwidth; "" for a catalog GPU, or a file whose figures are a catalog GPU's
    (Gpu.figures: priced alike, so its runs measure it). Its runs' family is taken from the file, so the family's runs
    answered a chip of 2.45x the MI355X's bandwidth at the MI355X's width (newc9 #5)."""
    from llm_codesign.spec.hardware import catalog

    cat = catalog()
    if (gpu.id in cat and not gpu.base_id) or any(g.figures() == gpu.figures() for g in cat.values()):
        return ""
    kin = [g for g in cat.values() if g.family == gpu.family]
    # a what-if GPU (base_id) from the page's form, or from a GPU file's `base` + what-if keys (spec.hardware.what_if)
    page = dict(gpu.sources).get("what_if", "").endswith("(the page's form)")
    how = ("figures from the what-if form" if page else "what-if figures from its TOML") if gpu.base_id else "figures from its TOML"
    near = cat.get(gpu.base_id) or min(kin, default=None, key=lambda g: abs(math.log(gpu.hbm_bandwidth_bytes_per_s / g.hbm_bandwidth_bytes_per_s)))
    if near is None:
        return f"a GPU no run measured ({gpu.id}): {how}"
    ratios = f"x{gpu.hbm_bandwidth_bytes_per_s / near.hbm_bandwidth_bytes_per_s:.2f} the bandwidth"
    if abs(gpu.peak("bf16") / near.peak("bf16") - 1.0) > 1e-9:
        ratios += f" and x{gpu.peak('bf16') / near.peak('bf16'):.2f} the BF16 peak"
    whose = f"its base, the {near.name}" if gpu.base_id else f"the nearest {family_name(gpu.family)} GPU in the catalog, the {near.name}"
    return f"a GPU no run measured ({gpu.id}): {how}, {ratios} of {whose}"


# MoE kernel families priced at the kernel tables' values by design where unfitted: TensorRT-LLM's CUTLASS
# fused MoE is the kernel the tables time (their three price it where its own rows give no values: INT4 weight-only)
TABLES_OWN = ("cutlass",)


def unfitted_moe(gpu, prec, engine: str) -> tuple[str, ...]:
    """The MoE kernel families `engine` runs for experts at `prec` (GPU-executable) on `gpu`, with or without
    EP (Engine.moe_kernel), that the bundled profile has no fitted values for (moe_kernel_eff), as
    "<family> <GEMM kernel family>": they are priced at the kernel tables' generic values
    (Calibration.moe_kernel), e.g. vLLM's per-tensor FP8 MoE on Hopper, FlashInfer's CUTLASS MoE, whose
    rows are left out of the fit (kernel_tables.MOE_UNTIMED)."""
    from llm_codesign.cost.calibration import calibration_for
    from llm_codesign.cost.gemm import gemm_kernel
    from llm_codesign.spec.engines import ENGINES
    from llm_codesign.spec.precision import gemm_math

    if engine not in ENGINES:
        return ()
    kernel = gemm_kernel(gemm_math(prec.weight, prec.activation, gpu), prec.weight.name, fp4_math=gpu.supports("fp4"))
    fitted = dict(calibration_for(gpu).moe_kernel_eff)
    fams = dict.fromkeys(ENGINES[engine].moe_kernel(gpu.family, kernel, weight=prec.weight.name, ep=ep) for ep in (False, True))
    return tuple(f"{f} {kernel}" for f in fams if f is not None and f not in TABLES_OWN and f"{f}.{kernel}" not in fitted)


def _executable(prec, gpu):
    from llm_codesign.spec.precision import executable

    return executable(prec, gpu)[0]


def conformal(r: np.ndarray, q: float) -> float:
    """The split-conformal bound at tail quantile `q` of residuals `r`: the floor((n+1) q)-th smallest
    below the median, the ceil((n+1) q)-th above (NaN where the sample is too small for it)."""
    s = np.sort(np.asarray(r, float))
    n = len(s)
    k = math.floor((n + 1) * q) if q < 0.5 else math.ceil((n + 1) * q)
    return float(s[k - 1]) if 1 <= k <= n else float("nan")


def tails(level: float) -> tuple[float, float]:
    """The lower and upper tail quantiles of an equal-tailed `level`% interval."""
    return (100 - level) / 200, (100 + level) / 200


def qname(q: float) -> str:
    """A quantile's key in a slice, in permille: q025 (2.5%), q100, q500 (the median), q900, q975."""
    return f"q{round(q * 1000):03d}"


def cell(r, *, levels=LEVELS) -> dict:
    """One slice: n, the median, the conformal bounds of each of `levels` and the median absolute
    deviation from the median (`mad`) of its residuals."""
    r = np.asarray(r, float)
    med = float(np.median(r))
    out = {"n": len(r), "q500": round(med, 4)}
    for q in sorted(q for lvl in levels for q in tails(lvl)):
        out[qname(q)] = round(conformal(r, q), 4)
    return out | {"mad": round(float(np.median(np.abs(r - med))), 4)}


# the levels whose within-slice part is normalised (mad x the pool's quantiles): the 80% only. A pool's 97.5th
# percentile score comes from a few queueing runs 10-100x off, and times a wide slice's mad it put README's H200 TTFT
# 95% band at 61-40,634 ms around 210 ms; each slice's own quantiles shape the 95% (docs/modelling-notes.md#interval-adaptive)
NORMALISED_LEVELS = (80,)


def spread_key(metric: str, ctx: Context) -> str:
    """The pool of normalised scores a slice's bounds take (`spread`): its metric, mode, model class and load
    (the tails' shape differs with what binds a step: a few requests' steps are weight reads and host work, many
    requests' compute; dense and MoE runs' tails differ too, docs/modelling-notes.md#interval-adaptive)."""
    return f"{metric}|{ctx.mode}|{ctx.model_class}|{ctx.load}"


def within(metric: str, c: dict, ctx: Context, table: dict, level: float, *, own: bool = False) -> tuple[float, float]:
    """The within-slice part of a `level`% interval of slice `c` (found for `ctx`): its distances below and
    above the slice's median, log units. At NORMALISED_LEVELS mad x the pooled normalised quantiles where the
    table has them (the bundled slices); above them, on each side, the slice's own conformal distance plus what
    the normalisation added to the slice's own distance at the highest normalised level below (never less than
    0): the slice's own tail beyond that level laid past the normalised bound, so that a 95% bound lies beyond
    the 80% one wherever the slice's own tail does (issue 40: the 95% had equalled the 80% on a side). Added, not
    multiplied: in a slice of under 79 runs the own 95% distance is its most extreme run, and a factor put one
    mislabelled run's 57x into a TTFT band reaching 1/10,000 of the prediction (docs/modelling-notes.md#interval-nested).
    Else (a level below them, a profile's `own` slices, a pool too thin) the slice's own conformal bounds."""
    q_lo, q_hi = tails(level)
    lo, hi = c["q500"] - c[qname(q_lo)], c[qname(q_hi)] - c["q500"]
    z = None if own else table.get("spread", {}).get(spread_key(metric, ctx))
    if z is None:
        return lo, hi
    if level in NORMALISED_LEVELS:
        s = max(c["mad"], MAD_FLOOR)
        return -z[qname(q_lo)] * s, z[qname(q_hi)] * s
    below = [lvl for lvl in NORMALISED_LEVELS if lvl < level]
    if not below:
        return lo, hi
    ref = max(below)
    r_lo, r_hi = tails(ref)
    n_lo, n_hi = within(metric, c, ctx, table, ref)
    # the slice's own distance at `ref`, floored as the mad is: a slice's 10th percentile may equal its median
    o_lo, o_hi = max(c["q500"] - c[qname(r_lo)], MAD_FLOOR), max(c[qname(r_hi)] - c["q500"], MAD_FLOOR)
    return lo + max(0.0, n_lo - o_lo), hi + max(0.0, n_hi - o_hi)


def _number(cell) -> float:
    """A measured cell as a number; blank or not a number (a file's stray text) is NaN: not measured."""
    try:
        return float((cell or "").strip() or "nan")
    except ValueError:
        return float("nan")


def _measured(row: dict, metric: str, mode: str) -> float:
    """A row's measured value of `metric`; where the run states TTFT and TPOT but not the throughputs,
    tok/s/user is 1/TPOT (as the model defines it) and tok/s/GPU follows by Little's law: concurrency
    x OSL over a request's life, TTFT + (OSL-1) x TPOT, per GPU (a closed-loop benchmark's throughput)."""
    def num(col):
        return _number(row.get(col))

    y = num(COLUMNS[metric])
    if math.isfinite(y) or mode == "offline":
        return y
    ttft, tpot = num("ttft_ms"), num("tpot_ms")
    if metric == "tok_s_per_user":
        return 1e3 / tpot
    if metric == "output_tok_s_per_gpu":
        conc, osl, gpus = num("concurrency"), num("osl"), num("num_gpus")
        return conc * osl / ((ttft + (osl - 1) * tpot) / 1e3) / gpus
    return y


def row_contexts(rows: list[dict], preds: list[dict]) -> list[Context | None]:
    """The Context of each priced serving row (validate.predict_serving's predictions; None where not priced), with
    its harness's arrival pattern (measure.campaigns.settings, as validate prices it)."""
    from llm_codesign.measure.campaigns import settings
    from llm_codesign.measure.validate import _int, _precision, is_disagg
    from llm_codesign.spec.hardware import get_gpu
    from llm_codesign.spec.registry import get_model

    disagg = is_disagg(rows)
    out = []
    for r, p in zip(rows, preds, strict=True):
        if not p:
            out.append(None)
            continue
        model, gpu = get_model(r["model"]), get_gpu(r["gpu"])
        conc = (r.get("concurrency") or "").strip()
        out.append(context(model, gpu, _precision(model, r), engine=(r.get("backend") or "trtllm").strip().lower(),
                           concurrency=float(conc) if conc else None, isl=float(_int(r, "isl")), osl=float(_int(r, "osl")),
                           spec=bool((r.get("spec_method") or "").strip()), disaggregated=disagg, arrival=settings(r)["arrival"],
                           adp=_int(r, "attention_dp")))
    return out


# a repeat that does not reproduce a run's TTFT: the same deployment (every column but the source and the measured
# ones equal) measured again in the file with its TPOT within REPEAT_TPOT (the decode reproduced) and its TTFT more than
# REPEAT_TTFT apart. Of the repeat groups of the shipped files whose TPOT agrees within 1%, one pair passes x10: the
# disaggregated GB200 FP8 run at 3 requests (1 prefill DEP8, 3 decode TEP8 of max_batch_size 1), InferenceX
# 21701654125/3 TTFT 6,320 ms against 21646597716/1's 268.7 ms, TPOT 7.4367 / 7.4436 ms (serving_disagg_blackwell.csv);
# the next, A's x6.8 at 256 requests. The one farther from its prediction is kept out of the slices' quantiles
# (build) and still scored: split conformal's bound over the remaining runs (Lei et al. 2018's finite-sample
# ceil((n + 1) q)-th of the n others), the run named in the report (docs/modelling-notes.md#dband2-load)
REPEAT_TPOT, REPEAT_TTFT = 0.01, 10.0
_MEASURED = frozenset({"source", *COLUMNS.values()})


def unreproduced(rows: list[dict], preds: list[dict]) -> dict[int, str]:
    """{row index: why} of the priced rows whose TTFT a repeat does not reproduce (REPEAT_TPOT, REPEAT_TTFT): of each
    such pair the one farther (log) from its prediction, the slow run or the fast one, with the other's source. A rule
    about unreproducible runs, not a mechanism: REPEAT_TTFT's x10 was set after seeing the shipped files (their one
    pair past it is x23.5, the next x6.8); shipped, it flags InferenceX 21701654125/3 alone."""
    groups: dict[tuple, list[int]] = {}
    for i, (r, p) in enumerate(zip(rows, preds, strict=True)):
        if p:
            groups.setdefault(tuple(sorted((k, (v or "").strip()) for k, v in r.items() if k not in _MEASURED)), []).append(i)
    out = {}
    for idx in groups.values():
        for a, i in enumerate(idx):
            for j in idx[a + 1:]:
                ti, tj = _number(rows[i].get("ttft_ms")), _number(rows[j].get("ttft_ms"))
                si, sj = _number(rows[i].get("tpot_ms")), _number(rows[j].get("tpot_ms"))
                if not (min(ti, tj, si, sj) > 0 and abs(si / sj - 1.0) <= REPEAT_TPOT and max(ti / tj, tj / ti) > REPEAT_TTFT):
                    continue
                pi, pj = preds[i].get("ttft_ms", math.nan), preds[j].get("ttft_ms", math.nan)
                if not min(pi, pj) > 0:
                    continue
                # the farther of the two, whichever was slow (the code flagged only the slow run if it was the farther)
                k, o = (i, j) if abs(math.log(ti / pi)) > abs(math.log(tj / pj)) else (j, i)
                tk, to, sk, so = (ti, tj, si, sj) if k == i else (tj, ti, sj, si)
                out[k] = f"TTFT {tk:,.1f} ms, its repeat's {to:,.1f} ms ({_run_id(rows[o])}), TPOT {sk:.4g} / {so:.4g} ms"
    return out


def _run_id(row: dict) -> str:
    """A row's run as its source names it: InferenceX's "runs/<id>/attempts/<n>" as <id>/<n>, else the source."""
    import re

    src = (row.get("source") or "").strip()
    m = re.search(r"runs/(\d+)/attempts/(\d+)", src)
    return f"{m[1]}/{m[2]}" if m else src


def residuals(rows: list[dict], preds: list[dict]) -> list[tuple[Context, dict[str, float]]]:
    """Per priced row (validate.predict_serving's predictions): its Context and r = log(measured /
    predicted) per metric it measures (derived as _measured says where it states TTFT and TPOT only); a row whose TTFT
    its repeat does not reproduce (unreproduced) with "ttft_ms" in its Context's `unreproduced`."""
    out = []
    flagged = unreproduced(rows, preds)
    for i, (r, p, ctx) in enumerate(zip(rows, preds, row_contexts(rows, preds), strict=True)):
        if ctx is None:
            continue
        if i in flagged:
            ctx = replace(ctx, unreproduced=("ttft_ms",))
        res = {}
        for m in METRICS:
            y, x = _measured(r, m, ctx.mode), p.get(COLUMNS[m], float("nan"))
            if math.isfinite(y) and y > 0 and math.isfinite(x) and x > 0:
                res[m] = math.log(y / x)
        if res:
            out.append((ctx, res))
    return out


def row_intervals(rows: list[dict], preds: list[dict], *, table: dict | None = None) -> tuple[list[dict], dict]:
    """`validate --out`'s interval columns and the coverage they found: per row, predicted_<column>_lo and
    _hi (the 80% interval) and _lo95 and _hi95 (the 95%) for each predicted metric (outputs.VALIDATE_BOUND_SUFFIX); per metric the runs that measure it (as stated in
    the file, nothing derived) and the share inside the 80% and the 95% interval."""
    cols, found = [], {}
    for r, p, ctx in zip(rows, preds, row_contexts(rows, preds), strict=True):
        out = {}
        for m in METRICS if ctx is not None else ():
            x = p.get(COLUMNS[m], float("nan"))
            if not (math.isfinite(x) and x > 0):
                continue
            b = band(m, x, ctx, table=table)
            out |= {c: b[k] for k, c in bound_columns(f"predicted_{COLUMNS[m]}", table=VALIDATE_BOUND_SUFFIX).items()}
            y = _number(r.get(COLUMNS[m]))
            if math.isfinite(y) and y > 0:
                f = found.setdefault(m, {"n": 0, "inside80": 0, "inside95": 0})
                f["n"] += 1
                f["inside80"] += b["lo80"] <= y <= b["hi80"]
                f["inside95"] += b["lo95"] <= y <= b["hi95"]
        cols.append(out)
    return cols, found


def build(records: list[tuple[Context, dict[str, float]]], *, min_rows: int = MIN_ROWS, levels=LEVELS) -> dict:
    """The slices (per metric, every HIERARCHY level holding at least `min_rows` residuals, each with the arrival
    patterns its runs were measured under, `arrivals`, at a level across GPU families their `families` and at a level
    across engines their `engines`: what an answer's basis names) and the envelope of residual records (`residuals`): per mode, the metrics, GPU families
    and engines its runs cover, the runs per engine|family (`runs`: how many a profile's own are where too few for a
    slice) and, per engine, the smallest and largest concurrency, ISL and OSL they measure (`ranges`); over all
    modes, the layer kinds, the family|format|class triples (what the kernels a run prices have been measured on)
    and the models."""
    groups: dict[tuple[str, str], list[float]] = {}
    basis: dict[tuple[str, str], tuple[set, set]] = {}
    runs: dict[str, dict[str, int]] = {}
    env: dict[str, dict[str, set]] = {}
    ranges: dict[str, dict[str, dict[str, tuple[float, float]]]] = {}
    kinds, formats, models = set(), set(), set()
    for ctx, res in records:
        e = env.setdefault(ctx.mode, {k: set() for k in ("metrics", "families", "engines")})
        e["metrics"] |= set(res)
        e["families"].add(ctx.family)
        e["engines"].add(ctx.engine)
        at = runs.setdefault(ctx.mode, {})
        at[f"{ctx.engine}|{ctx.family}"] = at.get(f"{ctx.engine}|{ctx.family}", 0) + 1
        for q in RANGED:
            v = getattr(ctx, q)
            if v is not None:
                lo, hi = ranges.setdefault(ctx.mode, {}).setdefault(ctx.engine, {}).get(q, (v, v))
                ranges[ctx.mode][ctx.engine][q] = (min(lo, v), max(hi, v))
        kinds |= set(ctx.kinds)
        formats.add(f"{ctx.family}|{ctx.fmt}|{ctx.model_class}")
        models.add(ctx.model)
        for m, r in res.items():
            if m in ctx.unreproduced:  # scored (scores), not a quantile of any slice
                continue
            for level in levels_for(m, ctx.mode):
                if _skipped(level, ctx):
                    continue
                groups.setdefault((m, ctx.key(level)), []).append(r)
                fams, engines, arrivals = basis.setdefault((m, ctx.key(level)), (set(), set(), set()))
                fams.update([ctx.family] if "family" not in level else [])
                engines.update([ctx.engine] if "engine" not in level else [])
                arrivals.update([ctx.arrival] if ctx.arrival else [])
    slices: dict[str, dict] = {m: {} for m in METRICS}
    for (m, key), rs in sorted(groups.items()):
        if len(rs) >= min_rows:
            fams, engines, arrivals = basis[m, key]
            slices[m][key] = cell(rs, levels=levels) | {k: sorted(v) for k, v in (("arrivals", arrivals), ("families", fams),
                                                                                ("engines", engines)) if v}
    # each run's normalised score about the slice it falls in, pooled per metric x mode x model class x load
    scores: dict[str, list[float]] = {}
    for ctx, res in records:
        for m, r in res.items():
            c = next((slices[m][ctx.key(level)] for level in levels_for(m, ctx.mode) if ctx.key(level) in slices[m]), None)
            if c is not None and m not in ctx.unreproduced:
                scores.setdefault(spread_key(m, ctx), []).append((r - c["q500"]) / max(c["mad"], MAD_FLOOR))
    spread = {k: cell(z, levels=levels) for k, z in sorted(scores.items()) if len(z) >= min_rows}
    envelope = {mode: {**{k: sorted(v) for k, v in e.items()}, "runs": dict(sorted(runs[mode].items())),
                       "ranges": {eng: {q: list(r[q]) for q in RANGED if q in r} for eng, r in sorted(ranges.get(mode, {}).items())}}
                for mode, e in sorted(env.items())}
    return {"envelope": envelope | {"kinds": sorted(kinds), "formats": sorted(formats), "models": sorted(models)}, "slices": slices,
            "spread": spread}


KIND_NAMES = {"gqa": "GQA attention", "mla": "MLA", "gdn": "Gated DeltaNet", "mamba2": "Mamba-2", "dense": "dense FFN", "moe": "MoE"}
FAMILY_NAMES = {"blackwell_sm120": "Blackwell SM120 (RTX Pro)", "cdna3": "CDNA3", "cdna4": "CDNA4"}
RUNS = {"serving": "serving run", "offline": "offline run", "disaggregated": "disaggregated run"}
# the quantities whose measured range (per mode and engine) bounds the envelope (Context's fields), the kinds of term
# a question above and below it takes (fewer requests than any run, less queueing, is measured apart) and their names.
# What the serving fit learnt of an engine holds where its runs were: its per-request costs and queueing were fitted at
# the loads and lengths the runs measure and scale past them unchecked (SGLang's fitted 60 ms a request, paid (q + 1) / 2
# times by the q-th of a burst, serve/aggregated.py:322@e4ad732, puts 4,096 one-token prompts arriving together at DeepSeek-R1 on 8 B200s at 94 s)
RANGED = {"concurrency": ("load", "low_load"), "isl": ("lengths", "lengths"), "osl": ("lengths", "lengths")}
QUANTITIES = {"concurrency": "concurrency", "isl": "ISL", "osl": "OSL"}
# how far past an engine's measured range a question lies before it widens: more than one step of the campaigns'
# power-of-two concurrency grids; the held-out runs measuring the terms lie 2-32x past their folds' ranges
# (benchmarks/interval_folds.py)
BEYOND = 2.0


# how far past their fold's training edge the held-out runs measuring the lengths term lie: the serving campaigns measure
# ISL/OSL 1,024 and 8,192, so 2,754 of the 2,773 serving edge-fold runs (A, B, C) sit 8x (ln 8 = 2.08 e-folds) past it (the
# offline folds 1-20x); one distance measures no growth per e-fold (docs/modelling-notes.md#islwide-edge-distance)
EDGE_FOLD_RATIO = 8.0
# how far past EDGE_FOLD_RATIO a ratio still reads as the folds' own distance (their runs' lengths are not exact powers
# of two); one threshold for the text (_edge_distance) and the band (growth): frev10 #2 had the text say "as far as the
# edge folds measure" at 8.3x while growth(8.3) grew the term x1.018
EDGE_FOLD_SLACK = 1.05


def _edge_distance(q: str, ratio: float) -> str:
    """'; 8.0x past it, as far as the edge folds measure' for an ISL or OSL `ratio` past its engine's range (beyond it:
    'not this far'); "" for concurrency (a frontier's points differ there, its text said once over their span)."""
    if q not in ("isl", "osl"):
        return ""
    far = "as far as the edge folds measure" if growth(ratio) == 1.0 else \
        (f"the edge folds measure its term at {EDGE_FOLD_RATIO:.0f}x only: past it grown with the log-distance, "
         f"x{growth(ratio):.2f} (ln {ratio:,.1f} / ln {EDGE_FOLD_RATIO:.0f})")
    return f"; {ratio:,.1f}x past it, {far}"


def growth(ratio: float) -> float:
    """How much the lengths term grows at an ISL or OSL `ratio` past its engine's range: ln(ratio) / ln(EDGE_FOLD_RATIO)
    beyond the edge folds' 8x (x EDGE_FOLD_SLACK, as the text says it), 1 within it. The term per e-fold the folds measure (t / ln 8) held past the one distance
    they measure, as design's accuracy err grows by 1x the log-distance beyond any studied range (cli/design.py's
    legend): an extrapolation stated, not a measurement; the edge folds' 12 held-out run x metrics at 14.6x (A's) lay
    inside their slices' bounds, no slope either way (docs/modelling-notes.md#fixD-band-distance). Within 8x not scaled
    down (no slope measured there: #islwide-edge-distance)."""
    return math.log(ratio) / math.log(EDGE_FOLD_RATIO) if ratio > EDGE_FOLD_RATIO * EDGE_FOLD_SLACK else 1.0


def grown(why: list, table: dict) -> dict:
    """`table` with its lengths term grown for the farthest ISL or OSL reason in `why` (`growth`); itself where none lies past 8x."""
    g = max([1.0, *(growth(w.ratio) for w in why if w.term == "lengths")])
    term = table.get("between", {}).get("lengths")
    if g == 1.0 or not term or not measured(term):
        return table
    return table | {"between": table["between"] | {"lengths": term | {k: v * g for k, v in term.items() if re.fullmatch(r"t\d+", k)}}}


def family_name(family: str) -> str:
    return FAMILY_NAMES.get(family, family.title())


def engine_title(name: str) -> str:
    from llm_codesign.spec.engines import ENGINES

    return ENGINES[name].title if name in ENGINES else name


def needed_tables(ctx: Context) -> list[str]:
    """The kernel tables pricing a question needs (their labels in the file's kernel_tables): the
    GEMMs at its dense layers' format (gemm_fmt), the MoE's at its experts' where it has experts, attention and collectives."""
    out = [f"GEMM {ctx.gemm_fmt or ctx.fmt}", "attention", "collectives"]
    return out + ([f"MoE {ctx.fmt}"] if ctx.model_class == "moe" else [])


@dataclass(frozen=True, eq=False)
class Widening(str):
    """One way a question lies outside what its mode's runs cover (`reasons`), whose value is its text, rendered here
    only: JSON, the tables and every consumer read the string, and a frontier's reasons merge by these fields. `kind`:
    one of WIDEN, UNRUN or TERM_OF's (`term`: the between-group term it is widened by); `what`: the reason in words, after the question's own value where the reason is that value
    (`quantity`: concurrency, ISL or OSL more than BEYOND past its engine's measured range, `span` the lowest and
    highest value: one question's, or a frontier's points' said once); `factors`: the reason's own between-group term,
    as a factor, at each of `levels` (%), as `band` states it (none before); `note`: what the band took of it (`standing`:
    the band takes the largest term, not their product, so a reason's own factor may widen nothing: crev9 #6)."""
    kind: str
    what: str
    _: KW_ONLY
    quantity: str | None = None
    span: tuple[float, float] | None = None
    factors: tuple[float, ...] = ()
    levels: tuple[int, ...] = ()
    note: str = ""
    ratio: float = 1.0  # an ISL or OSL reason's distance past its engine's range (value / largest, smallest / value): grown()

    def __new__(cls, kind: str, what: str, *, quantity: str | None = None, span: tuple[float, float] | None = None,
                factors: tuple[float, ...] = (), levels: tuple[int, ...] = (), note: str = "", ratio: float = 1.0):
        text = what
        if quantity is not None:
            lo, hi = (f"{x:,.0f}" for x in span)
            text = f"{quantity} {lo}{'' if lo == hi else f'-{hi}'} {what}"
        if factors:
            text += " (" + factor_text(factors, levels) + (f": {note}" if note else "") + ")"
        return super().__new__(cls, text)

    @property
    def term(self) -> str:
        """The between-group term (intervals.toml [between]) this reason is widened by: its kind's own, or TERM_OF's."""
        return TERM_OF.get(self.kind, self.kind)

    def __getnewargs_ex__(self):  # pickled and copied by its fields (str's own would hand __new__ the text alone)
        return (self.kind, self.what), {"quantity": self.quantity, "span": self.span, "factors": self.factors, "levels": self.levels,
                                        "note": self.note, "ratio": self.ratio}

    @property
    def plain(self) -> str:
        """The reason without its factors (what render.intervals prints where the factors are said apart)."""
        return Widening(self.kind, self.what, quantity=self.quantity, span=self.span)


def factor_text(factors, levels) -> str:
    """'x1.08/x1.30 at 80/95%': a reason's factors at its levels."""
    return "x" + "/x".join(f"{f:.2f}" for f in factors) + " at " + "/".join(map(str, levels)) + "%"


def covered(ctx: Context, table: dict) -> bool:
    """Whether a profile's own runs cover the question's engine on its GPU family: MIN_ROWS of them at least, a slice
    of their own (its mode|engine|family slice, or the runs counted for one), of the question's model class where the
    profile records its runs' (dense or MoE: `classes`, profile_section). Only there does the profile's envelope
    (_profile_table's `own_envelope`) replace the bundled one, and its own slices answer (_slice): 5 vLLM runs on H100s
    had dropped the Hopper widening of every engine's answers, TensorRT-LLM's too, and of their own runs' (newcomer review
    2026-12-06: TPOT inside the 95% bands 100 -> 71.4%); an own slice of dense runs answered MoE questions
    (docs/modelling-notes.md#fixcal-calibrate)."""
    key = f"{ctx.engine}|{ctx.family}"
    classes = table.get("own_classes", {}).get(ctx.mode, {}).get(key)  # None: a profile written before they were recorded
    return f"{ctx.mode}|{key}" in table.get("covered", ()) and (classes is None or ctx.model_class in classes)


def measured_model(name: str, models) -> bool:
    """Whether runs of the model `name` are among `models` (an envelope's): its own, or those of another entry of its
    release (spec.registry.release_of: llama-3.1-70b-fp8 quantizes llama-3.1-70b's weights, one shape, one routing),
    the shift the "model" widening stands for being the shape's and its engine paths', not the checkpoint's name: the
    same deployment read back as either entry got bands x1.12/x1.68 apart (newc8 #6). The format is its own reason."""
    from llm_codesign.spec.registry import release_of

    return name in models or (bool(name) and release_of(name) in _releases(tuple(models)))


@lru_cache(maxsize=8)
def _releases(models: tuple[str, ...]) -> frozenset[str]:
    from llm_codesign.spec.registry import release_of

    return frozenset(release_of(m) for m in models)


def _envelope(ctx: Context, table: dict) -> dict:
    """The envelopes, per mode: the bundled runs', or with a profile's own runs too where they cover its engine and GPU family."""
    return table["own_envelope"] if "own_envelope" in table and covered(ctx, table) else table["envelope"]


def measured_range(ctx: Context, table: dict, q: str) -> tuple[float, float] | None:
    """The smallest and largest `q` (RANGED) the question's engine's runs measure in its mode (`reasons`' range); None where none."""
    r = _envelope(ctx, table).get(ctx.mode, {}).get("ranges", {}).get(ctx.engine, {}).get(q)
    return tuple(r) if r else None


def reasons(ctx: Context, table: dict) -> list[Widening]:
    """Each way the question lies outside what its mode's runs cover (Widening, without its factors): the bundled
    runs', or with a profile's own runs too where they cover its engine and GPU family (`covered`)."""
    every = _envelope(ctx, table)
    env = every.get(ctx.mode, {})
    run, fam = RUNS[ctx.mode], family_name(ctx.family)
    out = []
    if ctx.family not in env.get("families", ()):
        out.append(Widening("family", _family_text(ctx, table, run, fam)))
    if ctx.what_if:
        out.append(Widening("what_if", ctx.what_if))
    if ctx.engine not in env.get("engines", ()):
        out.append(Widening("engine", f"no {run} with {engine_title(ctx.engine)}"))
    for q, (lo, hi) in env.get("ranges", {}).get(ctx.engine, {}).items():
        v = getattr(ctx, q)
        if v is not None and not lo / BEYOND <= v <= hi * BEYOND:
            side = f"above {engine_title(ctx.engine)}'s largest measured {hi:,.0f}" if v > hi else \
                f"below {engine_title(ctx.engine)}'s smallest measured {lo:,.0f}"
            ratio = v / hi if v > hi else lo / v
            out.append(Widening(RANGED[q][v < lo], f"{side} ({run}s{_edge_distance(q, ratio)})", quantity=QUANTITIES[q], span=(v, v),
                                ratio=ratio if q in ("isl", "osl") else 1.0))
    new = [k for k in ctx.kinds if k not in every.get("kinds", ())]
    if new:
        out.append(Widening("shape", f"no measured run of a model with {', '.join(KIND_NAMES.get(k, k) for k in new)} layers"))
    # a model's own shift (its GEMM shapes, expert count and routing, the engine's paths for it): held out, a
    # release's models new to the runs scatter 2-3x its measured ones (docs/modelling-notes.md#interval-moe)
    if not measured_model(ctx.model, every.get("models", ())):
        out.append(Widening("model", f"no measured run of {ctx.model or 'this designed shape'}"))
    if f"{ctx.family}|{ctx.fmt}|{ctx.model_class}" not in every.get("formats", ()):
        have = set(table.get("kernel_tables", {}).get(ctx.family, ()))
        missing = [t for t in needed_tables(ctx) if t not in have]
        what = [] if out and out[0].kind == "family" else [
            f"no measured run of {'MoE' if ctx.model_class == 'moe' else 'dense'} {ctx.fmt} weights on {fam} GPUs"]
        # the expert kernels' term apart from the dense kernels': held out, MoE runs with no MoE table on their family
        # scatter more than dense runs with no GEMM table (docs/modelling-notes.md#interval-moe)
        for kind, tables in (("kernel", [t for t in missing if not t.startswith("MoE ")]), ("moe", [t for t in missing if t.startswith("MoE ")])):
            if tables:
                out.append(Widening(kind, "; ".join(what + [f"no {t} kernel table on {fam}" for t in tables])))
                what = []
        if what:
            out.append(Widening("family", what[0]))
    out += [Widening("moe", f"no fitted {k} MoE kernel values for {engine_title(ctx.engine)} on {fam}") for k in ctx.moe_kernels]
    lent = lent_moe(ctx)
    if lent:  # said with the MoE reason it explains (one line, one term), or alone where the family had a MoE table
        i = next((i for i, w in enumerate(out) if w.kind == "moe"), None)
        out = out + [Widening("moe", lent)] if i is None else [*out[:i], Widening("moe", f"{out[i].what}; {lent}"), *out[i + 1:]]
    out += [Widening("request_cost", f) for f in [request_cost_outside(ctx)] if f is not None]
    if ctx.adp_hold:
        out.append(Widening("adp_wait", ADP_WAIT))
    out += [_prefix(ctx, env, run)] if ctx.prefix_hit else []
    if ctx.spec:
        out.append(Widening("spec", _spec_text(table.get("between", {}).get("spec", {}), run)))
    if any(ctx.eager):  # no group at all: its own term on each side (eager_terms)
        lo, hi = (x * 1e6 for x in DECODE_LAUNCH_RANGE_S)
        how = " or with piecewise graphs" if ctx.eager_piecewise else ""
        out.append(Widening("eager", f"no decode run without CUDA graphs{how}: its host launches priced at {launch_range()}; "
                   f"TPOT x{math.exp(-ctx.eager[0]):.2f} at {lo:.3g} us, x{math.exp(ctx.eager[1]):.2f} at {hi:.3g} us, "
                   f"TTFT x{math.exp(-ctx.eager_ttft[0]):.2f} / x{math.exp(ctx.eager_ttft[1]):.2f} (the decode steps it "
                   "waits out): each side of the band widens by its own end's move, in quadrature on top of the others"))
    return out


def _spec_text(t: dict, run: str) -> str:
    """The speculative-decoding reason in words from its term (intervals.toml [between] spec): the slices hold no
    speculative run; the bundled runs that used MTP but record no acceptance (`unpriced`: InferenceX publishes none),
    which validate does not price; what the term rests on (`folds`). One group (the published runs) measures no term:
    said so, and widened as `between` does an unmeasured reason, not left at x1.00 beside its own name. It had said "no
    serving run with it" beside 256 bundled MTP runs (newc9 #4)."""
    text = f"speculative decoding: no {run} with it among the band's runs"
    if t.get("unpriced"):
        text += f" ({t['unpriced']} bundled runs used MTP but record no acceptance rate: not priced, in no band)"
    if measured(t):
        return text + f"; its term from {t.get('folds', 'held-out runs with it')}"
    return text + (f"; its term not measured ({_count(t.get('groups', 0), 'group')}: {t.get('folds', 'published runs')}): widened "
                   "by the campaign term once more, in quadrature on top of the others: a new group and a new campaign; "
                   "its factor what that adds to the campaign term")


# the metrics a decode step alone sets, which a per-request cost before the prefill does not move (request_cost_outside)
DECODE_ONLY = ("tpot_ms", "tok_s_per_user")


def _prefix(ctx: Context, env: dict, run: str) -> Widening:
    """A prefix-cache hit in words (NO_TERM): the tokens prefilled, and the lengths term where they lie more than BEYOND
    below the engine's smallest measured ISL (TERM_OF's prefix_lengths), else no term."""
    isl = float(ctx.isl or 0.0)
    new = isl - float(cached_tokens(isl, ctx.prefix_hit))
    text = (f"no measured {run} with prefix-cache hits ({ctx.prefix_hit:.0%} of each prompt: {new:,.0f} of its {isl:,.0f} "
            "tokens prefilled)")
    lo = env.get("ranges", {}).get(ctx.engine, {}).get("isl", (None,))[0]
    if lo is not None and new < lo / BEYOND:
        return Widening("prefix_lengths", f"{text}; the {new:,.0f} prefilled lie under 1/{BEYOND:g} of {engine_title(ctx.engine)}'s "
                        f"smallest measured ISL {lo:,.0f}, which the lengths term measures")
    return Widening("prefix", f"{text}: no held-out fold measures a term for it, so not widened for it")


def request_cost_outside(ctx: Context) -> str | None:
    """Where the engine's fitted per-request cost (Engine.request_cost_fitted_on: SGLang's, fitted on MoE runs alone) is
    priced on a model of another class, that in words; else None. Widened by the model term (held-out models: the
    closest folds measure to a fitted engine cost carried to models unlike its runs; newc6 #1)."""
    from llm_codesign.spec.engines import ENGINES

    e = ENGINES.get(ctx.engine)
    classes = getattr(e, "request_cost_fitted_on", ())
    if not classes or ctx.model_class in classes:
        return None
    name = {"moe": "MoE", "dense": "dense"}
    return (f"{engine_title(ctx.engine)}'s per-request cost (ttft_overhead_s) fitted on {' and '.join(name[c] for c in classes)} "
            f"runs alone, its mechanism open: priced here on a {name.get(ctx.model_class, ctx.model_class)} model")


def _family_text(ctx: Context, table: dict, run: str, fam: str) -> str:
    """'no serving run on any Hopper GPU', or 'no bundled serving run on any Hopper GPU; your profile has 6 with vLLM (too
    few for a band: 9 needed)' where a profile's own runs sit on that family but do not cover the question (`covered`): the band
    stays the bundled one (newc5 #17: the first after calibrating on six H100 runs read as if they were ignored)."""
    own = table.get("own_runs", {}).get(ctx.mode, {}).get(f"{ctx.engine}|{ctx.family}", 0)  # the question's engine's alone
    if not own:
        return f"no {run} on any {fam} GPU"
    why = _too_few(own) if own < MIN_ROWS else f"none of {ctx.model_class} models"
    return f"no bundled {run} on any {fam} GPU; your profile has {own} with {engine_title(ctx.engine)} ({why})"


def measured(term: dict) -> bool:
    """Whether a between-group term (intervals.toml [between]) was measured: two groups at least, one held out."""
    return term.get("groups", 2) >= 2


def _count(n: int, what: str) -> str:
    return f"{'one' if n == 1 else n} {what}{'' if n == 1 else 's'}"


# GPU families whose fused-MoE rates are another family's fit, assumed (data/calibration/fitted.toml [cdna3]: AITER's
# fused MoE on MI300X/MI325X takes the values fitted on the MI355X's InferenceX runs, no CDNA3 serving run or MoE table
# to fit on); an engine running its own MoE kernel family there (vLLM's Triton: Engine.moe_kernel) borrows nothing
LENT_MOE = {"cdna3": "AITER's MoE priced at the MI355X's (CDNA4) fitted rates, assumed"}


def lent_moe(ctx: Context) -> str | None:
    """Where a MoE question's expert rates on its GPU family are another family's (LENT_MOE), that in words; else None."""
    from llm_codesign.spec.engines import ENGINES

    e = ENGINES.get(ctx.engine)
    if ctx.model_class != "moe" or ctx.family not in LENT_MOE or (e is not None and e.moe_kernel(ctx.family, ctx.fmt) is not None):
        return None
    return LENT_MOE[ctx.family]


# how each arrival pattern (spec.harness.ARRIVALS) reads in a basis: the runs' and the answer's
ARRIVAL_NAMES = {"waves": "waves", "closed_loop": "closed loops", "burst": "bursts"}


def _describe(level: tuple[str, ...], ctx: Context, c: dict, table: dict) -> str:
    """A slice `c` found at `level` for `ctx` in words: its runs, what they share and, at a level across GPU families,
    the families they were measured on; at the level across engines, theirs, and how many runs the question's engine has
    where it has some (too few for a slice of its own); then, where none of its runs arrived as the question's requests
    do, how they did (a slice mixing both holds runs like the question)."""
    parts = {"engine": engine_title(ctx.engine), "family": f"on {family_name(ctx.family)} GPUs", "model_class":
             f"{'MoE' if ctx.model_class == 'moe' else 'dense'} models", "load": "offline" if ctx.load == "offline"
             # the load band's name, not the runs' measured range (a run at 1 request reads "1-4" as measured at 1)
             else f"in the load band {ctx.load} requests", "lengths": f"{ctx.lengths} ISL/OSL",
             # a thin band pooled with its neighbour (LOAD_POOLS)
             **{k: f"in the load bands {getattr(ctx, k)} requests (the band {ctx.load} alone: too few for a slice)" for k in LOAD_POOLS},
             "arrival": f"in {ARRIVAL_NAMES.get(ctx.arrival, ctx.arrival)}"}
    if "engine" not in level:  # it read as the question's engine's own runs ("from 2050 serving runs" for ATOM's 36)
        env = table["envelope"].get(ctx.mode, {})
        # at a level within the question's GPU family its engine's runs there (runs[engine|family]), else on every family
        n = (env.get("runs", {}).get(f"{ctx.engine}|{ctx.family}", 0) if "family" in level
             else sum(v for k, v in env.get("runs", {}).items() if k.partition("|")[0] == ctx.engine))
        # the slice's own engines (a level across engines on one family holds that family's); a table without them, the mode's
        # a level across engines keeping the load band, walked first (LOAD_FIRST_MODES) while the engine has a slice of
        # every load: its runs in this band are what is too few
        whose = (f"{engine_title(ctx.engine)}'s own in this load band (of its {n})" if {"load", *LOAD_POOLS} & set(level) and ctx.mode in LOAD_FIRST_MODES
                 else f"{engine_title(ctx.engine)}'s own {n}")
        parts["engine"] = _listed([engine_title(e) for e in c.get("engines", env.get("engines", ()))]) + (
            f" ({whose}: too few for a slice of their own, {MIN_ROWS} needed)" if n else "")
        level = (level[0], "engine", *level[1:])
    if "family" not in level and c.get("families"):
        parts["family"] = f"on {_listed([family_name(f) for f in c['families']])} GPUs"
        level = (*level[:2], "family", *level[2:]) if "engine" in level else (*level[:1], "family", *level[1:])
    text = f"{c['n']} {RUNS[ctx.mode]}s" + "".join(f", {parts[k]}" if k != "engine" else f" with {parts[k]}" for k in level[1:])
    runs = c.get("arrivals", [])
    if ctx.arrival and runs and ctx.arrival not in runs:
        text += f" ({_listed([ARRIVAL_NAMES.get(a, a) for a in runs])}; this answer: {ARRIVAL_NAMES.get(ctx.arrival, ctx.arrival)})"
    return text


def _listed(names: list[str]) -> str:
    """'A', 'A and B', 'A, B and C'."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def _slice(metric: str, ctx: Context, table: dict) -> tuple[dict, tuple[str, ...], bool] | None:
    """The most specific slice of `metric` for `ctx` along HIERARCHY: the profile's own first, down to its
    engine x family (a profile's runs answer for its engines and GPUs only), then the bundled ones. Of the profile's own,
    the most specific of MIN_ROWS runs, else the widest under it (OWN_MIN_ROWS at least: its 80% its own, its 95% the
    bundled one, band)."""
    slices = table["slices"].get(metric, {})
    own = table.get("own", {}).get(metric, {}) if covered(ctx, table) else {}
    # the most specific own slice of MIN_ROWS runs (both levels its own), else the widest of OWN_MIN_ROWS (its 80% its own:
    # band): 12 runs in a load band do not displace the engine x family's 40
    for level in HIERARCHY[:3]:
        if ctx.key(level) in own and own[ctx.key(level)]["n"] >= MIN_ROWS:
            return own[ctx.key(level)], level, True
    for level in reversed(HIERARCHY[:3]):  # its slices hold OWN_MIN_ROWS at least (profile_section)
        if ctx.key(level) in own:
            return own[ctx.key(level)], level, True
    for level in levels_for(metric, ctx.mode):
        if not _skipped(level, ctx) and ctx.key(level) in slices:
            return slices[ctx.key(level)], level, False
    return None


def lookup(metric: str, ctx: Context, table: dict) -> tuple[dict, str, Context, bool]:
    """The slice of `metric` a question `ctx` takes (_slice), its description, the context it was found
    for and whether it is a profile's own: an offline question about a metric no offline run measures
    (offline runs state tok/s/GPU only) takes the serving runs at 33+ requests, and says so."""
    note = ""
    if ctx.mode == "offline" and metric not in table["envelope"].get("offline", {}).get("metrics", ()):
        ctx, note = replace(ctx, mode="serving", load="33+"), " (offline runs measure tok/s/GPU only)"
    found = _slice(metric, ctx, table)
    if found is None:
        raise KeyError(f"no {metric} residuals for {ctx.mode}")
    c, level, mine = found
    if table.get("profile"):  # whose residuals: the profile's own runs, or the bundled profile's
        who = f"{table['profile']}'s own " if mine else f"the bundled profile's (not {table['profile']}'s: {_why_bundled(metric, ctx, table)}) "
    else:
        who = ""
    return c, who + _describe(level, ctx, c, table) + note + _family_by_own_runs(ctx, table, mine), ctx, mine


def _family_by_own_runs(ctx: Context, table: dict, mine: bool) -> str:
    """Where a bundled slice answers but the profile's own runs (too few for a slice) are what put the question's GPU
    family within the runs (_profile_table merges their envelope): whose runs those are, as the band is not widened for
    a family no bundled run measures."""
    # the profile's runs of this engine on this family, where they cover it (`covered`: only then is the family's
    # widening dropped)
    n = table.get("own_runs", {}).get(ctx.mode, {}).get(f"{ctx.engine}|{ctx.family}", 0)
    if mine or not covered(ctx, table) or ctx.family in table.get("bundled_families", {}).get(ctx.mode, [ctx.family]):
        return ""
    return (f"; {family_name(ctx.family)} GPUs measured by {table['profile']}'s own {n} {RUNS[ctx.mode]}s with "
            f"{engine_title(ctx.engine)} (so not widened for the GPU family)")


def _too_few(n: int, *, per: bool = False) -> str:
    """Why `n` own runs of an engine on a GPU family make no slice: under OWN_MIN_ROWS, too few; else a profile written
    before calibrate made slices from OWN_MIN_ROWS (it took MIN_ROWS), which `calibrate --serving` writes again."""
    if n < OWN_MIN_ROWS:
        return f"{OWN_MIN_ROWS} per slice needed" if per else f"too few for a band: {OWN_MIN_ROWS} needed"
    return f"a profile written by an older llm-codesign took {MIN_ROWS} a slice; `calibrate --serving` again makes one from {OWN_MIN_ROWS}"


def _why_bundled(metric: str, ctx: Context, table: dict) -> str:
    """Why a profile's own runs give no band here: none of them, or too few for a slice of their own (its engine x
    family, the widest own level, holds fewer than OWN_MIN_ROWS), or none measuring the metric."""
    n = table.get("own_runs", {}).get(ctx.mode, {}).get(f"{ctx.engine}|{ctx.family}", 0)
    if not n:
        return table["why_bundled"]
    if n < MIN_ROWS and not covered(ctx, table):  # nor do they drop a widening; their own spread said beside the band (own_spread)
        s = table.get("own_spread", {}).get(ctx.mode, {}).get(f"{ctx.engine}|{ctx.family}", {}).get(metric)
        own = "" if not s else (f"; their {LABELS[metric]}, priced with the profile fitted on them (in sample): 80% of the "
                                f"{s['n']} within {math.expm1(s['q100']):+.1%}/{math.expm1(s['q900']):+.1%} of the prediction")
        return f"{'too few of its runs' if n < OWN_MIN_ROWS else 'no slice of its runs'} ({n} with {engine_title(ctx.engine)} on {family_name(ctx.family)} GPUs; {_too_few(n, per=True)}){own}"
    if not covered(ctx, table):  # runs of another model class
        return (f"none of its {n} runs with {engine_title(ctx.engine)} on {family_name(ctx.family)} GPUs is of a "
                f"{'MoE' if ctx.model_class == 'moe' else 'dense'} model")
    return f"none of its runs measures {LABELS[metric]}"


def band(metric: str, value, ctx: Context, *, table: dict | None = None, levels=LEVELS) -> dict:
    """The intervals of a predicted `metric` (`value`: a number or an array of them, in the metric's
    units) for a question `ctx`, at each of `levels` (%): {"lo80", "hi80", "lo95", "hi95", "centre" (the
    value times the slice's median measured / predicted, the bounds' centre; shaped as `value`), "n",
    "source" (the slice), "widened" (each reason, a Widening: a string with its between-group term, its fields for whoever
    merges them; empty inside the envelope)}."""
    t = bundled() if table is None else table
    c, source, found, mine = lookup(metric, ctx, t)
    why = slice_reasons(metric, c, found, t)
    whole = between([w.term for w in why if w.kind != "eager"], grown(why, t), own=mine, levels=levels)
    k_lo, k_hi = with_eager(whole, found, metric)
    v = np.asarray(value, float)
    out, lo, hi = {}, math.inf, -math.inf
    for lvl in sorted(levels):  # each interval holds the narrower ones (their terms may differ)
        below, above = within(metric, c, found, t, lvl, own=mine)
        if mine and not math.isfinite(below + above):  # an own slice under MIN_ROWS: no order statistic at this level
            lo_b, hi_b = _bundled_bounds(metric, ctx, t, lvl)
            lo, hi = min(lo, lo_b), max(hi, hi_b)
        else:  # the term added beyond the slice's own bound (conformalised over groups, the module's docstring), not in quadrature
            lo = min(lo, c["q500"] - (below + k_lo[lvl]))
            hi = max(hi, c["q500"] + (above + k_hi[lvl]))
        for name, q in ((f"lo{lvl}", lo), (f"hi{lvl}", hi)):
            x = v * np.exp(q)
            out[name] = float(x) if x.ndim == 0 else x
    centre = v * math.exp(c["q500"])  # the bias-corrected estimate the bounds sit about (the slice's median shift)
    out["centre"] = float(centre) if centre.ndim == 0 else centre
    widened = [_factored(w, why, found, metric, t, own=mine, levels=levels) for w in why]
    # newc5 #17: a 95% interval wider than PREDICTABLE_SPAN (high / low) is no basis for a decision; its ratio in the JSON,
    # a frontier's per point (POINTWISE: branch uxleft, its points carried none)
    return out | {"n": c["n"], "source": source, "widened": widened} | predictability(out[f"lo{max(levels)}"], out[f"hi{max(levels)}"])


def _bundled_bounds(metric: str, ctx: Context, table: dict, level: float) -> tuple[float, float]:
    """The `level`% bounds (log units about the prediction) the bundled slices give where a profile's own slice is too small
    for that level's order statistic (OWN_MIN_ROWS <= n < MIN_ROWS: its 95%), its envelope and widenings as the profile's."""
    b = band(metric, 1.0, ctx, table={k: v for k, v in table.items() if k != "own"}, levels=(level,))
    return math.log(b[f"lo{level}"]), math.log(b[f"hi{level}"])


def slice_reasons(metric: str, c: dict, ctx: Context, table: dict) -> list[Widening]:
    """The reasons a band of `metric` widens by (`reasons`), from the slice `c` it takes for `ctx`: a fitted per-request
    cost outside its model classes moves TTFT and, through a wave's cycle, tok/s/GPU, not a step's (DECODE_ONLY); and
    where the slice lies across GPU families without the question's (a family the envelope holds, but with no run in this
    slice's kind: an MI355X's TTFT in waves, its CDNA4 runs all closed loops), the family reason an unmeasured family
    takes, as an H100's does (crev10 #8: the Blackwell runs' band had read without it)."""
    why = [w for w in reasons(ctx, table) if (metric not in DECODE_ONLY or w.kind != "request_cost")
           and (metric in ARRIVAL_METRICS or w.kind != "adp_wait")]
    why += arrival_reason(metric, c, ctx)
    fams = c.get("families")
    # a profile's own runs covering the family drop its widening (`covered`, _family_by_own_runs says whose runs)
    if not fams or ctx.family in fams or any(w.kind == "family" for w in why) or covered(ctx, table):
        return why
    run, fam, whose = RUNS[ctx.mode], family_name(ctx.family), _listed([family_name(f) for f in fams])
    what = (f"no {run} in {ARRIVAL_NAMES.get(ctx.arrival, ctx.arrival)} on any {fam} GPU" if metric in ARRIVAL_METRICS and ctx.arrival
            else f"too few {run}s on {fam} GPUs for a slice of their own ({MIN_ROWS} needed)")
    return [Widening("family", f"{what} (the band is {whose}'s)"), *why]


# the arrivals no bundled run of any mode was sent as (every campaign's harness: closed loops or waves). A disaggregated
# waves question also takes a slice of closed loops (no disaggregated run in waves): not said here, as it would widen every
# default disaggregated band; left (docs/modelling-notes.md#fixADP-wait-band)
UNSENT_ARRIVALS = ("burst",)


def arrival_reason(metric: str, c: dict, ctx: Context) -> list[Widening]:
    """[the arrival reason] where the slice `c` of an arrival-set metric (ARRIVAL_METRICS) holds no run sent as the
    question's arrival (no bundled run was sent as a burst: its TTFT waits behind the wave's prompts, a mechanism the
    closed loops' band does not hold; crev11 #6), else []. Widened by the family term (TERM_OF), the term the waves band
    takes where its slice is another family's: a band carried from runs of another kind (docs/modelling-notes.md#fixADP-wait-band)."""
    runs = c.get("arrivals")
    if metric not in ARRIVAL_METRICS or ctx.arrival not in UNSENT_ARRIVALS or not runs or ctx.arrival in runs:
        return []
    name = ARRIVAL_NAMES.get(ctx.arrival, ctx.arrival)
    return [Widening("arrival", f"no bundled {RUNS[ctx.mode]} arrived in {name} (the band is of runs in {_listed([ARRIVAL_NAMES.get(a, a) for a in runs])})")]


def _factored(w: Widening, why: list, ctx: Context, metric: str, table: dict, *, own: bool, levels) -> Widening:
    """A reason `w` of a band's reasons `why` with its factors and what the band took of it (`standing`): its own term
    alone (own=True: without the campaign term) at each level; an unmeasured reason's the campaign term, which `between`
    adds in quadrature; the eager one's its ends' moves on `metric` (eager_terms); NO_TERM's none. One factor for every
    point of a frontier, so that its points' reasons merge."""
    t = grown(why, table)  # the band's terms; the reason's own grown for its own distance alone (`mine`)
    terms = t.get("between", {})
    if w.kind in NO_TERM:
        return w
    if w.kind in UNRUN or not measured(terms.get(w.term, {})):
        # an unmeasured reason's factor: what the campaign term C once more in quadrature adds to C, hypot(C, C) - C
        # (R1 MTP on MI355X: C = 0.0297, x1.012; it printed C's own x1.03: crev11, noted, crev9 #6's rule)
        f = {lvl: max(eager_terms(ctx, metric, lvl)) for lvl in levels} if w.kind in UNRUN else {
            lvl: math.hypot(c, c) - c for lvl, c in between([], t, levels=levels).items()}
        return replace(w, factors=tuple(math.exp(f[lvl]) for lvl in levels), levels=tuple(levels))
    mine = between([w.term], grown([w], table), own=True, levels=levels)
    # the largest of the measured terms the band takes (before an unmeasured one's quadrature), and the campaign's
    kinds = [x.term for x in why if x.kind not in (*UNRUN, *NO_TERM) and measured(terms.get(x.term, {}))]
    top, base = between(kinds, t, own=own, levels=levels), between([], t, own=own, levels=levels)
    note = standing(mine, top, base, levels)
    other = [k for k in kinds if (k in DISTANCE) != (w.term in DISTANCE)]
    if other:  # a distance term and another: the largest of each side in quadrature (between), unless the campaign's is wider
        alike = between([k for k in kinds if k not in other], t, own=True, levels=levels)
        note = (STANDING["larger"] if any(mine[lvl] < alike[lvl] - 1e-12 for lvl in levels) else STANDING["campaign"]
                if all(top[lvl] <= base[lvl] + 1e-12 for lvl in levels) else QUADRATURE[w.term in DISTANCE])
    # one reason the band took: its factor is what widened it, nothing to tell apart (the README's Hopper line unwrapped)
    return replace(w, factors=tuple(math.exp(mine[lvl]) for lvl in levels), levels=tuple(levels),
                   note="" if len(kinds) == 1 and note == STANDING["band"] else note)


# what a band took of a reason's term (`standing`): the band takes the largest term, so a reason's factor widens it only
# where it is that largest; the others are within it (crev9 #6: each line's factor read as what it added)
STANDING = {"band": "the largest term, the band's", "campaign": "within the campaign term every band takes, not widened for it",
            "larger": "within a larger reason's term, not widened for it"}
# a distance term's and the largest other's, each measured on held-out runs without the other, added in quadrature (between)
QUADRATURE = {False: "in quadrature with the lengths or load term past the runs (each measured without the other), the band's",
              True: "in quadrature with the other reasons' largest term (each measured without the other), the band's"}
STANDING_AT = {"band": "the band's term", "campaign": "within the campaign term", "larger": "within a larger reason's"}  # per level


def standing(mine: dict, top: dict, base: dict, levels) -> str:
    """STANDING's words for a reason's term `mine` beside the band's largest `top` and the campaign's `base` (between's,
    per level), each level's said where they differ ('the largest term, the band's at 80%; within ... at 95%')."""
    def at(lvl):
        return "campaign" if mine[lvl] <= base[lvl] + 1e-12 else "band" if mine[lvl] >= top[lvl] - 1e-12 else "larger"

    said = {lvl: at(lvl) for lvl in levels}
    if len(set(said.values())) == 1:
        return STANDING[said[levels[0]]]
    return "; ".join(f"{STANDING_AT[k]} at {'/'.join(str(lvl) for lvl in levels if said[lvl] == k)}%" for k in dict.fromkeys(said.values()))


def predictability(lo95, hi95) -> dict:
    """{"span95": hi95 / lo95, "predictable": span95 <= PREDICTABLE_SPAN}: numbers for one answer, arrays (a bool array)
    for a frontier's points (POINTWISE)."""
    span = np.asarray(hi95, float) / np.maximum(np.asarray(lo95, float), 1e-300)
    ok = span <= PREDICTABLE_SPAN
    return {"span95": float(span), "predictable": bool(ok)} if span.ndim == 0 else {"span95": span, "predictable": ok}


# the widest 95% interval (high / low) an answer is printed as a prediction beside: past it "not predictable here". A
# reading choice, no measured quantity: x20 is a decade and a third, past which a TTFT band spans interactive to
# unusable (newc5 #17's 487 ms-32.7 s); 100x (uxa's) let x67 through as a number
PREDICTABLE_SPAN = 20.0


def grouped(ctx: Context, *, table: dict | None = None) -> Context:
    """`ctx` as points of a frontier share it: its concurrency dropped (None) where it lies within its engine's measured
    range, where it moves no band (reasons), so that points differing only there take one pass."""
    t = bundled() if table is None else table
    return ctx if any(w.kind in RANGED["concurrency"] for w in reasons(ctx, t)) else replace(ctx, concurrency=None)


# the terms of a question past its engine's measured loads or lengths, measured on the edge folds' held-out runs, which
# carry no other reason: of the folds' held-out run x metrics with one (lengths 9,620, load 552, low_load 123), 34
# carry another too (A's 24 lengths + model, B's 8 family + low_load, the spec fold's 2). The others are measured on runs carrying one
# another (a held-out family's runs lack its kernel tables): their sum counts them twice (#interval-moe), so the largest
DISTANCE = ("load", "low_load", "lengths")


def between(why: list[str], table: dict, *, own: bool = False, levels=LEVELS) -> dict[int, float]:
    """The between-group term T of each level (log units): the largest of the campaign term (not for a
    profile's `own` runs: they are the user's campaign) and the terms of the reasons' kinds `why`, a distance term
    (DISTANCE, measured apart from the others) in quadrature with the largest of the others (a length past the runs on a
    GPU with no kernel table: newc10 #4; the folds hold 34 such run x metrics); 0 where the
    table measures none; a wider level's term never below a narrower one's (each level is measured apart, and
    low_load's 95% term came out under its 80%); a reason whose term was not measured (one group: `measured`) adds the
    campaign term once more in quadrature, own or not: such a run (speculative decoding's) is a new group AND a new
    campaign, and taking the largest term left the band exactly as without the reason (review of uxa)."""
    terms = table.get("between", {})
    base, rest = [] if own else ["campaign"], [k for k in why if k not in terms or measured(terms[k])]
    # an unmeasured term (or UNRUN's, which no run measures): a second campaign's on top
    new = any((k in terms and not measured(terms[k])) or k in UNRUN for k in why)
    out, floor = {}, 0.0
    for lvl in sorted(levels):
        def t(ks, lvl=lvl):
            return max([0.0, *(terms[k][f"t{lvl}"] for k in ks if k in terms)])
        # the distance terms (DISTANCE) in quadrature with the largest of the others, the campaign's the least
        top = max(t(base), math.hypot(t([k for k in rest if k not in DISTANCE]), t([k for k in rest if k in DISTANCE])))
        if new and "campaign" in terms:
            top = math.hypot(top, terms["campaign"][f"t{lvl}"])
        floor = out[lvl] = max(floor, top)
    return out


def eager_terms(ctx: Context, metric: str, level: int) -> tuple[float, float]:
    """(below, above): the between-group terms (log units) of a decode step outside the CUDA graphs on `metric`'s band at
    `level`: its log moves with the launches at the per-launch cost's range's ends (Context.eager, TPOT's; eager_ttft,
    TTFT's), read as that range's 95% (EAGER_LEVEL). Each side its own move (docs/modelling-notes.md#eagerfix-eager-sides):
    TPOT's down move below and up move above; a rate's the other way round (FALLS_WITH_TPOT); TTFT's its own."""
    down, up = ctx.eager_ttft if metric == "ttft_ms" else ctx.eager
    if metric in FALLS_WITH_TPOT:
        down, up = up, down
    if not (down or up):
        return 0.0, 0.0
    z = EAGER_LEVEL.get(level) or NormalDist().inv_cdf(0.5 + level / 200.0) / NormalDist().inv_cdf(0.975)
    return float(down) * z, float(up) * z


def with_eager(terms: dict[int, float], ctx: Context, metric: str) -> tuple[dict[int, float], dict[int, float]]:
    """(below, above): `terms` (between's) with ctx's eager terms on `metric` (eager_terms) in quadrature at each level,
    each side apart, a wider level's never below a narrower's."""
    out: tuple[dict[int, float], dict[int, float]] = ({}, {})
    floor = [0.0, 0.0]
    for lvl in sorted(terms):
        for side, e in enumerate(eager_terms(ctx, metric, lvl)):
            floor[side] = out[side][lvl] = max(floor[side], math.hypot(terms[lvl], e))
    return out


def ideal(model, dep, batch, *, isl, osl=0.0, accepted=1.0, gpus: int | None = None, streams: int = 1, prefill=None,
          prefix_hit: float = 0.0) -> dict:
    """What `dep`'s GPUs (anything with a Deployment's gpu, num_gpus and precision) allow at `batch` requests a step (at least 1), `accepted` tokens a request a step, at the format
    the GPU runs (spec.precision.executable): cost.roofline.ideal_step's step as the most tok/s/user and tok/s/GPU
    (`streams` such instances over `gpus` GPUs: a disaggregated unit's decode pool; default one over its own) and the
    least TPOT; and the least TTFT, one request's prefill of its `isl` tokens not in the prefix cache (`prefix_hit`) alone on `prefill`'s GPUs (a disaggregated unit's
    prefill instance; default `dep`'s): ideal_step over isl tokens, its weights read once or 2 x active params x isl
    FLOPs at the aggregate peak, whichever is longer (no attention, no queue, no KV transfer: a lower bound at any load).
    A band's log-symmetric widening put llama-3.1-8b's tok/s/GPU 95% bound on one H100 at 2x its
    memory-bandwidth roofline, and its TPOT 95% at 3.19 ms beside a 4.48 ms ideal step; a disaggregated Llama-3.1-70B
    FP8 TTFT 95% at 15.6 ms on 4 H200s that cannot prefill 1,024 tokens in under 18 ms (docs/modelling-notes.md#dband-load)."""
    from llm_codesign.cost.roofline import ideal_prefill, ideal_step
    from llm_codesign.spec.precision import executable

    # a step credits no more tokens than a request has left (spec.plan.accepted_within): with osl 0 (unknown), as given
    b, acc = max(1.0, float(batch)), float(accepted) if not osl else float(accepted_within(accepted, osl))
    # each request's KV cache read at the batch's mean context, isl + osl / 2 (as serve.aggregated prices decode: fixroof)
    # one plan's floor (a plan of one-element size arrays gives a one-element array)
    step = float(np.ravel(ideal_step(model, dep.gpu, executable(dep.precision, dep.gpu)[0], dep.num_gpus, b, accepted=acc,
                                     context=float(isl) + float(osl) / 2.0, plan=getattr(dep, "plan", None)))[0])
    pf = dep if prefill is None else prefill
    # the prompt tokens prefilled: those not in the prefix cache (spec.plan.cached_tokens, as estimate prices them); the
    # whole prompt's put the floor of an 8,192-token prompt at 99% hits above the prediction (crev9 #2)
    new = float(isl) - float(cached_tokens(isl, prefix_hit))
    first = float(np.ravel(ideal_prefill(model, pf.gpu, executable(pf.precision, pf.gpu)[0], pf.num_gpus, max(1.0, new),
                                         plan=getattr(pf, "plan", None)))[0])
    return {"tok_s_per_user": acc / step, "output_tok_s_per_gpu": acc * b * streams / step / (gpus or dep.num_gpus),
            "tpot_ms": step / acc * 1e3, "ttft_ms": first * 1e3}


# the metrics `ideal` bounds from below (the rest, rates, from above)
FLOORED = ("tpot_ms", "ttft_ms")


def capped(bands: dict, values: dict, bounds: dict) -> dict:
    """`bands` ({metric: band}) held within `bounds` (ideal's): each rate's bounds above its ceiling brought down to it,
    TPOT's and TTFT's (FLOORED) below their floor brought up to it, the band marked "capped" with what it stopped at; a ceiling never below
    the prediction (`values`) nor the band's centre, a floor never above them (the bound the model's own answer
    passes is the model's to answer for, not the band's)."""
    out = dict(bands)
    for m, lim in bounds.items():
        b = bands.get(m)
        if b is None or lim is None:
            continue
        if m in FLOORED:
            lim = min(lim, values.get(m, lim), b["centre"])
            if min(b[f"lo{lvl}"] for lvl in LEVELS) >= lim:
                continue
            out[m] = b | {k: max(b[k], lim) for k in b if k[:2] in ("lo", "hi")} | {"capped": float(lim)}
        else:
            lim = max(lim, values.get(m, lim), b["centre"])
            if max(b[f"hi{lvl}"] for lvl in LEVELS) <= lim:
                continue
            out[m] = b | {k: min(b[k], lim) for k in b if k[:2] in ("lo", "hi")} | {"capped": float(lim)}
        if m in out and out[m] is not b:  # the span of the bounds printed, as the text's "not predictable here" reads them
            out[m] |= predictability(out[m]["lo95"], out[m]["hi95"])
    return out


def with_queue(own: dict, own_value: float, queue_ms: float, per: dict | None = None, per_value: float | None = None) -> dict:
    """TTFT's band where requests wait for a slot (serve.estimate's Estimate.queue: `queue_ms` of whole cohorts of the
    running batch ahead of a request). The runs' band (`own`, about `own_value`: the TTFT once a request runs, what every
    run measured, none queued behind a batch cap) plus the queue scaled by the spread of what a cohort's time is made of:
    `per`, TPOT's band about `per_value` (a cohort is a prefill and osl decode steps), else `own`'s ratios (one output
    token: prefill only). Each bound added as if the two errors moved together, so the band covers the TTFT as quoted,
    queue included, at no less than its level (the queue's time is the answer's `queue`, rendered once by
    render.intervals.queue_text: crev11 #10 found '1.25e+05 s' here beside the head's '34.7 h'); it scaled the whole TTFT by the TTFT runs' spread, which none of them queued
    (70B TP8 H200, 64 requests on 16 slots: TTFT 30.0 s, 29.7 s of it queue, 80% 16.9-64.3 s), newc7 #7."""
    ref, at = (per, per_value) if per is not None and per_value else (own, own_value)
    out = {k: own[k] + queue_ms * ref[k] / at for k in own if k[:2] in ("lo", "hi") or k == "centre"}
    kinds = {getattr(w, "kind", w) for w in own.get("widened", ())}  # a reason once: own's, then TPOT's others
    widened = [*own.get("widened", ()), *(w for w in (ref.get("widened", ()) if ref is not own else ()) if getattr(w, "kind", w) not in kinds)]
    how = "TPOT's spread (its basis)" if ref is not own else "the same spread"
    return {**{k: v for k, v in own.items() if k != "capped"}, **out, "widened": widened, "queue_ms": float(queue_ms),
            "source": f"{own['source']}, for the TTFT once a request runs; its queue at {how}",
            **predictability(out["lo95"], out["hi95"])}


def queued(out: dict, values: dict, queue_ms: float) -> dict:
    """`out`, bands about `values` whose TTFT is the TTFT once a request runs (the quoted TTFT less `queue_ms`, its wait for
    a slot), with TTFT's band about the TTFT as quoted (with_queue, at TPOT's spread) where there is a queue: one rule for
    estimate's bands and mix's (a mix above the cap scaled its whole TTFT, queue included, by the runs' spread: leftS)."""
    if not queue_ms or "ttft_ms" not in out:
        return out
    return out | {"ttft_ms": with_queue(out["ttft_ms"], values["ttft_ms"], queue_ms, out.get("tpot_ms"), values.get("tpot_ms"))}


def bands(values: dict, ctx: Context, *, table: dict | None = None) -> dict[str, dict]:
    """`band` of each metric in `values` ({metric: value}, METRICS' names)."""
    return {m: band(m, v, ctx, table=table) for m, v in values.items() if m in METRICS}


def banded_rows(values: list[dict], contexts: list[Context], bounds: list[dict], *, table: dict | None = None) -> list[dict]:
    """Each row's `bands` about its `values` ({metric: value}) at its Context, held within its `bounds` (ideal's at the batch
    it runs: `capped`), as estimate's are: one rule for a frontier's points and design's rows. Rows whose contexts differ only
    where no band moves (grouped) are looked up in one pass, their values as one array."""
    groups: dict = {}
    for i, ctx in enumerate(contexts):
        groups.setdefault(grouped(ctx, table=table), []).append(i)
    out: list = [None] * len(values)
    for ctx, idx in groups.items():
        b = bands({m: np.array([values[i][m] for i in idx]) for m in METRICS if m in values[idx[0]]}, ctx, table=table)
        each = {m: {k: np.asarray(v).tolist() for k, v in d.items() if k in POINTWISE} for m, d in b.items()}
        rest = {m: {k: v for k, v in d.items() if k not in POINTWISE} for m, d in b.items()}
        for j, i in enumerate(idx):
            out[i] = capped({m: {**{k: v[j] for k, v in each[m].items()}, **rest[m]} for m in b}, values[i], bounds[i])
    return out


def table_for(profile=None, *, gpu=None) -> dict:
    """The table a question answered with `profile` (a calibration profile's path; None: the bundled
    one) takes: the bundled slices, and the profile's own ([intervals], written by `calibrate --serving`)
    before them where they cover the question. A Calibration object (the API's) is the bundled profile's
    where it equals it on `gpu`; another one has no runs of its own, and its answers say so."""
    if profile is None:
        return bundled()
    if not isinstance(profile, str):
        from llm_codesign.cost.calibration import calibration_for

        if gpu is not None and profile == calibration_for(gpu):
            return bundled()
        return bundled() | {"profile": "this Calibration", "why_bundled": "an object carries no runs of its own"}
    from llm_codesign.cost.calibration import file_stamp

    return _profile_table(profile, file_stamp(profile))


@lru_cache(maxsize=16)
def _profile_table(profile: str, stamp: tuple | None = None) -> dict:  # stamp: cost.calibration.file_stamp, a rewrite re-read
    from llm_codesign.cost.calibration import profile_label
    from llm_codesign.errors import InputError, read_toml

    own = read_toml(profile, "calibration", "a calibration profile").get("intervals")
    t, name = bundled(), profile_label(profile)
    if own is None:
        return t | {"profile": name, "why_bundled": "it holds no serving runs of its own; `calibrate --serving` writes them"}
    try:
        slices = {m: {k: {"n": int(c["n"]), **{q: float(c[q]) for q in c if q.startswith("q")},
                          **{x: [str(v) for v in c[x]] for x in ("arrivals", "families") if x in c}}
                      for k, c in own["slices"].get(m, {}).items()} for m in METRICS}
        env = own["envelope"]
        envelope = {mode: {k: sorted(set(t["envelope"].get(mode, {}).get(k, ())) | set(env.get(mode, {}).get(k, ())))
                           for k in ("metrics", "families", "engines")}
                    | {"ranges": _wider(t["envelope"].get(mode, {}).get("ranges", {}), env.get(mode, {}).get("ranges", {}))} for mode in MODES}
        envelope |= {k: sorted(set(t["envelope"][k]) | set(env.get(k, ()))) for k in ("kinds", "formats", "models")}
        own_runs = {mode: {str(k): int(v) for k, v in env.get(mode, {}).get("runs", {}).items()} for mode in MODES}
        spread = {mode: {str(k): {str(m): {q: int(x) if q == "n" else float(x) for q, x in v.items()} for m, v in ms.items()}
                         for k, ms in env.get(mode, {}).get("own_spread", {}).items()} for mode in MODES}
        # the runs per engine|family behind either table (the bundled runs and the profile's own, its own campaign's),
        # which _describe's "(X's own N ...)" counts
        for mode in MODES:
            at = dict(t["envelope"].get(mode, {}).get("runs", {}))
            for k, v in own_runs[mode].items():
                at[k] = at.get(k, 0) + v
            envelope[mode]["runs"] = dict(sorted(at.items()))
        # the engine|family pairs its runs cover (`covered`), and their runs' model classes where recorded (profile_section)
        own_classes = {mode: {str(k): [str(c) for c in v] for k, v in env.get(mode, {}).get("classes", {}).items()} for mode in MODES}
        cover = {f"{mode}|{k}" for mode in MODES for k, n in own_runs[mode].items() if n >= MIN_ROWS}
        # the slices at mode|engine|family (not mode|engine|load, mode|family|load or an arrival's)
        cover |= {k for m in slices for k in slices[m] if k.count("|") == 2 for mode, e, f in [k.split("|")]
                  if e in envelope.get(mode, {}).get("engines", ()) and f in envelope.get(mode, {}).get("families", ())}
    except (KeyError, TypeError, ValueError, AttributeError):
        raise InputError("calibration.intervals", profile, "the [intervals] section `calibrate --serving` writes (slices and envelope)") from None
    # the bundled envelope for every question its own runs do not cover (`covered`: engine x GPU family), with the runs
    # per engine|family counted over both (what _describe's "(X's own N ...)" says); the merged one where they do
    bundled_env = {mode: {**e, "runs": envelope[mode]["runs"]} if mode in envelope and isinstance(e, dict) else e
                   for mode, e in t["envelope"].items()}
    return t | {"own": slices, "envelope": bundled_env, "own_envelope": envelope, "covered": frozenset(cover), "own_classes": own_classes,
                "profile": name, "why_bundled": "none of its runs is like this one", "own_runs": own_runs, "own_spread": spread,
                "bundled_families": {mode: t["envelope"].get(mode, {}).get("families", []) for mode in MODES}}


def _wider(a: dict, b: dict) -> dict:
    """Two envelopes' ranges ({engine: {quantity: [lo, hi]}}) as one: each engine's quantities from the lower low to the higher high."""
    out = {e: dict(r) for e, r in a.items()}
    for e, r in b.items():
        for q, (lo, hi) in r.items():
            was = out.setdefault(e, {}).get(q, [lo, hi])
            out[e][q] = [min(float(lo), was[0]), max(float(hi), was[1])]
    return out


def profile_section(rows: list[dict], preds: list[dict]) -> str:
    """The [intervals] section `calibrate --serving` appends to the profile it writes: the slices and the
    envelope of its own runs, priced with the profile it fitted (`preds`)."""
    records = residuals(rows, preds)
    table = build(records, min_rows=OWN_MIN_ROWS)
    del table["spread"]  # a profile's own slices keep their own quantiles (within)
    # the model classes of its runs per engine|family (`covered`): an own vLLM Blackwell slice of 120 dense Llama-3.1-70B
    # runs, 3.8% TPOT median, put the 635 MoE vLLM Blackwell runs' TPOT at 34.6 / 55.0% inside their 80 / 95% bands
    # (bundled 79.2 / 96.7; fixcal's out-of-sample check; not in build's envelope: the bundled table would change).
    # A class counts with a slice's worth of its own runs (OWN_MIN_ROWS):
    # 39 dense runs and one MoE run do not make the dense runs' band a MoE question's
    from collections import Counter

    for mode, env in table["envelope"].items():
        if isinstance(env, dict) and "runs" in env:
            env["classes"] = {k: sorted(m for m, n in Counter(c.model_class for c, _ in records
                                                              if c.mode == mode and f"{c.engine}|{c.family}" == k).items() if n >= OWN_MIN_ROWS)
                              for k in env["runs"]}
            env["own_spread"] = own_spread([x for x in records if x[0].mode == mode])
    return to_toml(table, ["the prediction intervals of this profile's own runs (llm_codesign.measure.intervals): they",
                           "replace the bundled ones for questions like them (same engine, GPU family and model class),",
                           f"where they number {OWN_MIN_ROWS} at least (the 80%; the 95% from {MIN_ROWS}); fewer keep the bundled bands"],
                   prefix="intervals")


def own_spread(records: list[tuple[Context, dict[str, float]]]) -> dict:
    """Per engine|family and metric of a profile's runs: {"n", "q100", "q900"}, the 10th and 90th percentiles of
    r = log(measured / predicted), priced with the profile fitted on them (in sample). Below OWN_MIN_ROWS they make no band
    (no 90th order statistic) and the bundled one answers; this is what an answer says of them beside it (newc10 #15:
    12 runs at 6.5% p90 read the bundled -20/+31% with nothing of their own). Said, not shrunk toward: an in-sample spread
    of a dozen runs understates a new run's error, and no fold measures how a small profile's spread predicts its next runs."""
    by: dict[str, dict[str, list[float]]] = {}
    for ctx, res in records:
        for m, r in res.items():
            by.setdefault(f"{ctx.engine}|{ctx.family}", {}).setdefault(m, []).append(r)
    return {k: {m: {"n": len(v), "q100": round(float(np.percentile(v, 10)), 4), "q900": round(float(np.percentile(v, 90)), 4)}
                for m, v in ms.items()} for k, ms in sorted(by.items())}


@lru_cache(maxsize=1)
def bundled() -> dict:
    """The shipped table (data/calibration/intervals.toml)."""
    return tomllib.loads(resources.files("llm_codesign").joinpath("data/calibration/intervals.toml").read_text())


def scores(records: list[tuple[Context, dict[str, float]]], table: dict, *, levels=LEVELS) -> dict[str, dict[str, np.ndarray]]:
    """Per metric, over the records' residuals: `inside<level>` (the measurement lies in the stated
    interval), `width<level>` (its width over the prediction), `need<level>`: the between-group term that
    would just cover it, |d| - s for a residual d from the slice's median and the within-slice bound s on its
    side (0 inside the slice's own bounds: band adds T to s), `offset`: d, `span<level>`: the interval's width in
    log units and `why`: the between-group terms of the reasons it lies outside the envelope (Widening.term, BETWEEN's; "campaign" where none)."""
    cols: dict[str, dict[str, list]] = {}
    for ctx, res in records:
        for m, r in res.items():
            b = band(m, 1.0, ctx, table=table, levels=levels)
            c, _, found, mine = lookup(m, ctx, table)
            d = cols.setdefault(m, {})
            d.setdefault("offset", []).append(r - c["q500"])
            # the terms the reasons take (Widening.term): what the folds measure each kind's term over
            d.setdefault("why", []).append(",".join(dict.fromkeys(w.term for w in slice_reasons(m, c, found, table))) or "campaign")
            for lvl in levels:
                below, above = within(m, c, found, table, lvl, own=mine)
                d.setdefault(f"inside{lvl}", []).append(math.log(b[f"lo{lvl}"]) <= r <= math.log(b[f"hi{lvl}"]))
                d.setdefault(f"width{lvl}", []).append(b[f"hi{lvl}"] - b[f"lo{lvl}"])
                d.setdefault(f"span{lvl}", []).append(math.log(b[f"hi{lvl}"] / b[f"lo{lvl}"]))
                side = above if r >= c["q500"] else below
                d.setdefault(f"need{lvl}", []).append(max(abs(r - c["q500"]) - side, 0.0))
    return {m: {k: np.array(v, object if k == "why" else float) for k, v in d.items()} for m, d in cols.items()}


_GEMM = {"bfloat16": "bf16", "float16": "bf16"}
# the tables' MoE formats as format_label names a question's: the H100 per-engine tables' INT4 and MXFP4 weight-only
# rows (Marlin, triton_kernels, TensorRT-LLM's W4A16) run BF16 activations, W4A16
_MOE = {"bfloat16": "bf16", "w4a8_mxfp4_mxfp8": "W4A8", "int4_wo": "W4A16", "w4a16_mxfp4": "W4A16"}


def kernel_tables() -> dict[str, list[str]]:
    """Per GPU family, the kernel tables shipped for it (measure.kernel_tables.BUNDLED), labelled as
    needed_tables asks: "GEMM <format>", "MoE <format>", "attention", "collectives"."""
    from llm_codesign.measure.kernel_tables import BUNDLED, read_csv
    from llm_codesign.spec.hardware import get_gpu

    out: dict[str, set] = {}
    for name in BUNDLED:
        kind, rows = read_csv(name)
        for r in rows:
            label = (f"GEMM {_GEMM.get(r['gemm_dtype'], r['gemm_dtype'])}" if kind == "gemm" else
                     f"MoE {_MOE.get(r['moe_dtype'], r['moe_dtype'])}" if kind == "moe" else
                     "collectives" if kind in ("collectives", "ep_comm") else "attention")
            out.setdefault(get_gpu(r["system"]).family, set()).add(label)
    return {f: sorted(v) for f, v in sorted(out.items())}


def _toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    return "{" + ", ".join(f"{_toml_key(k)} = {_toml_value(x)}" for k, x in v.items()) + "}"


def _toml_key(k: str) -> str:
    return k if k.replace("_", "").replace("-", "").isalnum() else json.dumps(k)


def _toml_tables(d: dict, path: list[str]) -> list[str]:
    """A table's own keys (dicts of plain values inline), then its sub-tables, each under [path]."""
    flat = [k for k, v in d.items() if not (isinstance(v, dict) and any(isinstance(x, dict) for x in v.values()))]
    out = ["[" + ".".join(map(_toml_key, path)) + "]"] + [f"{_toml_key(k)} = {_toml_value(d[k])}" for k in flat] + [""]
    for k, v in d.items():
        if k not in flat:
            out += _toml_tables(v, [*path, k])
    return out


def to_toml(table: dict, header: list[str], *, prefix: str = "") -> str:
    """The table as TOML after `header` comment lines; under [`prefix`.*] where given (a profile's section)."""
    out = [f"# {h}" if h else "#" for h in header]
    out += [""] if out else []
    for k, v in table.items():
        out += _toml_tables(v, [prefix, k] if prefix else [k])
    return "\n".join(out)


def band_disagg_rows(rows: list[dict], model, decode, *, isl: int, osl: int, calibration: str | None, arrival: str = "",
                     prefill=None, prefill_instances: int = 1, decode_instances: int = 1) -> None:
    """Each row of a disaggregated estimate (serve.disagg.estimate_disagg) with its metrics' 80% and 95%
    intervals (disaggregated runs, the decode pool's GPU and precision; `arrival` the requests' pattern), in place:
    `disagg` and the page alike; held within what the unit's GPUs allow (ideal, capped: each decode instance at the row's
    decode_batch, the TTFT floor one prefill on a `prefill` instance), as a frontier's disaggregated points are."""
    table = table_for(calibration, gpu=decode.gpu)
    pf = decode if prefill is None else prefill
    gpus = prefill_instances * pf.num_gpus + decode_instances * decode.num_gpus
    acc = 1.0 if decode.spec is None else float(decode.spec.accepted())
    for row in rows:
        ctx = context(model, decode.gpu, decode.precision, engine=decode.backend, concurrency=row["concurrency"], isl=isl, osl=osl,
                      spec=decode.spec is not None, disaggregated=True, arrival=arrival,
                      eager=tuple(row.get("eager_decode", {}).get("tpot_log_moves", (0.0, 0.0))),
                      eager_ttft=tuple(row.get("eager_decode", {}).get("ttft_log_moves", (0.0, 0.0))),
                      eager_piecewise=bool(row.get("eager_decode", {}).get("piecewise", False)))
        values = {k: row[k] for k in METRICS}
        # the requests a decode instance runs at once as the row was priced (serve.disagg's decode_batch: the concurrency
        # over the instances, up to the pool's slots): it had been rebuilt by Little's law from the row's rates, tokens/s x
        # TPOT, which counts only the requests past prefill while the decode step was priced with every one in flight
        batch = row["decode_batch"]
        row["intervals"] = capped(bands(values, ctx, table=table), values,
                                  ideal(model, decode, batch, isl=isl, osl=osl, accepted=acc, gpus=gpus, streams=decode_instances, prefill=pf))
