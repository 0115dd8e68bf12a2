"""Falcon's config.json forms (spec.model._falcon_config): transformers' FalconConfig keys and TII's earlier custom-code
(RWForCausalLM) keys, each checked against parameter counts derived here by hand from transformers 4.57.1
modeling_falcon.py (query_key_value, dense, dense_h_to_4h, dense_4h_to_h; the LM head tied), norms and biases excluded."""
import json

import pytest
from typer.testing import CliRunner

from llm_codesign.cli import app
from llm_codesign.errors import InputError
from llm_codesign.spec.kinds import GQA, DenseFfn
from llm_codesign.spec.model import from_hf_config
from llm_codesign.spec.registry import _data, get_model

V = 65024  # every Falcon's vocabulary


def falcon_params(h, L, H, kv, ffn=None):
    """Hand count: QKV h x (H + 2 kv) x head, output h x h, MLP 2 x h x 4h, the embedding once (tied)."""
    hd = h // H
    attn = h * (H + 2 * kv) * hd + h * h
    mlp = 2 * h * (ffn or 4 * h)
    return L * (attn + mlp) + V * h


# TII's own custom-code config.json pages, copied key for key (the byte counts the pages show match json.dumps(indent=2)
# plus a newline, as transformers writes them)
# https://huggingface.co/tiiuae/falcon-40b/blob/refs%2Fpr%2F40/config.json (f431193 "Enable loading with auto classes (#23)",
# 941 bytes)
RW_40B = {"alibi": False, "apply_residual_connection_post_layernorm": False, "architectures": ["RWForCausalLM"],
          "attention_dropout": 0.0, "auto_map": {"AutoConfig": "configuration_RW.RWConfig", "AutoModel": "modelling_RW.RWModel",
                                                 "AutoModelForSequenceClassification": "modelling_RW.RWForSequenceClassification",
                                                 "AutoModelForTokenClassification": "modelling_RW.RWForTokenClassification",
                                                 "AutoModelForQuestionAnswering": "modelling_RW.RWForQuestionAnswering",
                                                 "AutoModelForCausalLM": "modelling_RW.RWForCausalLM"},
          "bias": False, "bos_token_id": 11, "eos_token_id": 11, "hidden_dropout": 0.0, "hidden_size": 8192, "initializer_range": 0.02,
          "layer_norm_epsilon": 1e-05, "model_type": "RefinedWeb", "n_head": 128, "n_head_kv": 8, "n_layer": 60, "parallel_attn": True,
          "torch_dtype": "bfloat16", "transformers_version": "4.27.4", "use_cache": True, "vocab_size": 65024}
# https://huggingface.co/tiiuae/falcon-7b-instruct/blob/refs%2Fpr%2F39/config.json (9cbb161 "Update config.json", 667 bytes)
RW_7B = {"alibi": False, "apply_residual_connection_post_layernorm": False, "architectures": ["RWForCausalLM"],
         "attention_dropout": 0.0, "auto_map": {"AutoConfig": "configuration_RW.RWConfig", "AutoModelForCausalLM": "modelling_RW.RWForCausalLM"},
         "bias": False, "bos_token_id": 11, "eos_token_id": 11, "hidden_dropout": 0.0, "hidden_size": 4544, "initializer_range": 0.02,
         "layer_norm_epsilon": 1e-05, "model_type": "RefinedWebModel", "multi_query": True, "n_head": 71, "n_layer": 32,
         "parallel_attn": True, "torch_dtype": "bfloat16", "transformers_version": "4.27.4", "use_cache": True, "vocab_size": 65024}
# Falcon-180B: no page of tiiuae/falcon-180B's own (gated) config.json is stored here; this is the copy a Space made of it
# (https://huggingface.co/spaces/gojiteji/LLM-Comparer/commit/18c3fb5caedb38507d1f06be0f6d4e434f08aa5d, "Create
# tiiuae/falcon-180B/config.json"), which the quantised re-uploads (TheBloke/Falcon-180B-GPTQ e2efd96, TeeZee/falcon-180B-chat-AWQ
# 76a540e) agree with on every shape key. A test input, not bundled.
COPY_180B = {"alibi": False, "architectures": ["FalconForCausalLM"], "attention_dropout": 0.0, "bias": False, "bos_token_id": 11,
             "eos_token_id": 11, "hidden_dropout": 0.0, "hidden_size": 14848, "initializer_range": 0.02, "layer_norm_epsilon": 1e-05,
             "model_type": "falcon", "multi_query": True, "new_decoder_architecture": True, "num_attention_heads": 232,
             "num_hidden_layers": 80, "num_kv_heads": 8, "parallel_attn": True, "torch_dtype": "bfloat16",
             "transformers_version": "4.32.0", "use_cache": True, "vocab_size": 65024}


def shape(m):
    (layer, n), = m.groups
    return m.hidden, m.vocab, n, layer, m.tie_embeddings, m.total_params


def test_falcon_40b_grouped_kv_by_hand():
    m = get_model("falcon-40b")
    (layer, n), = m.groups
    # new_decoder_architecture: query_key_value is 8192 x (128 + 2 x 8) x 64; 128 heads of 64; MLP 8192 -> 32768 -> 8192, GELU
    assert layer.attn == GQA(heads=128, kv_heads=8, head_dim=64, v_head_dim=64) and layer.ffn == DenseFfn(inter=32768, gated=False)
    # 60 x (8192 x 144 x 64 + 8192^2 + 2 x 8192 x 32768) + 65024 x 8192 (tied) = 41,301,311,488: "Falcon-40B", 41.3B
    assert m.total_params == falcon_params(8192, 60, 128, 8) == 41_301_311_488
    assert m.active_params == m.total_params  # the tied head counted once either way: unembedding in active, embedding in total
    assert (n, m.tie_embeddings, m.max_context, m.architecture) == (60, True, 2048, "FalconForCausalLM")
    assert m.kv_values_per_token() == 60 * 2 * 8 * 64


def test_falcon_7b_multi_query_by_hand():
    m = get_model("falcon-7b")
    (layer, n), = m.groups
    # multi_query: query_key_value is 4544 + 2 x 64 wide, one KV head for 71 query heads of 64
    assert layer.attn == GQA(heads=71, kv_heads=1, head_dim=64, v_head_dim=64) and layer.ffn == DenseFfn(inter=18176, gated=False)
    # 32 x (4544 x 73 x 64 + 4544^2 + 2 x 4544 x 18176) + 65024 x 4544 = 6,921,420,800: "Falcon-7B", 6.92B
    assert m.total_params == falcon_params(4544, 32, 71, 1) == 6_921_420_800
    assert (n, m.tie_embeddings, m.kv_values_per_token()) == (32, True, 32 * 2 * 64)
    assert get_model("tiiuae/falcon-7b").name == "falcon-7b"  # the base resolves to the bundled shape


def test_falcon_180b_copy_by_hand():
    m = from_hf_config(COPY_180B, "falcon-180b")
    (layer, n), = m.groups
    # new_decoder_architecture wins over multi_query (modeling_falcon.py:216-219): 8 KV heads, not 1
    assert layer.attn.kv_heads == 8 and layer.attn.heads == 232 and layer.attn.head_dim == 64 and n == 80
    # 80 x (14848 x 248 x 64 + 14848^2 + 2 x 14848 x 59392) + 65024 x 14848 = 178,552,307,712: "Falcon-180B", within 1%
    assert m.total_params == falcon_params(14848, 80, 232, 8) == 178_552_307_712
    assert abs(m.total_params / 180e9 - 1) < 0.01


@pytest.mark.parametrize("rw,bundled", [(RW_40B, "falcon-40b"), (RW_7B, "falcon-7b")])
def test_custom_code_form_is_the_same_model(rw, bundled):
    """n_layer, n_head, n_head_kv (RefinedWeb: the new decoder) and multi_query (RefinedWebModel) read as transformers'
    conversion script maps them."""
    got, ref = from_hf_config(rw, bundled), get_model(bundled)
    assert shape(got) == shape(ref) and got.max_context == ref.max_context == 2048


def test_other_forms():
    # neither new decoder nor multi_query: MHA (query_key_value 3 x hidden), whatever num_kv_heads says
    mha = from_hf_config({**RW_7B, "multi_query": False}, "x")
    assert mha.groups[0][0].attn.kv_heads == 71
    # ffn_hidden_size set: that width; no max_position_embeddings: FalconConfig's default 2048, ALiBi or RoPE alike
    # (before, ALiBi read as no limit)
    cfg = {k: v for k, v in COPY_180B.items() if k != "max_position_embeddings"}
    m = from_hf_config({**cfg, "ffn_hidden_size": 40000, "alibi": True}, "x")
    assert m.groups[0][0].ffn.inter == 40000 and m.max_context == 2048
    assert from_hf_config({**cfg, "alibi": False}, "x").max_context == 2048
    assert m.total_params == falcon_params(14848, 80, 232, 8, 40000)
    # an explicit untied head (a fine-tune's config may say so) is honoured
    assert from_hf_config({**RW_7B, "tie_word_embeddings": False}, "x").total_params == 6_921_420_800 + V * 4544


@pytest.mark.parametrize("change,field", [
    ({"n_layer": None}, "config.num_hidden_layers"),  # neither n_layer nor num_hidden_layers
    ({"hidden_size": None}, "config.hidden_size"),
    ({"n_head": 70}, "config.hidden_size"),  # 4544 / 70 is no whole head size
    ({"n_head_kv": 7}, "config.n_head_kv"),  # 128 query heads in no whole groups of 7
    ({"num_hidden_layers": 61}, "config.n_layer"),  # both names, two values
    ({"n_head_kv": "8"}, "config.n_head_kv"),
    ({"multi_query": "yes"}, "config.multi_query"),
    ({"ffn_hidden_size": -1}, "config.ffn_hidden_size"),
])
def test_bad_falcon_fields_name_the_field(change, field):
    base = RW_7B if "n_head" in change and "n_head_kv" not in change else RW_40B
    cfg = {k: v for k, v in {**base, **change}.items() if v is not None}
    with pytest.raises(InputError) as e:
        from_hf_config(cfg, "x")
    assert e.value.field == field, str(e.value)


def test_cli_refuses_a_bad_falcon_config_in_one_line(tmp_path):
    p = tmp_path / "config.json"
    p.write_text(json.dumps({k: v for k, v in RW_40B.items() if k != "n_layer"}))
    r = CliRunner().invoke(app, ["estimate", str(p), "--gpu", "h100", "--json"], env={"COLUMNS": "2000"})
    lines = [x for x in r.stderr.splitlines() if x.strip()]
    assert r.exit_code == 2 and len(lines) == 1 and "config.num_hidden_layers" in lines[0] and "n_layer" in lines[0], r.stderr


def test_hub_reads_the_custom_code_form(tmp_path, monkeypatch):
    pytest.importorskip("huggingface_hub")
    commit = "f431193" + "0" * 33
    snap = tmp_path / "models--tiiuae--falcon-40b"
    (snap / "refs").mkdir(parents=True)
    (snap / "refs" / "main").write_text(commit)
    (snap / "snapshots" / commit).mkdir(parents=True)
    (snap / "snapshots" / commit / "config.json").write_text(json.dumps(RW_40B, indent=2) + "\n")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    from llm_codesign.spec.hub import get_hub_model

    m = get_hub_model("tiiuae/falcon-40b")
    assert shape(m) == shape(get_model("falcon-40b"))


def test_bundled_files_are_the_pages_bytes():
    # the pages show 1.05 kB: json.dumps(indent=2) of their keys in their order, and a newline
    for f in ("tiiuae--falcon-40b_config.json", "tiiuae--falcon-7b-instruct_config.json"):
        text = _data().joinpath(f).read_text()
        assert text == json.dumps(json.loads(text), indent=2) + "\n" and 1045 <= len(text.encode()) < 1055
    assert len((json.dumps(RW_40B, indent=2) + "\n").encode()) == 941 and len((json.dumps(RW_7B, indent=2) + "\n").encode()) == 667


def test_yi_trunk_from_its_own_repository_by_hand():
    # https://huggingface.co/01-ai/Yi-1.5-34B-Chat/blob/7b967a3a456738c0330b1624980dd6a7d3ed33f5/config.json, 661 bytes: Yi-34B's
    # 7168 x 60 trunk, 56 / 8 heads of 128, SwiGLU 20480, vocab 64000 untied:
    # 60 x (7168 x 128 x (2 x 56 + 2 x 8) + 3 x 7168 x 20480) + 2 x 64000 x 7168 = 34,388,049,920 ("34B")
    text = _data().joinpath("01-ai--Yi-1.5-34B-Chat_config.json").read_text()
    assert len(text.encode()) == 661 and text == json.dumps(json.loads(text), indent=2) + "\n"
    m = get_model("yi-1.5-34b")
    assert m.total_params == 60 * (7168 * 128 * (2 * 56 + 2 * 8) + 3 * 7168 * 20480) + 2 * 64000 * 7168 == 34_388_049_920
    assert (m.hidden, m.num_layers, m.max_context) == (7168, 60, 4096)
