"""design's parameter range and its export (branch newfixF): the header says the budget with its tolerance and the
params the rows span, a line says how far they sit from the budget and design 1's gain at equal parameters, and
--export keeps the baseline's context, RoPE and vocabulary (a 32768-token baseline once came back as 131072)."""
import json

import pytest
from typer.testing import CliRunner

from llm_codesign.cli import app
from llm_codesign.cli.design import params_line
from llm_codesign.explore.design import CARRIED, baseline_fields, export_changes, hf_config
from llm_codesign.explore.design_report import budget
from llm_codesign.spec.model import from_hf_config

# a 30B-class baseline of one's own: Qwen2.5-32B's widths, 60 layers, a 32768-token context stretched x4 by YaRN
MY30B = {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 5120, "num_hidden_layers": 60,
         "num_attention_heads": 40, "num_key_value_heads": 8, "intermediate_size": 25600, "vocab_size": 152064,
         "max_position_embeddings": 32768, "rope_theta": 1000000.0, "tie_word_embeddings": False, "rms_norm_eps": 1e-6,
         "rope_scaling": {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768},
         "hidden_act": "silu", "torch_dtype": "bfloat16"}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    d = tmp_path_factory.mktemp("my30b")
    (d / "config.json").write_text(json.dumps(MY30B))
    args = ["design", "--params", "30e9", "--baseline", str(d / "config.json"), "--gpu", "h100", "--gpus", "8",
            "--max-candidates", "300", "--export", str(d / "best.json")]
    table = CliRunner().invoke(app, args, env={"COLUMNS": "80"})
    assert table.exit_code == 0, table.output
    js = CliRunner().invoke(app, [*args[:-2], "--json"])
    assert js.exit_code == 0, js.output
    return table.output, json.loads(js.stdout), json.loads((d / "best.json").read_text())


def test_the_export_keeps_the_baselines_context_and_rope(run):
    out, r, cfg = run
    assert cfg["max_position_embeddings"] == 32768 and cfg["rope_scaling"] == MY30B["rope_scaling"]
    assert (cfg["rope_theta"], cfg["vocab_size"], cfg["rms_norm_eps"]) == (1e6, 152064, 1e-6)
    # the exported shape is design 1's, its parameters the ones the search priced
    s = r["designs"][0]["shape"]
    assert (cfg["hidden_size"], cfg["num_hidden_layers"], cfg["intermediate_size"]) == (s["hidden"], s["layers"], s["inter"])
    assert from_hf_config(cfg).total_params == r["designs"][0]["total_params"]
    # what the export sets otherwise is said: the Llama layout the search priced, not Qwen2's
    assert 'model_type "qwen2" -> "llama"' in " ".join(out.split())
    assert "max_position_embeddings 32768" in " ".join(out.split())


def test_the_header_says_the_budget_and_the_rows_span(run):
    out, r, _ = run
    flat = " ".join(out.split())
    assert "designs at 30B ± 10% params" in flat
    p = sorted(d["total_params"] for d in r["designs"])
    assert f"rows span {p[0] / 1e9:.3g}B-{p[-1] / 1e9:.3g}B params" in flat
    assert r["budget"] == {"params": 30e9, "tol": 0.1, "rows": [p[0], p[-1]], "reference_params": 28_924_968_960}
    # my30b by hand (norms uncounted, no q/k/v bias, untied head): attention q 26,214,400 + k, v 10,485,760 + o 26,214,400 = 62,914,560; FFN 3 x 5120 x 25600 = 393,216,000; x 60 layers
    # -> 456,130,560 a layer, x 60 = 27,367,833,600; embedding and head 2 x 152064 x 5120 = 1,557,135,360; total 28,924,968,960
    assert r["baseline"]["total_params"] == 28_924_968_960
    assert max(len(line) for line in out.splitlines()) <= 80


def test_gain_at_equal_params_by_hand():
    # the finding's case: rows 27.2-28.4B against a 28.5B baseline, design 1 +20.4% tok/s/GPU at 27.2B;
    # at equal params 1.204 x 27.2 / 28.5 = 1.204 x 0.954386 = 1.14908: +14.9%; rows 27.2/30 - 1 = -9.3%, 28.4/30 - 1 = -5.3%
    d = lambda p, g: {"total_params": p, "gain_pct": g}  # noqa: E731
    r = {"designs": [d(27.2e9, 20.4), d(28.4e9, 10.0)], "baseline": {"name": "my30b", "total_params": 28.5e9}, "reference": None}
    r["budget"] = budget(r, 30e9, 0.05)
    assert r["budget"]["rows"] == [27.2e9, 28.4e9] and r["designs"][0]["gain_equal_params_pct"] == pytest.approx(14.90807, abs=1e-4)
    # row 2: 1.10 x 28.4 / 28.5 = 1.096140: +9.61%
    assert r["designs"][1]["gain_equal_params_pct"] == pytest.approx(9.6140, abs=1e-3)
    line = params_line(r, "tok/s/GPU")
    assert "rows 27.2B-28.4B, -9.3 to -5.3% of the 30B budget (±5%); my30b 28.5B" in line
    assert "design 1 at equal params tok/s/GPU +14.9%" in line


def test_a_tied_or_gelu_baseline_is_said_changed():
    from llm_codesign.spec.registry import get_model

    raw = {**MY30B, "tie_word_embeddings": True, "hidden_act": "gelu"}
    base = get_model(raw)
    d = {"shape": {"hidden": 5120, "layers": 48, "heads": 40, "kv_heads": 4, "head_dim": 128, "inter": 38400}}
    carried = baseline_fields(base, raw)
    assert set(carried) <= set(CARRIED) and carried["max_position_embeddings"] == 32768
    cfg = hf_config(d, base.vocab, carried)
    assert cfg["tie_word_embeddings"] is False and cfg["hidden_act"] == "silu"  # the untied, gated SiLU shape priced
    assert export_changes(cfg, base, raw) == [("model_type", "qwen2", "llama"), ("tie_word_embeddings", True, False),
                                              ("hidden_act", "gelu", "silu")]
    # without its config.json only the vocabulary is known: max_context is YaRN's 32768 x 4 = 131072, not the field
    assert base.max_context == 131072 and baseline_fields(base, None) == {"vocab_size": 152064}


def test_a_bundled_baseline_carries_its_registry_config():
    from llm_codesign.cli.design import _raw_config
    from llm_codesign.spec.registry import get_model

    raw = _raw_config("llama-3.1-8b")  # Meta's config: 131072 positions, llama3 rope_scaling factor 8, theta 5e5
    carried = baseline_fields(get_model("llama-3.1-8b"), raw)
    assert carried["max_position_embeddings"] == 131072 and carried["rope_scaling"]["factor"] == 8.0
    assert carried["vocab_size"] == 128256 and carried["rope_theta"] == 500000.0
