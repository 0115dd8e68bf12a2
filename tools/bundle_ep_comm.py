"""Copy the H100 expert-parallel all-to-all timings into the package (data/measurements/kernels_hopper/ep_comm.csv.gz).

Source: the project's validation data, shared/data/validation/kernels_hopper/comm.csv.gz beside the repository
(aiconfigurator-core 0.12.0, H100 SXM; its README gives the provenance): the MoE dispatch and combine rows of SGLang
0.5.12's DeepEP tables (wideep_deepep_normal_perf, wideep_deepep_ll_perf), TensorRT-LLM 1.3.0rc11's and vLLM 0.24.0's
moe_a2a_perf. Every such row is kept, one output row per phase, in one set of columns (the source's three tables
name them differently):

- `mode`: normal (DeepEP's high-throughput kernels: SGLang's op_name normal, moe_a2a's *_ht), low_latency (op_name ll,
  *_ll) or v2 (vLLM's deepep_v2_*); `phase`: dispatch or combine; `comm_backend`: the source's (deepep_ll / deepep_ht for SGLang);
- `ep_size`: the source's; 8 for SGLang's rows (their collector runs on every GPU of one node, node_num 1: ai-dynamo/
  aiconfigurator collector/wideep/sglang/collect_deepep_normal.py:4-11@095f58a);
- `num_tokens`, `topk`: tokens per rank and experts per token (SGLang's num_token, num_topk);
- `sms`: SMs given to the kernels (SGLang's dispatch_sms / combine_sms, equal on every row; 0: the backend's default);
- `comm_dtype`: the source's (empty for SGLang's, which do not record it);
- `latency_ms`: the phase's time: SGLang normal (dispatch|combine)_transmit_us + _notify_us, SGLang low-latency
  (dispatch|combine)_avg_t_us, moe_a2a transmit_us + notify_us (its latency_ms), in milliseconds.

A first column `system` = h100_sxm. Written with gzip level 9 and no timestamp, so a re-run is byte for byte the same.

    python tools/bundle_ep_comm.py --src <shared>/data/validation/kernels_hopper
"""
from __future__ import annotations

import argparse
import csv
import gzip
import io
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "src" / "llm_codesign" / "data" / "measurements" / "kernels_hopper" / "ep_comm.csv.gz"
COLUMNS = ["system", "framework", "version", "kernel_source", "source_table", "comm_backend", "mode", "phase", "comm_dtype", "ep_size",
           "hidden_size", "topk", "num_experts", "num_tokens", "sms", "latency_ms"]
MODES = {"deepep_ht": "normal", "trtllm_deepep_ht": "normal", "deepep_ll": "low_latency", "trtllm_deepep_ll": "low_latency",
         "deepep_v2_context": "v2", "deepep_v2_generation": "v2"}


def _num(v: str) -> str:
    return str(int(float(v)))


def rows_of(r: dict) -> list[dict]:
    """The output rows of one comm.csv.gz row ([] for the rows of other collectives)."""
    if r["source_table"] not in ("moe_a2a_perf", "wideep_deepep_normal_perf", "wideep_deepep_ll_perf"):
        return []
    common = {"system": "h100_sxm", **{c: r[c] for c in ("framework", "version", "kernel_source", "source_table")},
              "hidden_size": _num(r["hidden_size"]), "num_experts": _num(r["num_experts"])}
    if r["source_table"] == "moe_a2a_perf":
        return [{**common, "comm_backend": r["comm_backend"], "mode": MODES[r["comm_backend"]], "phase": r["phase"],
                 "comm_dtype": r["comm_dtype"], "ep_size": _num(r["ep_size"]), "topk": _num(r["topk"]),
                 "num_tokens": _num(r["num_tokens"]), "sms": _num(r["sms"]), "latency_ms": r["latency_ms"]}]
    assert r["node_num"] in ("1", "1.0")
    ll = r["source_table"] == "wideep_deepep_ll_perf"
    out = []
    for phase in ("dispatch", "combine"):
        if ll:
            us, sms = float(r[f"{phase}_avg_t_us"]), "0"
        else:
            us, sms = float(r[f"{phase}_transmit_us"]) + float(r[f"{phase}_notify_us"]), _num(r[f"{phase}_sms"])
        out.append({**common, "comm_backend": "deepep_ll" if ll else "deepep_ht", "mode": "low_latency" if ll else "normal",
                    "phase": phase, "comm_dtype": "", "ep_size": "8", "topk": _num(r["num_topk"]), "num_tokens": _num(r["num_token"]),
                    "sms": sms, "latency_ms": repr(us / 1e3)})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--src", required=True, help="the folder holding the source comm.csv.gz")
    src = Path(ap.parse_args().src)
    with gzip.open(src / "comm.csv.gz", "rt", newline="") as f:
        rows = [o for r in csv.DictReader(f) for o in rows_of(r)]
    buf = io.StringIO()
    w = csv.DictWriter(buf, COLUMNS, lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    with OUT.open("wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=9, mtime=0, filename="") as gz:
        gz.write(buf.getvalue().encode())
    print(f"{OUT.name}: {len(rows)} rows, {OUT.stat().st_size / 1e6:.2f} MB")


if __name__ == "__main__":
    main()
