"""An architect's first hour, the findings n6 left (n6b): the proxy's band between shapes it has no term for, what
binds design's objective, an active-parameter budget, lint's proposals that agree, the page's lint costs, and
rounding and wrapping that read as one."""
import json
import math

from conftest import cli


def _config(tmp_path, name, **shape):
    """A Hugging Face config.json of the shape (llama's fields; qwen3_moe's where experts are given)."""
    cfg = {"model_type": "qwen3_moe" if "num_experts" in shape else "llama", "hidden_size": 4096, "intermediate_size": 14336,
           "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 128256,
           "max_position_embeddings": 131072, "torch_dtype": "bfloat16", **shape}
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(cfg))
    return str(path)


def _dense70(tmp_path):
    return _config(tmp_path, "dense70", hidden_size=8192, intermediate_size=28672, num_hidden_layers=80, num_attention_heads=64)


def test_two_shapes_the_proxy_prices_alike_still_differ_by_a_band(tmp_path):
    # a 68-layer, 256-wide-head shape of Llama-70B's 70.6B parameters read "+0.00±0.00" against it: no term prices
    # depth inside Kaplan's aspect band or head size inside 32..256, so the band was nil. Now each axis adds its spread per
    # e-fold (Kaplan fig. 5 caption: 0.98% of the loss per e-fold of aspect; Vaswani Table 3 (A): 0.82% per e-fold of d_k)
    code, out, _ = cli("design", "--params", "70e9", "--gpu", "b200", "--weight-dtype", "fp8", "--kv-dtype", "fp8",
                       "--baseline", _dense70(tmp_path), "--top", "10", "--json")
    rows = {(r["shape"]["layers"], r["shape"]["head_dim"]): r["quality"] for r in json.loads(out)["designs"]}
    deep, wide_heads = rows[(68, 128)], rows[(68, 256)]
    assert code == 0 and deep["delta"] == 0.0 and wide_heads["delta"] == 0.0
    assert abs(deep["sigma_pct"] - 0.98 * math.log(80 / 68)) < 1e-9  # 0.159%: aspect 8192/68 against 8192/80
    assert abs(wide_heads["sigma_pct"] - math.hypot(0.98 * math.log(80 / 68), 0.82 * math.log(2))) < 1e-9  # 0.590%
    assert deep["sigma_test"] == 0.0  # the band widens, the test does not loosen


def _moe30(tmp_path):
    return _config(tmp_path, "moe30", hidden_size=6144, num_hidden_layers=48, num_attention_heads=64, num_experts=128,
                   num_experts_per_tok=8, moe_intermediate_size=1536, intermediate_size=12288, vocab_size=151936)


def test_design_says_what_stops_each_rows_batch(tmp_path):
    # designs 1 and 2 both read 14,524.8 tok/s/GPU with nothing said: both run 751 requests per rank (3,004 on DP4), and one
    # batch up the grid (884 per rank) design 1 outgrows its KV cache (3,308 requests) while design 2 misses the 20
    # tok/s/user floor (18.1). At one batch the objective is batch x OSL over a request's life (TTFT + OSL x TPOT), and the
    # two lives agree to 2e-6 (design 1's shorter TPOT, 49.12 ms against 49.16, pays for its longer first token)
    code, out, _ = cli("design", "--moe", "--params", "180e9", "--gpu", "b200", "--weight-dtype", "fp8", "--kv-dtype", "fp8",
                       "--baseline", _moe30(tmp_path), "--top", "4", "--json")
    d = json.loads(out)["designs"]
    assert code == 0 and [x["deployment"]["concurrency_per_instance"] for x in d[:2]] == [3004, 3004]
    assert round(d[0]["objective"], 1) == round(d[1]["objective"], 1) == 14524.8
    assert d[0]["deployment"]["batch"] | {"next_tok_s_per_user": 0} == {
        "binds": "memory", "next_batch": 3536, "floor": 20.0, "max_concurrency": 3308, "next_tok_s_per_user": 0}
    assert d[1]["deployment"]["batch"]["binds"] == "floor" and 18 < d[1]["deployment"]["batch"]["next_tok_s_per_user"] < 20
    code, out, _ = cli("design", "--moe", "--params", "180e9", "--gpu", "b200", "--weight-dtype", "fp8", "--kv-dtype", "fp8",
                       "--baseline", _moe30(tmp_path), "--top", "4")
    assert code == 0 and ("batch: one step up the search's batch grid, rows 2, 4 miss the 20 tok/s/user floor (the objective "
                          "sits at the floor: shapes at one batch and plan score alike); rows 1, 3 outgrow the KV cache or the "
                          "engine's batch limit") in " ".join(out.split())
