"""TTFT non-decreasing in concurrency over a sweep (docs/modelling-notes.md#mono2-idle-cohort).

Run: python benchmarks/ttft_monotone_sweep.py [engines, comma-separated] [arrival]   (no GPU; ~10 s an engine)

The domain of fixmono's wider sweep (docs/modelling-notes.md#fixmono-tile-window), bundled profile: 9 MoE models x
B200 / GB200 / H100 x 5 plans x 3 ISL/OSL x 14 loads from 1 to 1,024 requests; a case is one (model, GPU, plan, engine,
lengths) whose one-request point fits; it falls where TTFT drops between two loads that both fit. A combination the
model refuses (errors.InputError: a plan this model or GPU cannot run) is counted as refused; any other exception is a
failure of the cost model, counted and named, and the run exits 1.
"""
from __future__ import annotations

import sys
import warnings

import numpy as np

from llm_codesign.cost.calibration import calibration_for
from llm_codesign.errors import InputError
from llm_codesign.serve.aggregated import Serving, evaluate
from llm_codesign.spec.engines import get_engine
from llm_codesign.spec.hardware import get_gpu
from llm_codesign.spec.plan import Plan
from llm_codesign.spec.registry import get_model

MODELS = ("qwen3-30b-a3b", "qwen3-235b-a22b", "qwen3-235b-a22b-nvfp4", "minimax-m2.5", "deepseek-r1", "deepseek-r1-nvfp4",
          "gpt-oss-120b", "gpt-oss-20b", "mixtral-8x7b")
PLANS = {"TP8": (8, 1, 1, 8, 1, 1), "TP8EP8": (8, 1, 8, 1, 1, 1), "ADP8EP8": (1, 1, 8, 1, 8, 1), "TP4EP4": (4, 1, 4, 1, 1, 1),
         "TP2": (2, 1, 1, 2, 1, 1)}  # Plan's (tp, pp, ep, moe_tp, adp, kvp)
LENGTHS = ((1024.0, 1024.0), (8192.0, 1024.0), (1024.0, 8192.0))
C = np.array([1.0, 2, 3, 4, 6, 8, 12, 16, 32, 64, 128, 256, 512, 1024])


def sweep(engines, arrival):
    """(cases, falls, refused, failures): failures name the combination and the exception that was not an InputError."""
    cases, falls, refused, failures = 0, [], 0, []
    for mn in MODELS:
        m = get_model(mn)
        for gn in ("b200", "gb200", "h100"):
            g = get_gpu(gn)
            cal = calibration_for(g)
            for pn, pv in PLANS.items():
                plan = Plan(*(np.array([v]) for v in pv))
                for en in engines:
                    for isl, osl in LENGTHS:
                        try:
                            r = evaluate(m, Serving(gpu=g, prec=m.default_precision, plan=plan, engine=get_engine(en)), cal=cal,
                                         concurrency=C, isl=isl, osl=osl, arrival=arrival)
                        except InputError:  # a plan the model refuses for this model and GPU: counted, not priced
                            refused += 1
                            continue
                        except Exception as e:  # anything else is a bug, not a refusal: counted apart and reported
                            failures.append(f"{mn} {gn} {pn} {en} {int(isl)}/{int(osl)}: {type(e).__name__}: {e}")
                            continue
                        fits = np.broadcast_to(np.asarray(r["fits"], bool), C.shape)
                        t = np.broadcast_to(r["ttft_s"], C.shape)
                        if not fits[0]:
                            continue
                        cases += 1
                        bad = np.nonzero(fits[1:] & fits[:-1] & (np.diff(t) < -1e-9 * t[:-1]))[0]
                        if len(bad):
                            j = bad[0]
                            falls.append(f"{mn} {gn} {pn} {en} {int(isl)}/{int(osl)} C {int(C[j])}->{int(C[j + 1])}: "
                                         f"{t[j] * 1e3:.1f} -> {t[j + 1] * 1e3:.1f} ms")
    return cases, falls, refused, failures


if __name__ == "__main__":
    warnings.filterwarnings("ignore")
    engines = sys.argv[1].split(",") if len(sys.argv) > 1 else ["sglang", "trtllm", "vllm"]
    arrival = sys.argv[2] if len(sys.argv) > 2 else "waves"
    cases, falls, refused, failures = sweep(engines, arrival)
    print(f"{arrival} {engines}: {cases} cases, {len(falls)} with TTFT falling ({refused} combinations refused, "
          f"{len(failures)} failed)")
    print("\n".join(falls[:40]))
    if failures:
        print("failed (not refusals):\n" + "\n".join(failures[:40]), file=sys.stderr)
        sys.exit(1)
