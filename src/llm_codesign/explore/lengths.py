"""Workloads of many request lengths: a CSV of (ISL, OSL) requests or a parametric distribution,
priced through the array path at once and mixed by request share.

Each length is priced as if the deployment's concurrency held requests of that length alone
(serve/aggregated.evaluate broadcast over the samples), then mixed: a slot serves one request for its
lifetime, so with C requests in flight the deployment completes C / E[life] requests a second and
writes C E[OSL] / E[life] output tokens a second; TTFT is read per request (mean and percentiles over
the requests), TPOT per decoded token (OSL - 1 a request). That a long request slows the short ones sharing its batch is
left out: each length's step is its own, so a wide mix reads optimistic for the short requests. A mix any of whose
requests is longer than the model's context is refused up front, naming the part that draws them and their share
(within_context): an engine refuses those requests, so pricing the rest, or clipping them, would answer another mix.
`mix` is the one code path of `llm-codesign mix` (which prints its answer) and `lc.mix` (which returns it)."""
from __future__ import annotations

import csv
import math
from dataclasses import dataclass, field
from pathlib import Path
from statistics import NormalDist

import numpy as np

from llm_codesign.errors import InputError, check_header, read_text
from llm_codesign.spec.harness import DEFAULT_ARRIVAL
from llm_codesign.spec.plan import MAX_TOKENS  # the one bound on a request's tokens (Workload's and the CLI's)


@dataclass(frozen=True)
class Lengths:
    """Request lengths with their shares of requests (weights sum to 1); `parts`: what they were read from, as
    (option, value): the CSV, or the ISL and OSL distributions."""
    isl: np.ndarray
    osl: np.ndarray
    weight: np.ndarray
    source: str
    parts: tuple[tuple[str, str], ...]

    @property
    def mean_isl(self) -> float:
        return float(np.sum(self.weight * self.isl))

    @property
    def mean_osl(self) -> float:
        return float(np.sum(self.weight * self.osl))


def _check(name: str, v, where: str) -> int:
    try:
        x = float(v)
    except (TypeError, ValueError):
        x = float("nan")
    if not math.isfinite(x) or x < 1 or x > MAX_TOKENS or x != int(x):
        raise InputError(name, v, f"a positive whole number of tokens up to {MAX_TOKENS:,} ({where})")
    return int(x)


def from_csv(path: str) -> Lengths:
    """Requests from a CSV with columns isl and osl (one row a request), and optionally count or weight."""
    p = Path(path)
    text = read_text(path, "lengths", "a CSV text file with columns isl,osl")
    reader = csv.DictReader(text.splitlines())
    check_header(reader.fieldnames, "lengths", path, "a CSV with columns isl,osl")
    rows = list(reader)
    if not rows or not {"isl", "osl"} <= set(rows[0]):
        raise InputError("lengths", path, "a CSV with a header naming isl and osl and at least one request")
    wcol = "count" if "count" in rows[0] else "weight" if "weight" in rows[0] else None
    isl, osl, w = [], [], []
    for i, r in enumerate(rows, start=2):
        isl.append(_check("isl", r["isl"], f"{p.name} line {i}"))
        osl.append(_check("osl", r["osl"], f"{p.name} line {i}"))
        if wcol:
            try:
                x = float(r[wcol])
            except (TypeError, ValueError):
                x = float("nan")
            if not math.isfinite(x) or x < 0:
                raise InputError(wcol, r[wcol], f"a non-negative number ({p.name} line {i})")
            w.append(x)
        else:
            w.append(1.0)
    w = np.asarray(w, float)
    if w.sum() <= 0:
        raise InputError(wcol or "count", 0, f"a positive total ({p.name})")
    return _grouped(np.asarray(isl, float), np.asarray(osl, float), w / w.sum(), f"{p.name}: {_rows_said(wcol, w)}", (("lengths", path),))


def _rows_said(wcol: str | None, w: np.ndarray) -> str:
    """What a CSV's rows are, as mix's title says them: requests (one a row, or `count` each) or, with `weight`, length
    classes and their shares ("3 length classes (weights 0.5/0.3/0.2)": they read as "3 requests", newc8 #16)."""
    if wcol == "weight":
        shares = "/".join(f"{x:.2g}" for x in (w / w.sum())[:6]) + ("/..." if len(w) > 6 else "")
        return f"{len(w)} length class{'es' if len(w) != 1 else ''} (weights {shares})"
    n = len(w) if wcol is None else float(w.sum())
    return f"{n:,.0f} request{'s' if n != 1 else ''}" + (f" in {len(w)} rows" if wcol == "count" else "")


def _grouped(isl, osl, w, source, parts) -> Lengths:
    """Identical (ISL, OSL) pairs merged: the array path prices each distinct pair once."""
    pairs, inv = np.unique(np.stack([isl, osl], 1), axis=0, return_inverse=True)
    weights = np.bincount(inv.reshape(-1), weights=w, minlength=len(pairs))
    return Lengths(pairs[:, 0], pairs[:, 1], weights, source, parts)


def parametric(spec: str, field: str, bins: int = 24) -> tuple[np.ndarray, np.ndarray]:
    """Token counts and their shares from `fixed:N`, `uniform:LO,HI` or `lognormal:median=M,sigma=S`,
    cut into `bins` equal-probability bins (each bin's median, rounded to a token)."""
    kind, _, args = spec.partition(":")
    kind = kind.strip().lower()
    q = (np.arange(bins) + 0.5) / bins
    try:
        if kind == "fixed":
            return np.asarray([_check(field, args, spec)], float), np.ones(1)
        if kind == "uniform":
            lo, hi = (_check(field, x, spec) for x in args.split(","))
            if hi < lo:
                raise ValueError
            vals = lo + q * (hi - lo)
        elif kind == "lognormal":
            kw = dict(kv.split("=") for kv in args.split(","))
            median, sigma = float(kw["median"]), float(kw["sigma"])
            if not (median >= 1 and 0 < sigma <= 4):
                raise ValueError
            vals = median * np.exp(sigma * np.asarray([NormalDist().inv_cdf(x) for x in q]))
        else:
            raise ValueError
    except (ValueError, KeyError, TypeError):
        raise InputError(field, spec, "fixed:N, uniform:LO,HI or lognormal:median=M,sigma=S (0 < S <= 4)") from None
    vals = np.clip(np.round(vals), 1, MAX_TOKENS)
    return vals, np.full(len(vals), 1.0 / len(vals))


def from_distributions(isl_spec: str, osl_spec: str, bins: int = 24) -> Lengths:
    """ISL and OSL drawn independently from two parametric distributions."""
    i, wi = parametric(isl_spec, "isl_dist", bins)
    o, wo = parametric(osl_spec, "osl_dist", bins)
    grid_i, grid_o = np.meshgrid(i, o, indexing="ij")
    return _grouped(grid_i.reshape(-1), grid_o.reshape(-1), np.outer(wi, wo).reshape(-1), f"ISL {isl_spec}, OSL {osl_spec}",
                    (("isl_dist", isl_spec), ("osl_dist", osl_spec)))


def _weighted_quantile(x, w, qs):
    order = np.argsort(x)
    cw = np.cumsum(w[order])
    return [float(x[order][min(np.searchsorted(cw, q * cw[-1]), len(x) - 1)]) for q in qs]


def within_context(model, lengths: Lengths) -> None:
    """Refuse, up front, a mix any of whose requests is longer (ISL + OSL) than the model's context: an engine refuses
    such a request (ModelSpec.check_context), so the mix as given cannot be served. The line names the part of the mix
    that draws them (the CSV; the ISL or OSL distribution where it alone, with the other's shortest draw, passes the
    context; else both) and their share of the mix's requests."""
    ctx, total = model.max_context, lengths.isl + lengths.osl
    over = total > ctx
    if not ctx or not over.any():
        return
    share = f"{100 * float(np.sum(lengths.weight[over])):.3g}% of the mix's requests exceed it, up to {int(total.max()):,}"
    refused = "an engine refuses such a request"
    if len(lengths.parts) == 1:
        field, value = lengths.parts[0]
        raise InputError(field, value, f"requests within {model.name}'s context of {ctx:,} tokens (ISL+OSL): {share}, and {refused}")
    isl_alone = bool(np.all(lengths.isl[over] + lengths.osl.min() > ctx))
    osl_alone = bool(np.all(lengths.osl[over] + lengths.isl.min() > ctx))
    if isl_alone != osl_alone:
        (field, value), (other, given) = lengths.parts if isl_alone else lengths.parts[::-1]
        raise InputError(field, value, f"draws within {model.name}'s context of {ctx:,} tokens (ISL+OSL, with --{other.replace('_', '-')} "
                                       f"{given}): {share}, and {refused}")
    # both options named as typed ("--isl-dist fixed:100000, --osl-dist ..."), not as a Python tuple
    raise InputError("isl_dist/osl_dist", ", ".join(f"--{f.replace('_', '-')} {v}" for f, v in lengths.parts),
                     f"draws whose sums lie within {model.name}'s context of {ctx:,} tokens: {share}, and {refused}")


def price_mix(model, dep, lengths: Lengths, concurrency: int, *, calibration, arrival: str = DEFAULT_ARRIVAL) -> dict:
    """The mix's metrics at `concurrency` requests in flight (see the module docstring) under `arrival`
    (spec.harness.ARRIVALS, estimate's default), with each length's own figures; refuses a mix whose
    longest request does not fit the deployment."""
    from llm_codesign.serve.aggregated import Serving, evaluate

    if concurrency < 1:
        raise InputError("concurrency", concurrency, "a positive integer")
    from llm_codesign.spec.plan import check_whole_prompt, whole_length

    within_context(model, lengths)
    # the longest request as estimate judges one (frev #2): TensorRT-LLM without chunked prefill refuses it, not serves it
    # chunked; vLLM's budget holds its prompt and output together (spec.plan.whole_length)
    i = int(np.argmax(whole_length(dep.engine, lengths.isl, lengths.osl)))
    check_whole_prompt(dep, int(lengths.isl[i]), field="isl (the mix's longest)", osl=int(lengths.osl[i]))
    r = evaluate(model, Serving.of(dep), cal=calibration, concurrency=concurrency, isl=lengths.isl, osl=lengths.osl, arrival=arrival)
    fits = np.broadcast_to(r["fits"], lengths.isl.shape)
    w = lengths.weight
    ttft, tpot = np.broadcast_to(r["ttft_s"], w.shape), np.broadcast_to(r["tpot_s"], w.shape)
    out = np.broadcast_to(r["output_tok_s_per_gpu"], w.shape)
    gpus = float(np.asarray(dep.plan.gpus))
    # a request of length i holds its slot for life_i = served_i x OSL_i / (output tok/s x GPUs)
    life = concurrency * lengths.osl / np.maximum(out * gpus, 1e-300)
    e_life = float(np.sum(w * life))
    tok_w = decoded_weights(w, lengths.osl)
    p50, p90, p99 = _weighted_quantile(ttft, w, (0.5, 0.9, 0.99))
    return {
        "lengths": lengths.source, "distinct_lengths": int(len(w)), "mean_isl": lengths.mean_isl, "mean_osl": lengths.mean_osl,
        "concurrency": concurrency, "fits": bool(fits.all()), "share_not_fitting": float(np.sum(w[~fits])),
        "ttft_ms": {"mean": float(np.sum(w * ttft)) * 1e3, "p50": p50 * 1e3, "p90": p90 * 1e3, "p99": p99 * 1e3},
        "tpot_ms": float(np.sum(tok_w * tpot)) * 1e3, "tok_s_per_user": float(1.0 / np.sum(tok_w * tpot)),
        "output_tok_s_per_gpu": concurrency * lengths.mean_osl / e_life / gpus,
        "io_tok_s_per_gpu": concurrency * (lengths.mean_isl + lengths.mean_osl) / e_life / gpus,
        # each length's requests a step and tokens a request a step, as it is priced (popped by mix for its intervals' bounds:
        # measure.intervals.ideal per length, _mix_ideal)
        "_batch": np.broadcast_to(np.minimum(concurrency, r["max_batch"]), w.shape).astype(float),
        "_accepted": np.broadcast_to(r["accepted_per_step"], w.shape).astype(float),
        # the mean TTFT's wait for a slot, in it (popped by mix: its TTFT band about the rest, the queue added as estimate's)
        "_queue_ms": float(np.sum(w * np.broadcast_to(r["slot_queue_s"], w.shape))) * 1e3,
        "per_length": [{"isl": int(a), "osl": int(b), "share": float(c), "ttft_ms": float(d) * 1e3, "tpot_ms": float(e) * 1e3,
                        "fits": bool(f)} for a, b, c, d, e, f in zip(lengths.isl, lengths.osl, w, ttft, tpot, fits, strict=True)],
    }


def decoded_weights(w: np.ndarray, osl: np.ndarray) -> np.ndarray:
    """Each length's share of the mix's decoded tokens, what its TPOT and tok/s/user average over: w x (OSL - 1), the tokens
    after the first (a request's first token is its prefill's; TPOT is the time per output token after it). They were
    weighted by OSL: 1,000 one-token requests beside one 128/32 request set the mix's TPOT at 11.21 ms, the only decoding
    request's 6.68 ms (crev9 #3). A mix of one-token requests alone decodes nothing: its shares are returned (the answer's
    TPOT is then null, serve.metrics.without_decode)."""
    dec = w * (np.asarray(osl, float) - 1.0)
    return dec / dec.sum() if dec.sum() > 0 else w


def check_lengths(lengths, isl_dist, osl_dist, *, cli: bool = False) -> None:
    """`mix`'s request lengths: a CSV (`lengths`) or both distributions, not both kinds and not one distribution alone;
    refused as both callers name them (the CLI's --lengths, --isl-dist, --osl-dist; the API's keywords of those names).
    The API's keywords must be text or None (a blank or a number is named as given); the CLI's (`cli`) are text, an
    empty one an option left out (`--lengths ""`: either --lengths FILE.csv or --isl-dist and --osl-dist)."""
    for name, v, what in (("lengths", lengths, "a CSV's path (columns isl, osl, and count or weight)"),
                          ("isl_dist", isl_dist, "fixed:N, uniform:LO,HI or lognormal:median=M,sigma=S"),
                          ("osl_dist", osl_dist, "fixed:N, uniform:LO,HI or lognormal:median=M,sigma=S")):
        if not cli and v is not None and not (isinstance(v, (str, Path)) and str(v).strip()):
            raise InputError(name, shown(v), what + ", or None")
    if bool(lengths) == bool(isl_dist or osl_dist):
        raise InputError("lengths", lengths or isl_dist or osl_dist, "either --lengths FILE.csv or --isl-dist and --osl-dist")
    if not lengths and not (isl_dist and osl_dist):
        raise InputError("osl_dist" if isl_dist else "isl_dist", None, "both --isl-dist and --osl-dist")


def shown(v):
    """A bad argument as a refusal names it: a string, path or number as given (repr: '' and '  ' read as such), any
    other object by its type's name."""
    return str(v) if isinstance(v, Path) else v if isinstance(v, (str, int, float)) else type(v).__name__


@dataclass(frozen=True)
class Mix:
    """`mix`'s answer: one deployment (`deployment`, one instance) serving `concurrency` requests of many lengths; its
    TTFT over the requests (`ttft_s`: mean, p50, p90, p99), TPOT per output token, tok/s/user and tok/s/GPU, whether
    every length fits (`fits`, else `share_not_fitting` of the requests do not) and each distinct length's own figures
    (`per_length`); `to_dict()` is what `mix --json` prints (times in ms), `to_records()`/`to_pandas()` a row per length."""
    model: str
    deployment: object = field(repr=False)
    concurrency: int
    answer: dict = field(repr=False)

    @property
    def ttft_s(self) -> dict[str, float]:
        return {k: v / 1e3 for k, v in self.answer["ttft_ms"].items()}

    @property
    def tpot_s(self) -> float | None:
        """None where every request has one output token (no decode step runs)."""
        return None if self.answer["tpot_ms"] is None else self.answer["tpot_ms"] / 1e3

    @property
    def tok_s_per_user(self) -> float | None:
        """None where every request has one output token (no decode step runs)."""
        return self.answer["tok_s_per_user"]

    @property
    def output_tok_s_per_gpu(self) -> float:
        return self.answer["output_tok_s_per_gpu"]

    @property
    def fits(self) -> bool:
        return self.answer["fits"]

    @property
    def share_not_fitting(self) -> float:
        return self.answer["share_not_fitting"]

    def to_dict(self) -> dict:
        """What `mix --json` prints."""
        import copy

        return copy.deepcopy(self.answer)

    def to_records(self) -> list[dict]:
        """One flat dict per distinct length: its ISL, OSL, share of the requests, TTFT and TPOT (ms) and whether it fits."""
        return [{"model": self.model, **r} for r in self.answer["per_length"]]

    def to_pandas(self):
        """`to_records()` as a DataFrame (pandas is an optional dependency)."""
        from llm_codesign.serve.metrics import records_frame  # a None stays None, as in to_records and the JSON

        return records_frame(self.to_records())


def mix_arrival(lengths: Lengths) -> str:
    """A mix's arrival where none is named: "waves" only where every request has one ISL and OSL. Waves' cohorts persist
    because identical requests that prefill in one step also end in one step and refill together (serve.aggregated._cohort);
    requests of different lengths end apart, so a mix's refills spread as a closed loop's do. Priced in waves, each length's
    cohort is the whole prompts one step of that length takes, so a mix's TTFT percentiles came out flat (Llama-3.1-70B TP8
    H200, lognormal 800 x 0.8 / uniform 64-512 at 32: p50/p90/p99 400/414/432 ms; closed_loop 109/174/283;
    docs/modelling-notes.md#fixN5c-waves-ttft)."""
    return DEFAULT_ARRIVAL if len(set(zip(lengths.isl.tolist(), lengths.osl.tolist(), strict=True))) == 1 else "closed_loop"


def mix(model, dep, *, lengths=None, isl_dist=None, osl_dist=None, concurrency: int = 64, calibration=None, arrival: str | None = None) -> Mix:
    """One deployment on a mix of request lengths, as `mix` prices it: the lengths from a CSV (`lengths`) or two
    distributions (`isl_dist`, `osl_dist`), the deployment checked as estimate checks it (serve.estimate.check),
    priced by price_mix at `concurrency` requests in flight under `arrival` (spec.harness.ARRIVALS; None: mix_arrival).
    `calibration`: a profile's path, a Calibration or None."""
    from llm_codesign.cost.calibration import Calibration, calibration_for
    from llm_codesign.measure.intervals import priced_terms, running_load
    from llm_codesign.serve.estimate import as_run, check, estimate
    from llm_codesign.serve.metrics import no_decode, without_decode
    from llm_codesign.spec.harness import check_arrival
    from llm_codesign.spec.plan import Workload

    if arrival is not None:
        check_arrival(arrival)
    check_lengths(lengths, isl_dist, osl_dist)
    mixture = from_csv(str(lengths)) if lengths else from_distributions(str(isl_dist), str(osl_dist))
    arrival = mix_arrival(mixture) if arrival is None else arrival
    check(model, dep)
    cal = calibration if isinstance(calibration, Calibration) else calibration_for(dep.gpu, calibration)
    r = price_mix(model, dep, mixture, concurrency, calibration=cal, arrival=arrival)
    # the bands' question, the mix's mean lengths, priced as estimate prices it: its plan's attention-DP ranks and, where
    # its decode step misses the CUDA graphs, the eager moves widen the mix's bands as they widen estimate's (crev12 #2)
    at_mean = estimate(model, dep, Workload(isl=max(round(r["mean_isl"]), 1), osl=max(round(r["mean_osl"]), 1),
                                            concurrency=concurrency, arrival=arrival), calibration=cal)
    # the formats priced, as estimate's title says them (Estimate.to_dict's precision_as_run, newc8 #16)
    r |= {"model": model.name, "gpu": dep.gpu.id, "num_gpus": dep.num_gpus, "plan": dep.plan.label(), "backend": dep.backend, "arrival": arrival,
          "precision": dep.precision.label(), "precision_as_run": as_run(dep)}
    batch, accepted, queue_ms = r.pop("_batch"), r.pop("_accepted"), r.pop("_queue_ms")
    # looked up at the batch that runs there, as estimate's (running_load: the requests offered above the cap, until leftS)
    r["intervals"] = _mix_bands(model, dep, r, running_load(concurrency, at_mean.max_batch), calibration, batch=batch, accepted=accepted,
                                arrival=arrival, terms=priced_terms(at_mean.deployment.plan, at_mean.eager_decode, osl=r["mean_osl"]),
                                queue_ms=queue_ms)  # issue 40
    # a length of one output token decodes nothing: its TPOT and tok/s/user null, and the mix's where every length is so
    # (serve.metrics.without_decode, as estimate's answer says it)
    r["per_length"] = [without_decode(x) if no_decode(x["osl"]) else x for x in r["per_length"]]
    if all(no_decode(x["osl"]) for x in r["per_length"]):
        r = without_decode(r)
    return Mix(model=model.name, deployment=dep, concurrency=concurrency, answer=r)


def _mix_bands(m, dep, r: dict, running: int, calibration, *, batch: np.ndarray, accepted: np.ndarray, arrival: str,
               terms: dict, queue_ms: float = 0.0) -> dict:
    """The intervals of a mix's mean TTFT, TPOT and rates (measure.intervals.band), as estimate's at the mix's mean ISL
    and OSL in the mix's arrival, as the mix is priced: the runs measured fixed lengths, none a mix. `running`: the batch
    that runs there (measure.intervals.running_load); `terms`: what estimate priced there (measure.intervals.priced_terms);
    `queue_ms`: the mean TTFT's wait for a slot, added to the band as estimate's (measure.intervals.queued)."""
    from llm_codesign.measure.intervals import bands, capped, context, queued, table_for

    ctx = context(m, dep.gpu, dep.precision, engine=dep.backend, concurrency=running, isl=r["mean_isl"], osl=r["mean_osl"],
                  spec=dep.spec is not None, arrival=arrival, **terms)
    table = table_for(calibration, gpu=dep.gpu)
    values = {"ttft_ms": r["ttft_ms"]["mean"] - queue_ms, "tpot_ms": r["tpot_ms"], "tok_s_per_user": r["tok_s_per_user"],
              "output_tok_s_per_gpu": r["output_tok_s_per_gpu"]}
    far, said = _far_lengths(ctx, table, r["per_length"])
    out = bands(values, far, table=table)
    for b in out.values():  # the lengths reasons said of the requests outside the runs, with the mix's mean beside
        b["widened"] = [said.get(w.quantity, lambda w: w)(w) for w in b["widened"]]
    # held within what the GPUs allow at the batches that run, as estimate's (api.estimate), combined as the mix combines its values
    return queued(capped(out, values, _mix_ideal(m, dep, r["per_length"], batch, accepted)), values, queue_ms)


def _far_lengths(ctx, table: dict, rows: list[dict]) -> tuple:
    """The question whose ISL and OSL reasons (measure.intervals.reasons) are the mix's: each quantity at its farthest
    length outside the engine's measured range (the slice stays the mean's: ctx.lengths), and per quantity how to say
    them: the lengths outside on that side, their share of the requests and the mix's mean. The mean alone (OSL 352 of
    3 x 128 and 1 x 1,024) is no request's and read 2.9x below vLLM's 1,024 where 75% of the requests lie 8x below (crev10 #9)."""
    from dataclasses import replace

    from llm_codesign.measure.intervals import QUANTITIES, measured_range, reasons

    far, said = ctx, {}
    for q in ("isl", "osl"):
        name = QUANTITIES[q]
        out = [(x, w) for x in rows for w in reasons(replace(ctx, **{q: float(x[q])}), table) if w.quantity == name]
        if not out:
            continue
        # the farthest past the range (Widening.ratio), not from the mix's mean: 90% at ISL 200 and 10% at 120,000 on vLLM
        # (range 1,024-8,192) said only the 200s, 5.1x below, and dropped the 120,000s 14.6x above (frev10 #1)
        x0, _ = max(out, key=lambda xw: xw[1].ratio)
        hi = measured_range(ctx, table, q)[1]
        side = [x for x, _ in out if (x[q] > hi) == (x0[q] > hi)]
        far = replace(far, **{q: float(x0[q])})
        share, span, mean = sum(x["share"] for x in side), (min(x[q] for x in side), max(x[q] for x in side)), getattr(ctx, q)
        said[name] = lambda w, share=share, span=span, mean=mean: replace(
            w, span=span, what=f"({share:.0%} of the requests; the mix's mean {mean:,.0f}) {w.what}")
    return far, said


def _mix_ideal(m, dep, rows: list[dict], batch: np.ndarray, accepted: np.ndarray) -> dict:
    """What the GPUs allow the mix (measure.intervals.ideal), priced as the mix prices its values (price_mix): each length at
    its own batch (min(concurrency, its max batch)) and acceptance, then its floors and ceilings averaged with the values'
    weights: TTFT's floor over the requests, TPOT's over the decoded tokens (decoded_weights; tok/s/user its inverse) and
    tok/s/GPU's ceiling as the mix's rate, E[OSL] / E[OSL / rate]. One ideal at the smallest batch of any length (a
    prefill-bound OSL-2 length's 7 beside the decoding lengths' 16) put the ceiling at ~1350, below the mix's own 1697
    tok/s/GPU, and cut both upper bounds to the prediction (llama-3.1-8b, H100, crev9 #4); the acceptance was an
    unweighted mean over the lengths."""
    from llm_codesign.measure.intervals import ideal

    isl, osl, w = (np.asarray([x[k] for x in rows], float) for k in ("isl", "osl", "share"))
    per = [ideal(m, dep, b, isl=i, osl=o, accepted=a) for i, o, b, a in zip(isl, osl, batch, accepted, strict=True)]
    floor_tpot = float(np.sum(decoded_weights(w, osl) * np.asarray([x["tpot_ms"] for x in per])))
    out = np.asarray([x["output_tok_s_per_gpu"] for x in per])
    return {"ttft_ms": float(np.sum(w * np.asarray([x["ttft_ms"] for x in per]))), "tpot_ms": floor_tpot,
            "tok_s_per_user": 1e3 / floor_tpot, "output_tok_s_per_gpu": float(np.sum(w * osl) / np.sum(w * osl / out))}
