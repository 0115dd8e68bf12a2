"""What a search answers, as typed data: each frontier point holds the `Deployment` that delivers it
and its metrics in SI units; `to_dict()` is what `pareto --json`, the page's API and the files show
(times in ms), `to_pandas()` one row per point."""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from llm_codesign.cost.ffns import AITER_SWIGLU_BOUND
from llm_codesign.serve.metrics import interval_columns
from llm_codesign.spec.engines import ENGINES
from llm_codesign.spec.hardware import Gpu
from llm_codesign.spec.harness import DEFAULT_ARRIVAL
from llm_codesign.spec.plan import Deployment, Workload
from llm_codesign.spec.precision import executable


@dataclass(frozen=True)
class FrontierPoint:
    """One point of an aggregated frontier: `deployment` is one instance of its plan (num_gpus = the
    instance's GPUs), run as `replicas` instances with `concurrency` requests in flight each."""
    deployment: Deployment
    replicas: int
    concurrency: int
    tok_s_per_user: float
    output_tok_s_per_gpu: float
    ttft_s: float
    tpot_s: float
    accuracy: dict | None = None  # explore.accuracy_model.point_accuracy of its precision
    cost: dict | None = None  # explore.pricing.cost_of, where a GPU-hour price was given
    energy: dict | None = None  # serve.energy: tokens per joule (GPU alone, with the node's share, at TDP) and the GPU's watts
    intervals: dict | None = None  # per metric of to_dict(), its 80% and 95% intervals (Frontier.banded)
    # estimate's precision notes for it (spec.plan.precision_notes: the model's, so MXFP4's emulation), as the search
    # wrote them; None: the GPU's alone (spec.precision.executable), for a point built without its model
    notes: tuple[str, ...] | None = None

    def record(self) -> dict:
        """The deployment in plain types: everything `Deployment.from_dict` needs to rebuild it exactly
        (attention-weight precision and acceptance included), plus how the point runs it (instances of
        the plan, requests in flight per instance) and its plan's label."""
        d = self.deployment.to_dict()
        d.update(instance_gpus=d.pop("num_gpus"), replicas=self.replicas, plan=self.deployment.plan.label(),
                 concurrency_per_instance=self.concurrency)
        return d

    def to_dict(self) -> dict:
        # a format the GPU cannot run, priced as engines map it (NVFP4 as MXFP4 on CDNA4), said as estimate's precision_notes
        notes = list(executable(self.deployment.precision, self.deployment.gpu)[1] if self.notes is None else self.notes)
        return {**_metrics(self), "deployment": self.record(), "accuracy": self.accuracy,
                **({"precision_notes": notes} if notes else {}),
                **({"cost": self.cost} if self.cost is not None else {}), **({"energy": self.energy} if self.energy is not None else {}),
                **({"intervals": self.intervals} if self.intervals is not None else {})}


@dataclass(frozen=True)
class DisaggPoint:
    """One point of a disaggregated frontier: a unit of `prefill_instances` instances of `prefill` and
    `decode_instances` of `decode` (each Deployment one instance of its pool), `replicas` units, with
    `concurrency` requests in flight per unit."""
    prefill: Deployment
    decode: Deployment
    prefill_instances: int
    decode_instances: int
    replicas: int
    concurrency: int
    tok_s_per_user: float
    output_tok_s_per_gpu: float
    ttft_s: float
    tpot_s: float
    cost: dict | None = None
    energy: dict | None = None  # serve.energy.disagg_energy: the unit's GPUs on average
    intervals: dict | None = None  # as FrontierPoint's
    accuracy: dict | None = None  # as FrontierPoint's: both pools run one precision
    notes: tuple[str, ...] | None = None  # as FrontierPoint's, the decode pool's

    def record(self) -> dict:
        """Both pools' plans and instances, the unit's GPUs, precision and draft length, in plain types."""
        pools = {}
        for name, dep, n in (("prefill", self.prefill, self.prefill_instances), ("decode", self.decode, self.decode_instances)):
            pools[name] = {"plan": dep.plan.label(), "instances": n, "gpus_each": dep.num_gpus, **dep.plan.to_dict(),
                           "max_num_tokens": dep.step_tokens,  # the step budget priced (the engine's default resolved), as Deployment.to_dict's
                           # the decode workers' capture where the search states one (explore.search.point_graphs), as FrontierPoint's
                           **({} if dep.cuda_graph_max_bs is None else {"cuda_graph_max_bs": int(dep.cuda_graph_max_bs)})}
        pre, de, p, s = pools["prefill"], pools["decode"], self.decode.precision, self.decode.spec
        return {"gpu": self.prefill.gpu.id, "backend": self.decode.backend, "instance_gpus": self.prefill_instances * self.prefill.num_gpus + self.decode_instances * self.decode.num_gpus,
                "replicas": self.replicas, "plan": f"P {pre['instances']}x {pre['plan']} + D {de['instances']}x {de['plan']}",
                "prefill": pre, "decode": de, "concurrency_per_instance": self.concurrency,
                "weight_dtype": p.weight.name, "activation_dtype": p.activation.name, "kv_dtype": p.kv.name,
                "spec": s.method if s else None, "draft_len": s.k if s else 0,
                # the acceptance it was priced at, as Deployment.to_dict records it, so export-point prices it again
                "acceptance": s.mean_accepted if s else None, "acceptance_rates": list(s.rates) if s else [],
                "draft_model": s.draft_model if s else None}

    def to_dict(self) -> dict:
        notes = list(executable(self.decode.precision, self.decode.gpu)[1] if self.notes is None else self.notes)  # both pools run one precision, as FrontierPoint's
        return {**_metrics(self), "deployment": self.record(), "accuracy": self.accuracy,
                **({"precision_notes": notes} if notes else {}),
                **({"cost": self.cost} if self.cost is not None else {}), **({"energy": self.energy} if self.energy is not None else {}),
                **({"intervals": self.intervals} if self.intervals is not None else {})}


_PLAN_FLAGS = (("tp", "--tp"), ("pp", "--pp"), ("ep", "--ep"), ("moe_tp", "--moe-tp"), ("attention_dp", "--attention-dp"), ("kvp", "--kvp"))


# what a frontier of a shape no file names (a dict, a ModelSpec built in Python) puts where the commands name the model
UNNAMED_MODEL = "<your config.json>"


def model_reference(given, spec) -> str:
    """How the commands a frontier prints name its model again (`estimate MODEL ...`, export-point): a registry name or
    Hugging Face id as given; a config.json path (or its folder) absolute, so that the command works from any folder; a
    ModelSpec given itself by its name where the registry's, else its checkpoint (hf_ids: a Hub id, a local folder); a
    shape no file names (a dict, a bare config read in Python) UNNAMED_MODEL. The name alone ('q_awq4' for
    q_awq4.json) names no model these commands find (crev10 #3)."""
    from pathlib import Path

    from llm_codesign.spec.registry import bundled

    if isinstance(given, (str, Path)) and str(given).strip():
        ref = str(given).strip()
        if bundled(ref) is None and Path(ref).expanduser().exists():
            return str(Path(ref).expanduser().resolve())
        return ref
    if getattr(spec, "name", None) and bundled(spec.name) == spec:
        return spec.name
    hf = getattr(spec, "hf_ids", ()) or ()
    if hf and (not Path(hf[0]).is_absolute() or Path(hf[0]).exists()):  # a Hub id, or the local folder it was read from
        return hf[0]
    return UNNAMED_MODEL


def estimate_command(model: str, rec: dict, *, isl: int, osl: int, prefix_hit: float = 0.0, arrival: str | None = None,
                     calibration: object = None) -> str:
    """The `estimate` command line that prices an aggregated frontier point again from its record (FrontierPoint.record:
    plan, precisions, engine, step budget, CUDA-graph capture, speculation, requests per instance, replicas): a point
    pasted into estimate without its capture priced TRT-LLM's default one (1-32, 64, 128), TPOT 29.8 against the point's
    19.6 ms (newc6 #4). `pareto --json` gives it each point, `export-point` prints it."""
    import shlex

    words = ["llm-codesign", "estimate", model, "--gpu", rec["gpu"], "--gpus", str(rec["instance_gpus"])]
    moe = rec.get("ep", 1) != 1 or rec.get("moe_tp", 1) != 1
    words += [w for key, flag in _PLAN_FLAGS if key in ("tp", "pp") or rec.get(key, 1) != 1 or (moe and key in ("ep", "moe_tp"))
              for w in (flag, str(rec[key]))]
    words += ["--weight-dtype", rec["weight_dtype"], "--activation-dtype", rec["activation_dtype"], "--kv-dtype", rec["kv_dtype"],
              "--backend", rec["backend"], "--max-num-tokens", str(rec["max_num_tokens"])]
    words += _spec_words(rec)
    words += ["--cpp"] if rec.get("cpp") else []
    words += ["--cuda-graph-max-bs", str(rec["cuda_graph_max_bs"])] if rec.get("cuda_graph_max_bs") is not None else []
    # a vLLM point's max-num-seqs, which sizes its capture (explore.search.file_capture)
    words += ["--max-batch", str(rec["max_batch"])] if rec.get("max_batch") is not None else []
    words += ["--isl", str(isl), "--osl", str(osl), "--concurrency", str(rec["concurrency_per_instance"])]
    words += ["--replicas", str(rec["replicas"])] if rec.get("replicas", 1) > 1 else []
    words += ["--prefix-hit", f"{prefix_hit:g}"] if prefix_hit else []
    words += ["--arrival", arrival] if arrival else []
    words += ["--calibration", calibration] if isinstance(calibration, str) else []
    return shlex.join(words)


def _plan_text(pool: dict) -> str:
    """A pool's plan as `disagg --prefill/--decode` takes it (spec.plan.Plan.parse): tp and pp always, the other sizes where
    they are not 1, and a MoE plan's ep and moe_tp both (Plan.parse derives an unnamed moe_tp), as estimate_command's flags."""
    moe = pool.get("ep", 1) != 1 or pool.get("moe_tp", 1) != 1
    return ",".join(f"{key}={pool[key]}" for key, _ in _PLAN_FLAGS
                    if key in ("tp", "pp") or pool.get(key, 1) != 1 or (moe and key in ("ep", "moe_tp")))


def disagg_command(model: str, rec: dict, *, isl: int, osl: int, calibration: object = None) -> str:
    """The `disagg` command line that prices a disaggregated frontier point again from its record (DisaggPoint.record: both
    pools' plans, instances and step budgets, precision, engine, speculation, the decode workers' CUDA-graph capture and the
    unit's requests): the point pasted into `disagg` without its capture priced TRT-LLM's default one, 370 against the point's
    856 tok/s/GPU (70B FP8 on 8 H200, P TP4 + D TP4 at 78 requests, crev9 #1). The unit's replicas change no per-GPU
    figure and `disagg` prices one unit: they are left out. `pareto --disagg --json` gives it each point."""
    import shlex

    pre, de = rec["prefill"], rec["decode"]
    words = ["llm-codesign", "disagg", model, "--gpu", rec["gpu"], "--prefill", _plan_text(pre), "--decode", _plan_text(de)]
    words += ["--prefill-instances", str(pre["instances"]), "--decode-instances", str(de["instances"])]
    words += ["--weight-dtype", rec["weight_dtype"], "--activation-dtype", rec["activation_dtype"], "--kv-dtype", rec["kv_dtype"]]
    words += ["--backend", rec["backend"]] if rec.get("backend") else []
    words += ["--max-num-tokens", str(pre["max_num_tokens"])] if pre.get("max_num_tokens") is not None else []
    if de.get("max_num_tokens") is not None and de.get("max_num_tokens") != pre.get("max_num_tokens"):
        words += ["--decode-max-num-tokens", str(de["max_num_tokens"])]
    words += _spec_words(rec)
    words += ["--decode-cuda-graph-max-bs", str(de["cuda_graph_max_bs"])] if de.get("cuda_graph_max_bs") is not None else []
    words += ["--isl", str(isl), "--osl", str(osl), "--concurrency", str(rec["concurrency_per_instance"])]
    words += ["--calibration", calibration] if isinstance(calibration, str) else []
    return shlex.join(words)


def _spec_words(rec: dict) -> list[str]:
    """A record's speculation as estimate's and disagg's flags: method, draft length, the acceptance it was priced at."""
    if not rec.get("spec"):
        return []
    words = ["--spec", rec["spec"], "--draft-len", str(rec["draft_len"])]
    words += (["--acceptance-rates", ",".join(f"{x:g}" for x in rec["acceptance_rates"])] if rec.get("acceptance_rates")
              else ["--acceptance", f"{rec['acceptance']:g}"] if rec.get("acceptance") else [])
    return words + (["--draft-model", rec["draft_model"]] if rec.get("draft_model") else [])


def _flat(d: dict, prefix: str = "") -> dict:
    """A nested record as one level: a disaggregated point's `prefill` pool gives `prefill_plan`, `prefill_tp`, ..."""
    out = {}
    for k, v in d.items():
        out |= _flat(v, f"{prefix}{k}_") if isinstance(v, dict) else {prefix + k: v}
    return out


def _accuracy_columns(a: dict | None) -> dict:
    """A point's accuracy (explore.accuracy_model.point_accuracy) under the frontier CSV's names (`accuracy_source`,
    `accuracy_drop_pct`, `accuracy`: its words), the rest as `accuracy_*`; a point without one says none."""
    a = a or {}
    rest = {k: v for k, v in a.items() if k not in ("source", "relative_drop_pct", "short")}
    return {"accuracy_source": a.get("source", "none"), "accuracy_drop_pct": a.get("relative_drop_pct"),
            "accuracy": a.get("short", "none")} | _flat(rest, "accuracy_")


def point_row(d: dict) -> dict:
    """A point's `to_dict()` as one row of plain values: its nested records flattened, its intervals as columns
    (serve.metrics.interval_columns; a pandas cell held the dict before). The frontier CSV is these rows' FIELDS
    (render.report.frontier_rows), under the same names."""
    row = {k: v for k, v in d.items() if not isinstance(v, dict)}
    row |= _flat(d.get("deployment") or {}) | _accuracy_columns(d.get("accuracy")) | _flat(d.get("energy") or {})
    return row | _flat(d.get("cost") or {}) | interval_columns(d.get("intervals"))


def _ideal(model, p, disagg: bool, isl: float, osl: float = 0.0, *, prefix_hit: float = 0.0) -> dict:
    """measure.intervals.ideal of a point: one instance at its concurrency (a frontier's points fit), its prompts'
    `prefix_hit` share cached, or a disaggregated unit's decode instances sharing its requests over the unit's GPUs."""
    from llm_codesign.measure import intervals as iv

    dep = p.decode if disagg else p.deployment
    acc = 1.0 if dep.spec is None else float(dep.spec.accepted())
    if not disagg:
        return iv.ideal(model, dep, p.concurrency, isl=isl, osl=osl, accepted=acc, prefix_hit=prefix_hit)
    gpus = p.prefill_instances * p.prefill.num_gpus + p.decode_instances * p.decode.num_gpus
    return iv.ideal(model, dep, p.concurrency / p.decode_instances, isl=isl, osl=osl, accepted=acc, gpus=gpus, streams=p.decode_instances,
                    prefill=p.prefill)


def _metrics(p) -> dict:
    return {"tok_s_per_user": p.tok_s_per_user, "output_tok_s_per_gpu": p.output_tok_s_per_gpu, "ttft_ms": p.ttft_s * 1e3,
            "tpot_ms": p.tpot_s * 1e3}


@dataclass(frozen=True)
class Frontier:
    """A search's answer: the Pareto frontier of output tok/s/GPU against tok/s/user on `num_gpus`
    GPUs, `points` sorted by tok/s/user, and the search's own figures (`evaluated` deployments, of
    which `fitting` fit, in `seconds`); `cloud` (a sample of the fitting deployments) and
    `roofline_bound` (the ideal frontier) are what a plot draws. `mode` is "disaggregated" for
    prefill/decode pools (DisaggPoint), else "aggregated" (FrontierPoint)."""
    model: str
    gpu: Gpu
    num_gpus: int
    workload: Workload
    backend: str
    points: tuple
    evaluated: int
    fitting: int
    seconds: float
    cloud: dict = field(repr=False)
    roofline_bound: dict = field(repr=False)
    mode: str = "aggregated"
    # the profile it was priced with, as lc.pareto was given it (None: the bundled one; a path, a Profile or a
    # Calibration): what lc.export_point records in the launch file's header, so that `import` prices it alike
    calibration: object = field(default=None, repr=False, compare=False)
    # the best each SLO reaches over the fitting deployments (search.reachable), for the one line when none meets them
    reachable: dict = field(default_factory=dict, repr=False, compare=False)
    # the fewest GPUs a point may take where a range was searched (`--gpus 8-16`: 8; num_gpus the most); None: every
    # point takes num_gpus
    min_gpus: int | None = None
    # the default formats left out of the search, one line each (explore.search.not_searched: an unmeasured accuracy)
    not_searched: tuple = ()
    # the shape searched (lc.export_point prices its points' files from it, not by `model`'s name, which a config.json of
    # one's own does not resolve: 'q_awq4', 'custom', crev10 #3), and how a command names it again (model_reference)
    model_spec: object = field(default=None, repr=False, compare=False)
    model_ref: str | None = field(default=None, repr=False, compare=False)

    def to_dict(self, *, plot: bool = False) -> dict:
        """What `pareto --json` prints; with `plot`, the cloud and the ideal bound as well (what the
        figure and the HTML report draw)."""
        w = self.workload
        out = {"model": self.model, "gpu": self.gpu.id}
        if self.model_ref and self.model_ref != self.model:  # the config.json path the commands name (export-point reads it)
            out["model_ref"] = self.model_ref
        if self.mode == "disaggregated":  # no prefix cache is priced there
            out |= {"mode": self.mode, **self.gpus(), "isl": w.isl, "osl": w.osl}
        else:
            out |= {**self.gpus(), "isl": w.isl, "osl": w.osl, "prefix_hit": w.prefix_hit, "arrival": w.arrival}
        from llm_codesign.spec.engines import get_engine

        # the releases whose defaults the points price (Engine.release), as estimate's answer says them
        out |= {"backend": self.backend, "engine_release": get_engine(self.backend).release, "evaluated": self.evaluated, "fitting": self.fitting, "seconds": self.seconds,
                "frontier": [self._point_dict(p, i) for i, p in enumerate(self.points)]}
        if self.fitting and not self.points and self.reachable:  # the SLOs filtered every fitting deployment: how near they came
            out["reachable"] = self.reachable
        if self.not_searched:
            out["not_searched"] = list(self.not_searched)
        out |= self.profile()  # last, where `pareto --json` put it before the Frontier kept it
        return (out | {"cloud": self.cloud, "roofline_bound": self.roofline_bound}) if plot else out

    def _point_dict(self, p, index: int) -> dict:
        """A point's to_dict with the command that prices it again (an aggregated one's estimate_command, a disaggregated
        one's disagg_command), its series and its `index` in it, as export-point (--series, --index) and lc.export_point
        take them: a pareto --disagg --json lists both series in one list, and its point 55 was `--series disagg --index 7`,
        which nothing in it said (crev11 #9)."""
        d = p.to_dict()
        w = self.workload
        ref = self.model_ref or self.model
        if self.mode == "disaggregated":
            return d | {"disagg_command": disagg_command(ref, d["deployment"], isl=w.isl, osl=w.osl, calibration=self.calibration),
                        "series": "disagg", "index": index}
        return d | {"estimate_command": estimate_command(ref, d["deployment"], isl=w.isl, osl=w.osl, prefix_hit=w.prefix_hit,
                                                          arrival=w.arrival if w.arrival != DEFAULT_ARRIVAL else None, calibration=self.calibration),
                    "series": "aggregated", "index": index}

    def gpus(self) -> dict:
        """The GPUs searched: `max_gpus` the most a point takes, `min_gpus` the fewest where a range was searched (each
        point's own: instance_gpus x replicas); `num_gpus` = max_gpus, the name the page and older scripts read."""
        return {"num_gpus": self.num_gpus, "max_gpus": self.num_gpus, **({"min_gpus": self.min_gpus} if self.min_gpus else {})}

    def profile(self) -> dict:
        """What the answer records of the profile it was priced with (`calibration`), as export's header records it
        (explore.export.priced_with; the rule: explore.export.recorded_profile): nothing for the bundled one, `calibration`
        the path of a file, so that `export-point` writes it into the launch file and `import` prices it alike; a profile
        with no file as `calibration_unrecorded`, what it was, since no path can name it (export-point refuses it)."""
        from llm_codesign.explore.export import priced_with, recorded_profile

        path, unrecorded = recorded_profile(self.calibration, self.gpu)
        if unrecorded is not None:
            return {"calibration_unrecorded": unrecorded + (" (Profile.write(path) gives it one)" if "Profile" in unrecorded else "")}
        return priced_with(path)

    def to_records(self) -> list[dict]:
        """One flat dict of plain values per point, no pandas needed: the model, metrics (ms), its deployment's record, accuracy
        (`accuracy_*`), energy and cost, then each metric's 80% and 95% bounds (`ttft_ms_lo80` ... `tpot_ms_hi95`, the
        CSV's `_lo80`/`_hi80` and the 95% beside them) and why the bands are widened beyond the runs (`interval_widened`)."""
        return [{"model": self.model, **point_row(p.to_dict())} for p in self.points]

    def to_pandas(self):
        """`to_records()` as a DataFrame, one row per point (pandas is an optional dependency)."""
        from llm_codesign.serve.metrics import records_frame  # a None stays None, as in to_records and the JSON

        return records_frame(self.to_records())

    def banded(self, model, *, table: dict | None = None) -> "Frontier":
        """Every point with its metrics' 80% and 95% intervals (measure.intervals: `table`, the bundled one
        by default), computed once per point after the search: points sharing a slice in one pass."""
        from llm_codesign.measure import intervals as iv

        w, disagg = self.workload, self.mode == "disaggregated"
        contexts: dict = {}  # one Context per precision, speculation and load band
        rows = []
        for p in self.points:
            dep = p.decode if disagg else p.deployment
            # (and the side of AITER's MoE switch its steps fall on: intervals.context's format follows it)
            key = (dep.precision, dep.spec is not None, iv.load_of(p.concurrency), p.concurrency is None or p.concurrency >= AITER_SWIGLU_BOUND)
            if key not in contexts:
                contexts[key] = iv.context(model, self.gpu, dep.precision, engine=self.backend, concurrency=p.concurrency, isl=w.isl,
                                           osl=w.osl, spec=dep.spec is not None, disaggregated=disagg, arrival=w.arrival,
                                           prefix_hit=w.prefix_hit)
            # the point's own concurrency where it lies beyond the runs' (its band widens, naming it), and its fitted
            # attention-DP hold where priced (the reason of its own: intervals.ADP_WAIT; an aggregated step's, not a
            # disaggregated decode pool's, whose TTFT serve.disagg prices without it)
            rows.append(replace(contexts[key], concurrency=None if p.concurrency is None else float(p.concurrency),
                                adp_hold=not disagg and iv.adp_holds(ENGINES.get(self.backend), np.max(dep.plan.adp), p.concurrency)))
        # held within what each point's GPUs allow at its batch, as estimate's (api.estimate, intervals.ideal)
        banded = iv.banded_rows([_metrics(p) for p in self.points], rows,
                                [_ideal(model, p, disagg, w.isl, w.osl, prefix_hit=w.prefix_hit) for p in self.points], table=table)
        out = [replace(p, intervals=b) for p, b in zip(self.points, banded, strict=True)]
        return replace(self, points=tuple(out))

    def priced(self, price: str | float | None) -> "Frontier":
        """Every point with its cost at a GPU-hour `price` (explore.pricing.cost_of); unchanged without one."""
        if price is None:
            return self
        from llm_codesign.explore.pricing import cost_of

        w = self.workload
        return replace(self, points=tuple(replace(p, cost=cost_of(self.gpu, price, p.output_tok_s_per_gpu, w.isl, w.osl))
                                          for p in self.points))

