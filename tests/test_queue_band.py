"""An estimate whose requests wait for a slot (a batch cap below the load: Estimate.queue) quotes a TTFT that is mostly
queue; its interval covers the TTFT as quoted, the queue at TPOT's spread (measure.intervals.with_queue), alike in the
CLI's text, --json, lc.estimate and the page (uxleft2; newc7 #7 left the band scaling the whole TTFT by the spread of
TTFT runs none of which queued)."""
import json

import pytest
from conftest import cli

import llm_codesign as lc
from llm_codesign.measure import intervals


def test_with_queue_adds_the_queue_at_the_spread_of_its_cohorts():
    own = {"lo80": 200.0, "hi80": 800.0, "lo95": 100.0, "hi95": 1600.0, "centre": 400.0, "n": 10, "source": "10 runs",
           "widened": ["a"], "capped": 100.0, "span95": 16.0, "predictable": True}
    tpot = {"lo80": 8.0, "hi80": 12.0, "lo95": 6.0, "hi95": 18.0, "centre": 10.0, "n": 20, "source": "20 runs", "widened": ["a", "b"]}
    b = intervals.with_queue(own, 400.0, 3000.0, tpot, 10.0)
    # each bound: own + queue x TPOT's ratio: 200 + 3000 x 8/10 = 2600, 800 + 3000 x 12/10 = 4400, 100 + 3000 x 0.6 = 1900,
    # 1600 + 3000 x 1.8 = 7000; centre 400 + 3000 = 3400; span95 7000 / 1900 = 3.68
    assert [b[k] for k in ("lo80", "hi80", "lo95", "hi95", "centre")] == pytest.approx([2600, 4400, 1900, 7000, 3400])
    assert b["span95"] == pytest.approx(7000 / 1900) and b["predictable"] and b["queue_ms"] == 3000.0 and "capped" not in b
    assert b["widened"] == ["a", "b"] and b["n"] == 10
    assert b["source"] == "10 runs, for the TTFT once a request runs; its queue at TPOT's spread (its basis)"
    # no TPOT band (one output token: a cohort is its prefill): the queue at TTFT's own ratios, 200 + 3000 x 200/400 = 1700
    one = intervals.with_queue(own, 400.0, 3000.0)
    assert (one["lo80"], one["hi80"]) == pytest.approx((1700, 6800)) and one["source"].endswith("queue at the same spread")


def test_a_queued_estimates_ttft_band_covers_the_queue_everywhere():
    # Llama-3.1-70B TP8 on 8 H200s, 64 requests on 16 slots: 48 wait, three cohorts of the running batch
    dep = lc.deployment("llama-3.1-70b", gpu="h200", num_gpus=8, tp=8, max_batch=16)
    w = lc.Workload(isl=1024, osl=1024, concurrency=64)
    r = lc.estimate("llama-3.1-70b", dep, w)
    q, ttft, tpot = r.queue["ttft_ms"], r.ttft_s * 1e3, r.tpot_s * 1e3
    b, t = r.intervals["ttft_ms"], r.intervals["tpot_ms"]
    assert r.queued == 48 and r.queue["cohorts"] == 3 and q > 0.9 * ttft
    assert b["queue_ms"] == q and b["lo80"] <= ttft <= b["hi80"] and b["lo95"] <= b["lo80"] and b["hi80"] <= b["hi95"]
    # the band of the TTFT once a request runs (the runs' band at the 16 that run), plus the queue at TPOT's ratio: the
    # upper bounds add exactly (a TTFT floor raises only lower bounds: intervals.capped)
    ctx = intervals.context(lc.get_model("llama-3.1-70b"), dep.gpu, dep.precision, engine="trtllm", concurrency=16, isl=1024,
                            osl=1024, spec=False, arrival=w.arrival)
    own = intervals.band("ttft_ms", ttft - q, ctx, table=intervals.table_for(None, gpu=dep.gpu))
    for k in ("hi80", "hi95"):
        assert b[k] == pytest.approx(own[k] + q * t[k] / tpot, rel=1e-9)
    # the whole TTFT scaled by the TTFT runs' spread was 3.7x wide at 80%; with the queue at TPOT's spread it is far narrower
    assert b["hi80"] / b["lo80"] < t["hi80"] / t["lo80"] + 0.5
    # --json carries the same band, and the CLI's row says the bands include the queue
    code, out, _ = cli("estimate", "llama-3.1-70b", "--gpu", "h200", "--gpus", "8", "--tp", "8", "--concurrency", "64", "--max-batch", "16", "--json")
    j = json.loads(out)["intervals"]["ttft_ms"]
    nums = ("lo80", "hi80", "lo95", "hi95", "centre", "queue_ms", "span95")
    assert code == 0 and [j[k] for k in nums] == pytest.approx([b[k] for k in nums]) and j["source"] == b["source"]
    code, out, _ = cli("estimate", "llama-3.1-70b", "--gpu", "h200", "--gpus", "8", "--tp", "8", "--concurrency", "64", "--max-batch", "16")
    text = " ".join(out.split())
    assert code == 0 and "cohorts of 9888.9 ms, which the bands include); 80%: " in text.replace("│ │ ", "")
    # where every request runs at once the band is the runs' own, no queue in it
    r16 = lc.estimate("llama-3.1-70b", dep, lc.Workload(isl=1024, osl=1024, concurrency=16))
    assert r16.queue is None and "queue_ms" not in r16.intervals["ttft_ms"]
