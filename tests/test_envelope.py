"""The trust region (explore/envelope.py, data/accuracy/envelope.toml): every row is its config's shape, the
bounds at a scale are the window's published extremes widened by the stated margins, and a shape's position
names the bound, the limit, the factor and the models that set it."""
import math
from importlib import resources

import numpy as np
import pytest

from llm_codesign.explore.design import shapes
from llm_codesign.explore.envelope import data, describe, envelope_at, features, position, row_of, shape_arrays
from llm_codesign.spec.model import load_config_file
from llm_codesign.spec.registry import get_model


@pytest.mark.parametrize("row", data()["model"], ids=lambda r: r["name"])
def test_every_row_is_its_bundled_configs_shape(row):
    path = resources.files("llm_codesign").joinpath(f"data/models/{row['config']}")
    derived = row_of(load_config_file(str(path), row["name"]))
    assert {k: v for k, v in row.items() if k not in ("name", "config", "same_shape", "trunk")} == derived
    for alias in row.get("same_shape", []):  # re-releases listed once: the same variables within 5% of the parameters
        other = row_of(get_model(alias))
        assert abs(other["total_params"] / row["total_params"] - 1) < 0.05
        assert features(other | {"total_params": row["total_params"], "active_params": row["active_params"]}) == features(row)


def test_envelope_at_70b_by_hand():
    e = envelope_at(70e9)
    # the window: models within 10^0.5 of 70B (22.1B .. 221B)
    assert set(e.models) == {"gemma-4-26b-a4b", "qwen3-30b-a3b", "qwen3-32b", "yi-1.5-34b", "falcon-40b", "mixtral-8x7b", "nemotron-super-49b",
                             "nemotron-h-56b", "deepseek-llm-67b", "llama-3.1-70b", "qwen2-72b", "llama-4-scout", "gpt-oss-120b",
                             "mixtral-8x22b"}
    b = e.bounds
    # aspect: Qwen3-30B-A3B 2048 / 48 = 42.67 / 1.5 = 28.44; Falcon-40B 8192 / 60 = 136.5 x 1.5 = 204.8 (Mixtral-8x7B's
    # 4096 / 32 = 128 x 1.5 = 192 before Falcon's configs could be read)
    assert (b["aspect_ratio"].lo, b["aspect_ratio"].hi) == pytest.approx((2048 / 48 / 1.5, 8192 / 60 * 1.5))
    assert b["aspect_ratio"].lo_models == ("qwen3-30b-a3b",) and b["aspect_ratio"].hi_models == ("falcon-40b",)
    # query heads per KV head: Falcon-40B's 128 / 8 = 16 x 1.5 = 24 (8 x 1.5 = 12 before)
    assert b["q_per_kv"].hi == 24.0 and b["q_per_kv"].hi_models == ("falcon-40b",)
    # layers: Gemma 4 26B 30 x 0.75 = 22.5; DeepSeek-LLM-67B 95 x 1.25 = 118.75 (Llama-3.1-70B's 80 x 1.25 = 100 before it was
    # bundled; Nemotron-H-56B's 118 count Mamba-2, attention and FFN sublayers apart, and Nemotron-Super-49B is Llama's trunk
    # pruned: neither sets a trunk bound, envelope.toml `trunk`); KV heads 2 x 0.75 .. 8 x 1.25
    assert (b["layers"].lo, b["layers"].hi) == (22.5, 118.75) and b["layers"].hi_models == ("deepseek-llm-67b",)
    assert (b["kv_heads"].lo, b["kv_heads"].hi) == (1.5, 10.0)
    # MoE: experts Mixtral 8 / 1.5 .. 128 x 1.5; active fraction gpt-oss-120b / 1.5 .. Mixtral-8x22B x 1.5
    assert (b["experts"].lo, b["experts"].hi) == pytest.approx((8 / 1.5, 192.0))
    oss, m22 = (get_model(n) for n in ("gpt-oss-120b", "mixtral-8x22b"))
    assert b["active_fraction"].lo == pytest.approx(oss.active_params / oss.total_params / 1.5)
    assert b["active_fraction"].hi == pytest.approx(m22.active_params / m22.total_params * 1.5)


def test_the_issues_8_layer_70b_lies_outside_and_llama_70b_inside():
    e = envelope_at(70e9)
    c = shapes(np.asarray([[24576, 8, 79872, 8, 0, 0, 0, 0, 128]]), 128256)  # 192 query heads, 8 KV heads
    p = position(e, shape_arrays(c), 0)
    got = {v["bound"]: v for v in p["outside"]}
    # its 24 query heads per KV head sit on Falcon-40B's 16 x 1.5 = 24 (outside, x2, at 8 x 1.5 = 12 before Falcon-40B)
    assert not p["inside"] and set(got) == {"aspect_ratio.max", "layers.min", "depth_threshold"}
    assert got["aspect_ratio.max"]["by"] == pytest.approx(3072 / 204.8)  # x15
    assert got["layers.min"]["by"] == pytest.approx(22.5 / 8)
    # Levine et al.: log3(24,576) = 9.20 layers
    assert got["depth_threshold"]["limit"] == pytest.approx(math.log(24576) / math.log(3)) and got["depth_threshold"]["value"] == 8
    assert [v["bound"] for v in p["outside"]][0] == "aspect_ratio.max"  # the worst first
    assert describe(got["aspect_ratio.max"]) == "aspect_ratio 3072 > max 204.8 (x15.00; falcon-40b: 136.5)"
    m = get_model("llama-3.1-70b")
    inside = position(e, features(row_of(m)) | {"hidden": float(m.hidden)})
    # nearest bound: 8 KV heads of at most 10
    assert inside["inside"] and inside["closest"]["bound"] == "kv_heads.max" and inside["closest"]["headroom"] == pytest.approx(1.25)


def test_window_falls_back_to_the_nearest_models():
    # at 1B only Qwen3-0.6B lies within half a decade: the 4 nearest models set the bounds
    e = envelope_at(1e9)
    assert set(e.models) >= {"qwen3-0.6b", "llama-3.1-8b", "qwen3-8b", "gpt-oss-20b"}
    assert e.bounds["aspect_ratio"].lo == pytest.approx(1024 / 28 / 1.5)
