"""TTFT non-decreasing in concurrency over a sweep (docs/modelling-notes.md#mono2-idle-cohort).

Run: python benchmarks/ttft_monotone_sweep.py [engines, comma-separated] [arrival]   (no GPU; ~10 s an engine)
"""
# TTFT non-decreasing in concurrency: the fixmono "wider sweep" domain (MoE x B200/GB200/H100 x plans x engines x lengths)
import sys, numpy as np, warnings
warnings.filterwarnings("ignore")
from llm_codesign.cost.calibration import calibration_for
from llm_codesign.serve.aggregated import Serving, evaluate
from llm_codesign.spec.engines import get_engine
from llm_codesign.spec.hardware import get_gpu
from llm_codesign.spec.plan import Plan
from llm_codesign.spec.registry import get_model
models = ["qwen3-30b-a3b", "qwen3-235b-a22b", "qwen3-235b-a22b-nvfp4", "minimax-m2.5", "deepseek-r1", "deepseek-r1-nvfp4",
          "gpt-oss-120b", "gpt-oss-20b", "mixtral-8x7b"]
plans = {"TP8": (8,1,1,8,1,1), "TP8EP8": (8,1,8,1,1,1), "ADP8EP8": (1,1,8,1,8,1), "TP4EP4": (4,1,4,1,1,1), "TP2": (2,1,1,2,1,1)}
engines = sys.argv[1].split(",") if len(sys.argv) > 1 else ["sglang", "trtllm", "vllm"]
arrival = sys.argv[2] if len(sys.argv) > 2 else "waves"
C = np.array([1., 2, 3, 4, 6, 8, 12, 16, 32, 64, 128, 256, 512, 1024])
viol = cases = skipped = 0; out = []
for mn in models:
    m = get_model(mn)
    for gn in ("b200", "gb200", "h100"):
        g = get_gpu(gn); cal = calibration_for(g)
        for pn, pv in plans.items():
            plan = Plan(*(np.array([v]) for v in pv))
            for en in engines:
                for isl, osl in ((1024., 1024.), (8192., 1024.), (1024., 8192.)):
                    try:
                        r = evaluate(m, Serving(gpu=g, prec=m.default_precision, plan=plan, engine=get_engine(en)), cal=cal,
                                     concurrency=C, isl=isl, osl=osl, arrival=arrival)
                    except Exception:  # a plan the model refuses for this model / GPU (heads, experts, memory): counted
                        skipped += 1
                        continue
                    fits = np.broadcast_to(np.asarray(r["fits"], bool), C.shape); t = np.broadcast_to(r["ttft_s"], C.shape)
                    if not fits[0]: continue
                    cases += 1
                    ok = fits[1:] & fits[:-1]
                    bad = np.nonzero(ok & (np.diff(t) < -1e-9 * t[:-1]))[0]
                    if len(bad):
                        viol += 1
                        j = bad[0]; out.append(f"{mn} {gn} {pn} {en} {int(isl)}/{int(osl)} C {int(C[j])}->{int(C[j+1])}: {t[j]*1e3:.1f} -> {t[j+1]*1e3:.1f} ms")
print(f"{arrival} {engines}: {cases} cases, {viol} with TTFT falling ({skipped} combinations refused)")
print("\n".join(out[:40]))
