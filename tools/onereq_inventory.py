"""The one-request DeepSeek-R1 iteration, kernel by kernel (issue 39 mechanism 4; docs/modelling-notes.md#onestep-inventory):
for each published one-request row (data/measurements/published_runs.csv, published_mtp_depth.csv) the target's verify step
at 1 + k tokens and the MTP draft passes, per operator: its time per layer, the layers that run it, its launches and its
step total, as `serve.aggregated.decode_step` prices it under the bundled profile. Reading only: nothing is fitted here.

    PYTHONPATH=src python tools/onereq_inventory.py [SOURCE_SUBSTRING ...]
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from llm_codesign.cost.ops import Batch, forward_ops, launches, mtp_module_ops, spec_worker_ops
from llm_codesign.measure.validate import _grouped, row_problem
from llm_codesign.serve.aggregated import decode_step, draft_model, kernels_time, pdl_per_launch
from llm_codesign.spec.plan import Plan

MEAS = Path(__file__).resolve().parents[1] / "src/llm_codesign/data/measurements"


def _rows(keys):
    import csv
    rows = []
    for f in ("published_runs.csv", "published_mtp_depth.csv"):
        with open(MEAS / f) as fh:
            rows += [r for r in csv.DictReader(fh) if r["concurrency"] == "1" and r["model"].lower().find("deepseek") >= 0]
    return [r for r in rows if not keys or any(k in r["source"] for k in keys)]


def _table(ops, per):
    print(f"  {'operator':44s} {'kind':11s} {'us/layer':>9s} {'layers':>6s} {'launch':>6s} {'us/step':>9s}")
    tot = 0.0
    for op in ops:
        t = float(np.sum(op.time * op.count))
        if t <= 0:
            continue
        n = float(np.sum(op.count * op.kernels))
        tot += t
        print(f"  {op.name:44s} {op.kind:11s} {float(np.sum(op.time)) * 1e6:9.2f} {float(np.sum(op.count)):6.0f} {n:6.0f} {t * 1e6:9.1f}")
    n = float(np.sum(launches(ops)))
    print(f"  {'sum':44s} {'':11s} {'':9s} {'':6s} {n:6.0f} {tot * 1e6:9.1f}  (PDL credit {per * 1e6:.3f} us x {n:.0f} launches = {per * n * 1e6:.1f} us)")


def main(keys) -> None:
    rows = _rows(keys)
    groups, unmodeled = _grouped(rows, None, None, row_problem)
    for (model, gpu, prec, engine, spec, cal), idx in groups:
        for i in idx:
            r = rows[i]
            costs = engine.costs(cal)
            plan = Plan(*(np.array([int(r[c])]) for c in ("tp", "pp", "ep", "moe_tp", "attention_dp")), np.array([1]))
            k = float(r["spec_draft_len"] or 0)
            ctx = np.array([int(r["isl"]) + int(r["osl"]) / 2.0])  # the mean context over the decode
            t_stage, t_draft, ops = decode_step(model, gpu, prec, plan, costs=costs, b=np.array([1.0]), ctx=ctx, k=np.array([k]), spec=spec)
            per = pdl_per_launch(gpu, costs)
            print(f"\n== {r['source']}: {gpu.name} {prec} plan TP{r['tp']} EP{r['ep']} MoE-TP{r['moe_tp']}, k={k:.0f}, ctx {ctx[0]:.0f}, "
                  f"engine {engine.name} fusions {sorted(engine.fusions)}")
            print(f"  step {float(np.sum(t_stage)) * 1e3:.3f} ms = kernels {float(np.sum(kernels_time(ops, gpu, costs))) * 1e3:.3f} + "
                  f"host {costs.step_overhead * 1e3:.3f} + seq {costs.seq_overhead * 1e3:.3f} + draft {float(np.sum(t_draft)) * 1e3:.3f}")
            print("  target verify step:")
            _table(ops, per)
            if spec is not None and k > 0:
                dm = draft_model(model, spec)
                dprec = spec.draft_precision(prec)
                print(f"  one draft pass (1 token; x{k - 1:.0f} after the first), draft precision {dprec}:")
                dops = forward_ops(dm, gpu, costs.cal, dprec, plan, b=Batch(dec_seqs=np.array([1.0]), dec_ctx=ctx), engine=costs.engine)
                dops += mtp_module_ops(dm, gpu, costs.cal, plan, tokens=np.array([1.0]), seqs=np.array([1.0]), engine=costs.engine)
                _table(dops, per)
                for op in spec_worker_ops(gpu, costs.cal, plan, engine=costs.engine, method=spec.method, k=k):
                    n = float(np.sum(op.kernels))
                    print(f"  the speculative worker's own kernels ({op.name}, Engine.spec_worker_kernels; none PDL-launched): {n:.0f} x "
                          f"{costs.cal.kernel_overhead_s * 1e6:.2f} us = {float(np.sum(op.total_time)) * 1e6:.1f} us a step")
    for u in unmodeled:
        print("unmodelled", u)


if __name__ == "__main__":
    main(sys.argv[1:])
