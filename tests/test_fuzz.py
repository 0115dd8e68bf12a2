"""A seeded fuzzer of the command line's edges: bad input gets one clear line, nothing half-written.

Each case runs one command in-process (Typer's CliRunner over `llm_codesign.cli.app`) with options
drawn from valid and invalid values, or with a bundled config.json, GPU TOML, calibration profile or
measurement CSV copied and changed in one place. A case fails on an uncaught exception, traceback
text, an exit code other than 0 (success), 1 (`lint --fail-on` findings) or 2 (bad input, one
`error:` line), a numpy warning, a non-finite, negative or absurd figure in a successful run's
output, a file left behind by a failed run, a file written with a mode the umask would not give,
an announced file that does not exist, or unescaped markup in an HTML report.

LLM_CODESIGN_FUZZ_N sets the number of cases (default 300: 30-60 s on 2 cores; `.ci/run` runs
10,000), LLM_CODESIGN_FUZZ_SEED the seed. A failure lists each distinct cause once with the
command that reproduces it (the files it names are kept under pytest's tmp_path).
"""
from __future__ import annotations

import json
import math
import os
import random
import re
import shlex
import shutil
import signal
import traceback
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from typer.testing import CliRunner

import llm_codesign
from llm_codesign.cli import app

N = int(os.environ.get("LLM_CODESIGN_FUZZ_N", "300"))
SEED = int(os.environ.get("LLM_CODESIGN_FUZZ_SEED", "21"))
DATA = Path(llm_codesign.__file__).parent / "data"
# LLM_CODESIGN_FUZZ_AS_MAIN=1: judge InputError/OSError escaping the app as `main()` renders them
# (exit 2, one line), to measure the rest; the default holds the app itself to the rules
AS_MAIN = ()
if os.environ.get("LLM_CODESIGN_FUZZ_AS_MAIN"):
    from llm_codesign.errors import InputError

    AS_MAIN = (InputError, OSError)
# LLM_CODESIGN_FUZZ_CASE_S: a case running longer is stopped and reported as unbounded work (a guard
# for measuring code that lacks the size bounds; off by default: tests assert no wall-clock times)
CASE_S = int(os.environ.get("LLM_CODESIGN_FUZZ_CASE_S", "0"))
UMASK = os.umask(0)
os.umask(UMASK)

MODELS = ["llama-3.1-8b", "qwen3-8b", "qwen3-0.6b", "qwen3-30b-a3b", "deepseek-r1", "gpt-oss-20b", "qwen3.5-397b", "nemotron-h-56b",
          "nemotron-super-49b", "llama-4-scout", "gemma-4-26b-a4b", "mixtral-8x7b", "Qwen/Qwen3-8B", "deepseek-v3.2"]
GPUS = ["h100", "H100", "b200", "h200", "mi300x", "l40s", "gb200", "h100_sxm", "a100", "b300"]
DTYPES = ["bf16", "fp8", "fp8_block", "nvfp4", "mxfp4", "int4"]
BAD_INT = ["0", "-1", "-8", "abc", "", "1.5", "nan", "inf", "1e23", "9223372036854775808", "99999999999", "8,", ",", " 8"]
BAD_FLOAT = ["0", "-1", "nan", "inf", "-inf", "1e308", "1e-300", "abc", "", "1e23", "-0.5"]
BAD_STR = ["", " ", ",", "abc", "VLLM", "BF16", "none", "a,b", "tp=8,tp=4", "<b>x</b>"]
# the fields the Hugging Face normaliser reads; a mutation sets one of them (present or not)
CONFIG_FIELDS = [
    "hidden_size", "num_hidden_layers", "vocab_size", "num_attention_heads", "num_key_value_heads", "head_dim", "intermediate_size",
    "moe_intermediate_size", "num_experts_per_tok", "n_routed_experts", "num_local_experts", "num_experts", "top_k_experts",
    "moe_topk", "sliding_window", "use_sliding_window", "layer_types", "mlp_only_layers", "quantization_config", "kv_lora_rank",
    "q_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim", "first_k_dense_replace", "moe_layer_freq",
    "decoder_sparse_step", "n_shared_experts", "num_shared_experts", "shared_expert_intermediate_size", "tie_word_embeddings",
    "hybrid_override_pattern", "mamba_head_dim", "mamba_num_heads", "ssm_state_size", "n_groups", "conv_kernel", "chunk_size",
    "linear_num_value_heads", "linear_num_key_heads", "linear_key_head_dim", "linear_value_head_dim", "linear_conv_kernel_dim",
    "interleave_moe_layer_step", "intermediate_size_mlp", "global_head_dim", "num_global_key_value_heads", "attention_head_dim",
    "index_n_heads", "index_head_dim", "index_topk", "model_type", "text_config", "block_configs", "attn_output_gate",
    "moe_shared_expert_intermediate_size", "mamba_ssm_dtype", "torch_dtype", "mlp_hidden_act", "attention_k_eq_v",
    "enable_moe_block", "use_qk_norm", "qk_norm_type",
]
GPU_FIELDS = ["sms", "hbm_bytes", "memory_bytes", "hbm_bandwidth_bytes_per_s", "l2_bytes", "scale_up_bandwidth_bytes_per_s",
              "scale_up_domain", "scale_out_bandwidth_bytes_per_s", "tdp_w", "bf16", "fp8", "fp4", "shapes", "fp4_formats", "family",
              "id", "aliases", "name"]
GPU_VALUES = ['"lots"', "nan", "inf", "-inf", "-1", "0", "true", "[1, 2]", "1e30", "1e-30", "[]", "[[0, 0, 0]]", "[[128, 128]]",
              '[["a", 1, 1]]', "1.5", "{}", '""', "9223372036854775808"]
PROFILE_PARAMS = ["bw_eff", "gemm_eff_bf16", "gemm_eff_fp8", "attn_decode_bw_eff", "attn_prefill_eff", "gemm_overhead_bf16_s",
                  "moe_routing_alpha", "comm_bw_eff", "gemm_blend_p", "kernel_overhead_s", "moe_eff",
                  "attn_prefill_s_half", "comm_bw_half_bytes", "gemm_k_half_bf16", "gemm_max_split_k", "no_such_parameter"]
PROFILE_VALUES = ["0", "-1", "nan", "inf", "1.5", "1e30", '"abc"', "true", "[1]", "0.5", "1e-30", "2"]
SERVING_HEADER = ("source,model,gpu,num_gpus,backend,weight_dtype,kv_dtype,isl,osl,concurrency,tp,pp,ep,moe_tp,attention_dp,"
                  "spec_method,spec_draft_len,spec_acceptance,ttft_ms,tpot_ms,output_tok_s_per_gpu,output_tok_s_per_user")
SERVING_ROWS = ["a,llama-3.1-8b,h100,1,vllm,bf16,bf16,1024,1024,8,1,1,1,1,1,,,,50,8,,",
                "b,llama-3.1-70b,h200,8,trtllm,fp8,fp8,1024,1024,64,8,1,1,1,1,,,,120,14,,",
                "c,qwen3-30b-a3b,b200,2,sglang,fp8,fp8,1024,1024,16,2,1,1,2,1,,,,60,6,,",
                "d,llama-3.1-8b,h100,1,trtllm,fp8,fp8,128,128,,1,1,1,1,1,,,,,,9000,"]
KERNEL_TABLES = {
    "gemm": ("system,trtllm_version,gemm_dtype,m,n,k,latency_ms",
             ["h100_sxm,x,bfloat16,4096,4096,4096,0.2", "h100_sxm,x,fp8,16,4096,4096,0.02", "b200_sxm,x,fp8,16,7168,2048,0.01"]),
    "decode_attention": ("system,trtllm_version,batch_size,isl,step,num_heads,num_key_value_heads,head_dim,attn_dtype,kv_cache_dtype,latency_ms",
                         ["h100_sxm,x,64,1,1024,32,8,128,bfloat16,bfloat16,0.05", "h100_sxm,x,8,1,4096,32,8,128,bfloat16,fp8,0.03"]),
    "prefill_attention": ("system,trtllm_version,batch_size,isl,num_heads,num_key_value_heads,head_dim,attn_dtype,kv_cache_dtype,latency_ms",
                          ["h100_sxm,x,8,1024,32,8,128,bfloat16,bfloat16,0.5", "b200_sxm,x,1,4096,32,8,128,bfloat16,bfloat16,0.4"]),
    "collectives": ("system,nccl_version,op_name,nccl_dtype,num_gpus,message_size,latency_ms",
                    ["h100_sxm,2.2,all_reduce,half,8,1048576,0.03", "h100_sxm,2.2,all_gather,bfloat16,2,4096,0.01"]),
    "moe": ("system,trtllm_version,kernel_source,moe_dtype,num_tokens,hidden_size,inter_size,topk,num_experts,moe_tp_size,moe_ep_size,distribution,latency_ms",
            ["h100_sxm,x,k,fp8,32,4096,1536,8,128,1,1,uniform,0.1", "b200_sxm,x,k,bfloat16,128,2048,768,8,64,1,2,uniform,0.05"]),
}
CSV_VALUES = ["abc", "nan", "NaN", "0", "-1", "", "inf", "1e30", "-0.5", " ", "1.5", "h100", "9223372036854775808", "VLLM", "1e-300"]
NON_UTF8 = b"\xff\xfe\x80 not utf-8 \xc3\x28"
XSS = "<img src=x onerror=alert(1)>"
# JSON keys whose values may be negative: signed errors, gains, differences
SIGNED = re.compile(r"signed|gain|delta|diff|bias|_pe$|change|relative|log|loss|score|slope|cost_pct|vs_", re.I)


def _configs() -> dict[str, dict]:
    return {p.name: json.loads(p.read_text()) for p in sorted((DATA / "models").glob("*_config.json")) if "quant" not in p.name}


CONFIGS = _configs()
# a user's copy of each bundled GPU file, under an id of its own (one naming a bundled GPU is refused before any field)
GPU_TOMLS = {p.name: re.sub(r'(?m)^id = "(.*)"$', r'id = "my-\1"', p.read_text()) for p in sorted((DATA / "gpus").glob("*.toml"))}


@dataclass
class Case:
    args: list[str]
    what: str  # the mutation, for the failure report
    outputs: list[Path] = field(default_factory=list)
    html: bool = False


class Gen:
    """Draws one case: a command, options (mostly valid, some not), maybe a mutated input file."""

    def __init__(self, rng: random.Random, root: Path):
        self.r, self.root, self.n = rng, root, 0

    def path(self, name: str) -> Path:
        self.n += 1
        d = self.root / f"f{self.n}"
        d.mkdir(parents=True, exist_ok=True)
        return d / name

    def pick(self, valid, bad, p_bad=0.15):
        return self.r.choice(bad) if self.r.random() < p_bad else self.r.choice(valid)

    # ---- mutated input files
    def config(self) -> tuple[str, str]:
        r = self.r
        name, cfg = r.choice(list(CONFIGS.items()))
        cfg = json.loads(json.dumps(cfg))
        d = cfg["text_config"] if isinstance(cfg.get("text_config"), dict) and r.random() < 0.8 else cfg
        kind = r.random()
        if kind < 0.6:
            present = [k for k in CONFIG_FIELDS if k in d]
            key = r.choice(present if present and r.random() < 0.8 else CONFIG_FIELDS)
            v = d.get(key)
            num = isinstance(v, (int, float)) and not isinstance(v, bool)
            choices = [str(v) if v is not None else "8", math.nan, math.inf, -math.inf, (-v if num else -8), 0, True, False, [v],
                       {}, None, "abc", 10**30, 2**63, 1e308, "", (v + 0.5 if num else 127.5), (v * 1000 if num else 1000), 1, 65]
            d[key] = r.choice(choices)
            what = f"config {name}: {key} = {d[key]!r}"
        elif kind < 0.85:  # relations between fields
            H = d.get("num_attention_heads") or 32
            E = d.get("n_routed_experts") or d.get("num_local_experts") or d.get("num_experts") or 0
            opts = [("num_key_value_heads", H * 2), ("num_attention_heads", H + 1), ("hidden_size", 16), ("head_dim", 127.5),
                    ("num_key_value_heads", 3), ("num_experts_per_tok", E + 1 if E else 500), ("num_experts_per_tok", 500),
                    ("num_hidden_layers", 1), ("vocab_size", 1), ("sliding_window", -100), ("num_key_value_heads", -8),
                    ("intermediate_size", -1), ("moe_intermediate_size", -128), ("num_hidden_layers", 10**9)]
            key, val = r.choice(opts)
            d[key] = val
            what = f"config {name}: {key} = {val!r} (relation)"
        elif kind < 0.92 and isinstance(d.get("block_configs"), list):
            b = r.choice(d["block_configs"])
            part, key = r.choice([("attention", "n_heads_in_group"), ("ffn", "ffn_mult"), ("attention", "window_length")])
            b.setdefault(part, {})[key] = r.choice([0, -1, "x", math.nan, 3, None, 1e9, True])
            what = f"config {name}: block_configs[..].{part}.{key} = {b[part][key]!r}"
        else:
            key = r.choice(list(d))
            del d[key]
            what = f"config {name}: {key} removed"
        fname = XSS + ".json" if r.random() < 0.05 else "config.json"
        p = self.path(fname)
        p.write_text(json.dumps(cfg))
        return str(p), what

    def bad_model_file(self) -> tuple[str, str]:
        r = self.r
        kind = r.choice(["nonutf8", "notjson", "list", "string", "dir", "missing", "empty"])
        p = self.path("config.json")
        if kind == "nonutf8":
            p.write_bytes(b'{"hidden_size": 4096, "x": "' + NON_UTF8 + b'"}')
        elif kind == "notjson":
            p.write_text("{hidden_size: 4096,")
        elif kind == "list":
            p.write_text("[1, 2]")
        elif kind == "string":
            p.write_text('"llama"')
        elif kind == "empty":
            p.write_text("")
        elif kind == "dir":
            return str(p.parent), "model: a folder without config.json"
        else:
            return str(p.parent / "missing.json"), "model: a missing file"
        return str(p), f"model file: {kind}"

    def gpu_toml(self) -> tuple[str, str]:
        r = self.r
        name, text = r.choice(list(GPU_TOMLS.items()))
        p = self.path(name)
        kind = r.random()
        if kind < 0.8:
            key, val = r.choice(GPU_FIELDS), r.choice(GPU_VALUES)
            new, n = re.subn(rf"(?m)^{key} = .*$", f"{key} = {val}", text)
            if not n:  # a field the file lacks: add it at the top level
                new = re.sub(r"(?m)^(id = .*)$", rf"\1\n{key} = {val}", text, count=1)
            p.write_text(new)
            what = f"gpu {name}: {key} = {val}{'' if n else ' (added)'}"
        elif kind < 0.87:
            key = r.choice(GPU_FIELDS)
            p.write_text(re.sub(rf"(?m)^{key} = .*$", "", text))
            what = f"gpu {name}: {key} removed"
        elif kind < 0.94:
            p.write_bytes(text.encode()[:200] + NON_UTF8)
            what = f"gpu {name}: not UTF-8"
        else:
            p.write_text(text + "\n[[[ bad")
            what = f"gpu {name}: not TOML"
        return str(p), what

    def profile(self) -> tuple[str, str]:
        r = self.r
        p = self.path("profile.toml")
        kind = r.random()
        sec = r.choice(["default", "hopper", "blackwell", "cdna3"])
        if kind < 0.6:
            key, val = r.choice(PROFILE_PARAMS), r.choice(PROFILE_VALUES)
            p.write_text(f"[{sec}]\n{key} = {val}\n")
            what = f"profile [{sec}] {key} = {val}"
        elif kind < 0.8:
            key, val = r.choice(["step_overhead_s", "ttft_overhead_s", "seq_overhead_s", "prefill_queue_fraction"]), r.choice(PROFILE_VALUES)
            eng = r.choice(["trtllm", "vllm", "sglang", "other"])
            p.write_text(f"[{sec}.{key}]\n{eng} = {val}\n" if r.random() < 0.8 else f"[{sec}]\n{key} = {val}\n")
            what = f"profile [{sec}.{key}] {eng} = {val}"
        elif kind < 0.85:  # a value where a table belongs, or a section no GPU family has
            text = r.choice(["default = [1, 2]\n", 'hopper = "fast"\n', "[defualt]\nbw_eff = 0.5\n", "[Hopper]\nbw_eff = 0.5\n",
                             "bw_eff = 0.5\n"])
            p.write_text(text)
            what = f"profile: {text.strip()!r}"
        elif kind < 0.9:
            p.write_bytes(b"[default]\nbw_eff = 0.8 # " + NON_UTF8 + b"\n")
            what = "profile: not UTF-8"
        elif kind < 0.95:
            p.write_text("[default\nbw_eff = ")
            what = "profile: not TOML"
        elif kind < 0.97:
            return str(p.parent / "missing.toml"), "profile: missing"
        else:
            return self.not_a_file()
        return str(p), what

    def not_a_file(self) -> tuple[str, str]:
        """A path that is no regular file: a device (/dev/null: /dev/zero would fill the memory of a reader that
        reads to the end) or a folder."""
        return (os.devnull, "a device") if self.r.random() < 0.5 else (str(self.path("x").parent), "a folder")

    def csv(self, kind: str) -> tuple[str, str]:
        r = self.r
        header, rows = (SERVING_HEADER, SERVING_ROWS) if kind == "serving" else KERNEL_TABLES[kind]
        cols = header.split(",")
        rows = [x.split(",") for x in rows]
        p = self.path(f"{kind}.csv")
        m = r.random()
        if m < 0.15:
            c = r.randrange(len(cols))
            what = f"{kind} csv: column {cols[c]} removed"
            cols.pop(c)
            for x in rows:
                x.pop(c)
        elif m < 0.7:
            for _ in range(r.choice([1, 1, 1, 2, len(rows)])):
                i, c = r.randrange(len(rows)), r.randrange(len(cols))
                rows[i][c] = r.choice(CSV_VALUES)
            what = f"{kind} csv: {cols[c]} = {rows[i][c]!r}" + (" (and more)" if len(rows) > 1 else "")
            if r.random() < 0.2:  # every row's latency/metric bad: no modelable row
                c = len(cols) - 1 if kind != "serving" else cols.index(r.choice(["ttft_ms", "tpot_ms", "model", "gpu"]))
                v = r.choice(CSV_VALUES)
                for x in rows:
                    x[c] = v
                what = f"{kind} csv: every {cols[c]} = {v!r}"
        elif m < 0.78:
            rows[r.randrange(len(rows))].pop()
            what = f"{kind} csv: a short row"
        elif m < 0.85:
            p.write_bytes((header + "\n").encode() + b",".join(x.encode() for x in rows[0][:-1]) + b"," + NON_UTF8 + b"\n")
            return str(p), f"{kind} csv: not UTF-8"
        elif m < 0.9:
            rows = []
            what = f"{kind} csv: header only"
        elif m < 0.94:
            p.write_text("")
            return str(p), f"{kind} csv: empty"
        elif m < 0.97:  # a column named twice (csv.DictReader keeps the last)
            c = r.randrange(len(cols))
            cols.append(cols[c])
            for x in rows:
                x.append(r.choice(CSV_VALUES))
            what = f"{kind} csv: {cols[c]} named twice"
        else:
            what = f"{kind} csv: valid"
        p.write_text("\n".join([",".join(cols)] + [",".join(x) for x in rows]) + "\n")
        return str(p), what

    def lengths(self) -> tuple[list[str], str]:
        """mix's request lengths: --isl-dist/--osl-dist, or a --lengths CSV (mostly valid, some not)."""
        r = self.r
        if r.random() < 0.6:
            dists = ["fixed:128", "fixed:1024", "uniform:64,2048", "lognormal:median=512,sigma=0.8", "lognormal:median=2000,sigma=1"]
            bad = ["fixed:0", "fixed:-1", "uniform:5,1", "lognormal:median=1000,sigma=0", "lognormal:median=nan,sigma=1", "normal:1,2",
                   "", "fixed:1e30", "uniform:1,99999999", "lognormal:median=1e30,sigma=4"]
            return ["--isl-dist", self.pick(dists, bad), "--osl-dist", self.pick(dists, bad)], ""
        if r.random() < 0.1:
            f, what = self.not_a_file()
            return ["--lengths", f], f"lengths: {what}"
        rows = [["isl", "osl", "count"], ["128", "128", "3"], ["2048", "256", "1"], ["1000", "64", "2"]]
        if r.random() < 0.6:
            i, c = r.randrange(1, len(rows)), r.randrange(3)
            rows[i][c] = r.choice(CSV_VALUES + ["1e300", "100000000"])
            what = f"lengths csv: {rows[0][c]} = {rows[i][c]!r}"
        else:
            what = "lengths csv: valid"
        p = self.path("lengths.csv")
        p.write_text("\n".join(",".join(x) for x in rows) + "\n")
        return ["--lengths", str(p)], what

    def engine_config(self) -> tuple[str, str]:
        """An engine's configuration for `import`: a command line or a YAML with one option changed."""
        r = self.r
        size = r.choice(["1", "2", "8", "0", "-1", "nan", "abc", "", "100000", "1e9", "1.5"])
        kind = r.randrange(5)
        if kind == 0:
            text = f"vllm serve {r.choice(['meta-llama/Llama-3.1-8B', 'Qwen/Qwen3-30B-A3B', '../../etc/passwd', ''])} " + r.choice(
                [f"--tensor-parallel-size {size}", f"--max-num-seqs {size}", f"--max-num-batched-tokens {size}",
                 f"--gpu-memory-utilization {r.choice(['0.9', '0', '2', 'nan', '1e-300'])}", f"--data-parallel-size {size}",
                 "--speculative-config '{bad'", "--kv-cache-dtype bogus"])
        elif kind == 1:
            text = "python -m sglang.launch_server --model-path Qwen/Qwen3-8B " + r.choice(
                [f"--tp {size}", f"--max-running-requests {size}", f"--chunked-prefill-size {size}",
                 f"--mem-fraction-static {r.choice(['0.8', '5', '-0.5', 'nan'])}", f"--dp {size} --enable-dp-attention"])
        elif kind == 2:
            text = f"trtllm-serve meta-llama/Llama-3.1-8B --tp_size {size} --max_batch_size {size}"
        elif kind == 3:
            text = r.choice([f"tensor_parallel_size: {size or 'null'}\nmax_batch_size: 64\n", "max_batch_size: .nan\n",
                             "kv_cache_config:\n  free_gpu_memory_fraction: 2\n", "kv_cache_config: 5\n", "- 1\n- 2\n", "a: [\n",
                             "speculative_config:\n  decoding_type: MTP\n  num_nextn_predict_layers: 1000\n",
                             "max_batch_size: 99999999999999999999999999999\n"])
        else:
            return self.not_a_file() if r.random() < 0.5 else (str(self.path("missing.yaml")), "missing")
        p = self.path("engine.yaml" if kind == 3 else "cmd.sh")
        p.write_text(text)
        return str(p), f"import: {text.strip()[:80]!r}"

    # ---- option values
    def model(self) -> tuple[str, str]:
        x = self.r.random()
        if x < 0.7:
            return self.r.choice(MODELS), ""
        if x < 0.9:
            return self.config()
        if x < 0.96:
            return self.bad_model_file()
        return self.r.choice(["", " ", ".", "nope", "a,b"]), "model: bad name"

    def gpu(self, many=False) -> tuple[str, str]:
        x = self.r.random()
        if x < 0.8:
            g = self.r.choice(GPUS)
            return (g + "," + self.r.choice(GPUS) if many and self.r.random() < 0.2 else g), ""
        if x < 0.93:
            return self.gpu_toml()
        return self.r.choice(["", ",", "h100,", "nope", "missing.toml", "h100,nope"]), "gpu: bad name"

    def num(self, valid, bad=BAD_INT, p_bad=0.12):
        return str(self.pick(valid, bad, p_bad))


def _opt(args, what, flag, value, note=None):
    args += [flag, value]
    if note:
        what.append(note)


def _profile_and_json(g: Gen, args, what):
    """validate's and mix's tail: a calibration profile now and then (its flaw, if any, noted), --json mostly."""
    if g.r.random() < 0.05:
        cal, w = g.profile()
        _opt(args, what, "--calibration", cal, w)
    if g.r.random() < 0.7:
        args.append("--json")


def gen_case(g: Gen) -> Case:
    r = g.r
    cmd = r.choices(["estimate", "roofline", "lint", "pareto", "disagg", "validate", "gpus", "models", "design", "calibrate", "bench",
                     "sweep", "mix", "import"], weights=[34, 14, 12, 8, 7, 14, 2, 1, 1.2, 1.5, 1, 2, 3, 3])[0]
    what: list[str] = []
    args: list[str] = [cmd]
    case = Case(args, "")
    p = lambda x: r.random() < x  # noqa: E731
    if cmd in ("gpus", "models"):
        if p(0.8):
            args.append("--json")
    if cmd in ("estimate", "roofline", "lint", "disagg", "pareto"):
        m, w = g.model()
        args.append(m)
        what.append(w)
        gv, w = g.gpu(many=cmd == "pareto")
        _opt(args, what, "--gpu", gv, w)
        if p(0.15):
            for flag in ("--weight-dtype", "--activation-dtype", "--kv-dtype"):
                if p(0.5):
                    _opt(args, what, flag, g.pick(DTYPES, BAD_STR, 0.2))
        if p(0.08):
            cal, w = g.profile()
            _opt(args, what, "--calibration", cal, w)
    if cmd in ("estimate", "pareto", "disagg"):
        for flag, valid in (("--isl", ["128", "1024", "8192"]), ("--osl", ["128", "1024", "2048"])):
            if p(0.3):
                args += [flag, g.num(valid)]
        if p(0.2):
            args += ["--backend", g.pick(["trtllm", "vllm", "sglang", "VLLM", "SGLang"], BAD_STR)]
        if p(0.15):
            args += ["--spec", g.pick(["mtp", "eagle3", "draft", "none"], BAD_STR, 0.1)]
        if p(0.12):
            args += ["--draft-len", g.num(["1", "3", "5"])]
        if p(0.08):
            args += ["--acceptance", g.num(["1.5", "2.5", "3"], BAD_FLOAT)]
        if p(0.08):
            args += ["--acceptance-rates", g.pick(["0.8,0.6,0.5", "0.7", "0.9,0.8"], ["1.5,0.5", "nan", ",", "-0.1", "0.8,abc", ""])]
        if p(0.05):
            args += ["--draft-model", g.pick(["llama-3.1-8b", "qwen3-0.6b"], ["nope", ""])]
        if p(0.1):
            args += ["--max-num-tokens", g.num(["2048", "8192", "512"])]
        if cmd != "disagg" and p(0.08):
            args += ["--prefix-hit", g.num(["0", "0.5", "0.9"], BAD_FLOAT + ["1", "0.999999999"])]
        if cmd != "disagg" and p(0.05):
            args += ["--gpu-hour-price", g.pick(["3.5", "bundled"], BAD_FLOAT + [g.not_a_file()[0]], 0.3)]
    if cmd == "estimate":
        for flag, valid in (("--gpus", ["1", "2", "4", "8"]), ("--tp", ["1", "2", "4", "8"]), ("--pp", ["1", "2"]), ("--ep", ["1", "2", "8"]),
                            ("--moe-tp", ["1", "2"]), ("--attention-dp", ["1", "2", "8"]), ("--kvp", ["1", "2"])):
            if p(0.25 if flag in ("--gpus", "--tp") else 0.08):
                args += [flag, g.num(valid)]
        if p(0.5):
            args += ["--concurrency", g.num(["1", "8", "64", "256"], BAD_INT + ["1e23", "100000000"])]
        if p(0.05):
            args.append("--cpp")
        if p(0.1):
            args.append("--breakdown")
        if p(0.8):
            args.append("--json")
    elif cmd == "roofline":
        if p(0.4):
            args += ["--phase", g.pick(["decode", "prefill"], BAD_STR)]
        for flag, valid in (("--batch", ["1", "8", "64"]), ("--context", ["128", "1024", "32768"]), ("--tp", ["1", "2", "8"])):
            if p(0.3):
                args += [flag, g.num(valid)]
        if p(0.8):
            args.append("--json")
    elif cmd == "lint":
        if p(0.3):
            args += ["--regime", g.pick(["latency", "throughput", "long-context"], BAD_STR)]
        if p(0.2):
            args += ["--fail-on", g.pick(["warning", "error"], BAD_STR)]
        x = r.random()
        if x < 0.5:
            args.append("--json")
        elif x < 0.7:
            args += ["--format", g.pick(["json", "sarif", "table"], BAD_STR)]
    elif cmd == "pareto":
        args += ["--gpus", g.pick(["1", "2", "4", "8", "1-4", "2-8"], BAD_INT + ["8-4", "0-8", "1-", "a-b", "-", "1-100000"], 0.15)]
        if p(0.2):
            args += ["--tp", g.num(["1", "2", "4"])]
        if p(0.1):
            args += ["--min-tps-user", g.num(["10", "50"], BAD_FLOAT)]
        if p(0.1):
            args += ["--max-ttft-ms", g.num(["500", "2000"], BAD_FLOAT)]
        if p(0.05):
            args.append("--disagg")
        x = r.random()
        if x < 0.08:
            out = g.path("out")
            args += ["--out", str(out)]
            case.outputs.append(out)
            case.html = True
        elif x < 0.14:
            flag = r.choice(["--csv", "--plot", "--html"])
            ext = {"--csv": ".csv", "--plot": r.choice([".png", ".svg", ""]), "--html": ".html"}[flag]
            out = Path("/proc/fuzz" + ext) if p(0.2) else g.path("o" + ext)
            if out.parent != Path("/proc") and p(0.1):  # a link to a device: the output's rename put a file in its place
                out.symlink_to(os.devnull)
            args += [flag, str(out)]
            case.outputs.append(out)
            case.html = flag == "--html"
        elif x < 0.7:
            args.append("--json")
    elif cmd == "disagg":
        plans = ["tp=1", "tp=2", "tp=4", "tp=8", "tp=8,ep=8", "attention_dp=8,ep=8", "tp=2,pp=2"]
        bad_plans = ["tp=8,tp=4", "tp=0", "tp=-1", "tp=abc", "", ",", "tp", "xx=2", "tp=1e9", "tp=2,ep=nan"]
        args += ["--prefill", g.pick(plans, bad_plans), "--decode", g.pick(plans, bad_plans)]
        for flag in ("--prefill-instances", "--decode-instances"):
            if p(0.15):
                args += [flag, g.num(["1", "2"])]
        if p(0.4):
            args += ["--concurrency", g.pick(["1,8,32", "1", "64,128"], ["0", "-1", "", ",", "1e23", "abc", "1,,2", "100000000"])]
        if p(0.8):
            args.append("--json")
    elif cmd == "validate":
        kind = r.choice(["serving", "serving", *KERNEL_TABLES])
        f, w = g.csv(kind)
        what.append(w)
        args += ["--serving" if kind == "serving" else "--kernels", f]
        if kind == "serving" and p(0.1):
            args.append("--clean")
        if p(0.15):
            out = Path("/proc/fuzz.csv") if p(0.2) else g.path("pred.csv")
            args += ["--out", str(out)]
            case.outputs.append(out)
        _profile_and_json(g, args, what)
    elif cmd == "calibrate":
        f, w = g.csv(r.choice(list(KERNEL_TABLES)))
        what.append(w)
        out = Path("/proc/fuzz.toml") if p(0.1) else g.path("profile.toml")
        args += ["--kernels", f, "-o", str(out)]
        case.outputs.append(out)
    elif cmd == "design":
        # the shape grid costs seconds whatever the size: mostly options that must fail first
        args += ["--params", g.pick(["1e9", "3e9"], BAD_FLOAT + ["1e12"], 0.7), "--gpu", g.gpu()[0], "--gpus", g.num(["1", "2"], p_bad=0.4),
                 "--max-candidates", g.num(["5", "10"], p_bad=0.4), "--top", g.num(["1", "2"], p_bad=0.3)]
        for flag, vals in (("--budget-tol", BAD_FLOAT), ("--quality-tol", BAD_FLOAT), ("--min-tps-user", BAD_FLOAT),
                           ("--trials", BAD_INT), ("--isl", BAD_INT), ("--osl", BAD_INT)):
            if p(0.15):
                args += [flag, r.choice(vals)]
        if p(0.2):
            args += ["--search", r.choice(["nsga2", "grid", "abc", ""])]
        if p(0.3):
            args += ["--regime", g.pick(["latency", "throughput", "long-context"], BAD_STR)]
        if p(0.1):
            out = Path("/proc/fuzz.json") if p(0.5) else g.path("design.json")
            args += ["--export", str(out)]
            case.outputs.append(out)
        if p(0.5):
            args.append("--json")
    elif cmd == "bench":
        # sizes that must be refused before torch is imported or anything measured
        args += [r.choice(["gemm", "decode", "abc", ""]), "-o", str(g.path("bench.csv")), "--device", r.choice(["cpu", "cuda", "abc"])]
        args += r.choice([["--m", r.choice(["0", "-1", "abc", "", "100000", "1"])], ["--nk", r.choice(["0x0", "abc", "100000x100000", "8x"])],
                          ["--batch", r.choice(["0", "", "abc", "1000000"])], ["--tp", r.choice(["0", "-1"])], ["--repeat", "0"],
                          ["--heads", r.choice(["0", "-32"])], ["--model", r.choice(["nope", ""])]])
    elif cmd == "sweep":
        m, w = g.model()
        what.append(w)
        args += ["--models", m if p(0.7) else f"{m},{g.model()[0]}", "--gpu", g.gpu()[0], "--gpus", g.num(["1", "2"], p_bad=0.2)]
        for flag, valid in (("--isl", ["1024", "128,8192"]), ("--osl", ["256", "1024,512"])):
            if p(0.25):
                args += [flag, g.pick(valid, ["0", "", ",", "abc", "1,2,3", "1e23"])]
        if p(0.15):
            args += ["--precisions", g.pick(["fp8", "bf16,fp8", "nvfp4"], BAD_STR)]
        if p(0.15):
            args += ["--backend", g.pick(["trtllm", "vllm,sglang", "VLLM"], BAD_STR)]
        if p(0.15):
            args += ["--prefix-hit", g.num(["0.5", "0.9"], BAD_FLOAT + ["1"])]
        if p(0.1):
            args += ["--max-ttft-ms", g.num(["500", "2000"], BAD_FLOAT)]
        if p(0.1):
            args += ["--gpu-hour-price", g.pick(["3.5", "bundled"], BAD_FLOAT, 0.3)]
        out = Path("/proc/fuzz.parquet") if p(0.1) else g.path("sweep.parquet")
        args += ["--out", str(out)]
        case.outputs.append(out)
        if p(0.5):
            args.append("--json")
    elif cmd == "mix":
        m, w = g.model()
        what.append(w)
        gv, w = g.gpu()
        lens, wl = g.lengths()
        args += [m, "--gpu", gv, *lens]
        what += [w, wl]
        if p(0.3):
            args += ["--concurrency", g.num(["1", "16", "256"], BAD_INT + ["1048576"])]
        if p(0.2):
            args += ["--backend", g.pick(["trtllm", "vllm", "sglang", "atom"], BAD_STR)]
        _profile_and_json(g, args, what)
    elif cmd == "import":
        f, w = g.engine_config()
        what.append(w)
        args += [f, "--gpu", g.gpu()[0]]
        if p(0.3):
            args += ["--model", g.pick(["llama-3.1-8b", "qwen3-30b-a3b"], ["nope", ""])]
        if p(0.2):
            args += ["--concurrency", g.num(["1", "64"])]
        if p(0.7):
            args.append("--json")
    case.what = "; ".join(w for w in what if w) or "options"
    return case


# ---- judging one run

def _numbers(obj, path=""):
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _numbers(v, f"{path}.{k}" if path else str(k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _numbers(v, f"{path}[{i}]")
    elif isinstance(obj, (int, float)) and not isinstance(obj, bool):
        yield path, obj


def _absurd(key: str, v: float) -> bool:
    k = key.rsplit(".", 1)[-1].lower()
    if k.endswith("_ms"):
        return v > 1e10  # 115 days
    if k.endswith("_s") or k == "seconds":
        return v > 1e7
    if "tok_s" in k:
        return v > 1e9
    if k in ("max_batch", "concurrency", "concurrency_per_instance", "replicas"):
        return v > 1e9
    if k.endswith("_gb"):
        return v > 1e7
    return abs(v) > 1e30


def _key(k: str) -> str:
    return re.sub(r"\[\d+\]", "[]", k)


def _strict_json(text: str):
    def bad(c):
        raise ValueError(f"{c} is not JSON")
    return json.loads(text, parse_constant=bad)


def judge(case: Case, res, before: set[Path], root: Path, caught: list) -> list[str]:
    """Every rule the run breaks, one short string each (empty when it behaved)."""
    out: list[str] = []
    stdout, stderr = res.stdout, res.stderr
    code = res.exit_code
    exc = res.exception
    if exc is not None and AS_MAIN and isinstance(exc, AS_MAIN):
        # what `llm_codesign.cli:main` makes of an exception the app lets through
        code, stderr, exc = 2, stderr + f"error: {exc}\n", None
    if exc is not None and not isinstance(exc, SystemExit):
        tb = traceback.extract_tb(exc.__traceback__)
        ours = [f for f in tb if "llm_codesign" in f.filename] or tb
        loc = f"{Path(ours[-1].filename).name}:{ours[-1].lineno}" if ours else "?"
        out.append(f"uncaught {type(exc).__name__} at {loc}: {str(exc)[:160]}")
        return out
    if "Traceback" in stdout + stderr:
        out.append("traceback text in the output")
    if "internal error" in stderr:
        out.append(f"internal error: {stderr.strip()[:200]}")
    for w in caught:
        out.append(f"{w.category.__name__} reaches the user: {str(w.message)[:100]} ({Path(w.filename).name}:{w.lineno})")
    if code not in (0, 1, 2):
        out.append(f"exit code {code}")
    if code == 1 and "--fail-on" not in case.args and "internal error" not in stderr:
        out.append("exit 1 outside `lint --fail-on`")
    if code == 2:
        # progress lines of a search that ran for seconds (pareto/design every 5 s, sweep every second) are not the error,
        # nor the loader's notes on how it read the input ("note: model_type abc is not one the loader knows ..."), said first
        lines = [x for x in stderr.splitlines() if x.strip() and not x.startswith(("searching: ", "sweep: ", "note: "))]
        ours = [x for x in lines if x.startswith("error: ")]
        if not ours:  # usage errors too (a bad int, an unknown option): one line, not click's usage block
            out.append(f"exit 2 without an error line: {stderr[-200:]!r}")
        elif ours and len(lines) != 1:
            out.append(f"error is not one line: {stderr[:300]!r}")
        if ours and re.search(r"error: :|/tmp/[^ ]*tmp[a-z0-9_]{6,}", ours[0]):
            out.append(f"error names nothing useful: {ours[0][:200]}")
        if ours and "(non-finite result)" in ours[0]:  # the last line of defence caught what the edge let through
            out.append(f"input reached the core unchecked: {ours[0][:200]}")
    new = {p for p in root.rglob("*")} - before
    if code != 0:
        left = [p for p in new if p.is_file()]  # the inputs were written before the run
        if left:
            out.append(f"exit {code} leaves {sorted(str(p.relative_to(root)) for p in left)[:3]}")
    else:
        want = 0o666 & ~UMASK
        for p in new:
            if p.is_file() and any(p == o or o in p.parents or p.with_suffix("") == o for o in case.outputs):
                mode = p.stat().st_mode & 0o777
                if mode != want:
                    out.append(f"{p.suffix or p.name} written with mode {oct(mode)} (umask gives {oct(want)})")
                if p.suffix == ".html" and XSS in p.read_text(errors="replace"):
                    out.append("unescaped markup from a file name in the HTML report")
        for o in case.outputs:
            if not o.exists() and str(o).startswith(str(root)) and any(x.with_suffix("") == o for x in new):
                written = [x.name for x in new if x.with_suffix("") == o]
                if not any(w in stdout for w in written):
                    out.append(f"writes {written} for {o.name} without saying so")
        jsonish = any(a in case.args for a in ("--json",)) or any(
            case.args[i] == "--format" and case.args[i + 1] in ("json", "sarif") for i in range(len(case.args) - 1))
        if jsonish and stdout.strip():
            try:
                doc = _strict_json(stdout)
            except ValueError as e:
                out.append(f"--json is not strict JSON: {str(e)[:120]}")
            else:
                for k, v in _numbers(doc):
                    if isinstance(v, float) and not math.isfinite(v):
                        out.append(f"non-finite {k}")
                    elif v < 0 and not SIGNED.search(k):
                        out.append(f"negative {_key(k)} = {v:g}")
                    elif _absurd(k, v):
                        out.append(f"absurd {_key(k)} = {v:g}")
                    if len(out) > 3:
                        break
        # (quoted values and the reason lines of unmodelled rows echo the user's own cells; AMD's Infinity Fabric is a link)
        elif re.search(r"(?i)\b(nan|inf|infinity)\b(?!\s+fabric)", re.sub(r"(?m)'[^']*'|^ +\d+  .*$", "", stdout)) or re.search(r"(?<![\w.+)])-\d[\d.]*(e[+-]?\d+)? ?(ms|GB)\b", stdout):
            out.append("non-finite or negative figure in the table")
    return out


FAILED_CASES = 0


class TooLong(Exception):
    pass


def _too_long(*_):
    raise TooLong(f"ran past LLM_CODESIGN_FUZZ_CASE_S={CASE_S} s (unbounded work)")


def run_fuzz(n: int, seed: int, root: Path) -> tuple[int, dict[str, list[tuple[str, str]]]]:
    """(cases run, {cause: [(command, mutation), ...]})."""
    rng = random.Random(seed)
    g = Gen(rng, root)
    runner = CliRunner()
    causes: dict[str, list[tuple[str, str]]] = {}
    global FAILED_CASES
    FAILED_CASES = 0
    env = {"COLUMNS": "2000", "LLM_CODESIGN_DEBUG": None}
    for _ in range(n):
        first = g.n
        case = gen_case(g)
        before = set(root.rglob("*"))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            if CASE_S:
                signal.signal(signal.SIGALRM, _too_long)
                signal.alarm(CASE_S)
            try:
                res = runner.invoke(app, case.args, env=env)
            finally:
                signal.alarm(0)
        caught = [w for w in caught if issubclass(w.category, (RuntimeWarning, UserWarning))]
        problems = judge(case, res, before, root, caught)
        FAILED_CASES += bool(problems)
        if not problems:  # a passing case's files go: the scan of `root` stays the size of one case
            for k in range(first + 1, g.n + 1):
                shutil.rmtree(root / f"f{k}", ignore_errors=True)
        for problem in problems:
            cause = re.sub(r"\d+(\.\d+)?(e[+-]?\d+)?", "#", problem)[:140]  # one cause, whatever the figures
            causes.setdefault(cause, []).append((shlex.join(["llm-codesign", *case.args]), case.what))
    return n, causes


def test_fuzz_cli(tmp_path):
    n, causes = run_fuzz(N, SEED, tmp_path)
    if causes:
        failed = sum(len(v) for v in causes.values())
        lines = [f"{FAILED_CASES} of {n} cases fail ({failed} failures, {len(causes)} distinct causes, seed {SEED}):"]
        for cause, hits in sorted(causes.items(), key=lambda kv: -len(kv[1])):
            cmd, what = hits[0]
            lines.append(f"- [{len(hits)}x] {cause}\n    {cmd}\n    ({what})")
        raise AssertionError("\n".join(lines))
