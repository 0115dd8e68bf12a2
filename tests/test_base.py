"""spec/engines/base.py and explore/export_engines/base.py: what an engine and an engine's exporter must
define, the registries that hold them, and the one-line errors for a name or a calibration section that
is not there (never another engine's defaults)."""
from dataclasses import fields, replace

import pytest

from llm_codesign.cost.calibration import calibration_for
from llm_codesign.errors import InputError
from llm_codesign.spec.engines import ENGINES, TRTLLM, VLLM, Engine, engine_names, get_engine, listed, register_engine
from llm_codesign.spec.hardware import get_gpu


def test_lookup_and_the_registry_order():
    assert engine_names() == ("trtllm", "vllm", "sglang", "atom") and listed() == "trtllm, vllm, sglang or atom"
    assert get_engine("TensorRT-LLM") is TRTLLM and get_engine(" SGLang ").title == "SGLang"
    with pytest.raises(InputError, match=r"^backend: 'tgi' is not valid; one of: trtllm, vllm, sglang, atom$"):
        get_engine("tgi")


def test_an_engine_defines_what_depends_on_the_gpu_and_the_plan():
    """The base class has no step budget, batch limit or all-reduce of its own: an engine that leaves one
    out cannot be made (it would otherwise run on another engine's defaults)."""
    data = {f.name: getattr(VLLM, f.name) for f in fields(VLLM)}

    class Partial(Engine):
        def step_tokens(self, gpu):
            return 4096

    with pytest.raises(TypeError, match="max_batch.*own_allreduce|own_allreduce.*max_batch"):
        Partial(**data)
    with pytest.raises(TypeError, match="kv_budget"):  # every documented default is a field without a default
        type(VLLM)(name="x", title="X")


def test_a_name_is_registered_once():
    with pytest.raises(ValueError, match="'vllm': taken already"):
        register_engine(replace(VLLM, title="another vLLM"))
    with pytest.raises(ValueError, match="'trt-llm': taken already"):
        register_engine(replace(VLLM, name="x", aliases=("trt-llm",)))
    with pytest.raises(ValueError, match="'Twin': lower case"):
        register_engine(replace(VLLM, name="Twin"))
    assert list(ENGINES) == ["trtllm", "vllm", "sglang", "atom"]


def test_a_calibration_without_the_engine_names_every_missing_table():
    """Each per-engine table of the profile must list a registered engine: one line names those that do
    not, at the engine's first use (Engine.costs)."""
    cal = calibration_for(get_gpu("h100"))
    twin = replace(VLLM, name="twin")
    msg = ("engine: 'twin' is not valid; a name every per-engine calibration table lists; missing from [default.step_overhead_s], "
           "[default.ttft_overhead_s], [default.comm_latency_scale], [default.prefill_queue_fraction], [default.eager_launch_s], [default.eager_skew_s], "
           "[default.idle_launch_s], [default.ttft_wait_steps], [default.adp_wait_steps], [default.seq_overhead_s] "
           "(data/calibration/default.toml, or a profile)")
    with pytest.raises(InputError) as e:
        twin.costs(cal)
    assert str(e.value) == msg


def test_the_base_behaviour_reads_the_fields():
    # a fixed KV fraction whatever the plan; no PDL before SM90; the fusions listed and no others
    assert VLLM.kv_fraction(get_gpu("h100"), None, chunk=8192) == 0.92
    assert VLLM.pdl_share("ampere") == 0.0 and VLLM.pdl_share("blackwell") == 0.15
    assert VLLM.fuses("act_quant") and not VLLM.fuses("attn_out") and TRTLLM.fuses("attn_out")


def test_exporters_are_registered_per_engine():
    from llm_codesign.explore.export_engines import EXPORTERS, exportable, exporter

    assert exportable() == ("trtllm", "vllm", "sglang", "dynamo")
    assert {n: x.file_name for n, x in EXPORTERS.items()} == {
        "vllm": "vllm_config.yaml", "sglang": "launch_sglang.sh", "trtllm": "extra_llm_api_options.yaml"}
    with pytest.raises(InputError, match=r"^engine: 'tgi' is not valid; one of: trtllm, vllm, sglang$"):
        exporter("tgi")



def test_the_exportable_engines_are_one_list():
    from llm_codesign.cli.export import _written
    from llm_codesign.explore.export_engines import EXPORTERS, register_exporter
    from llm_codesign.spec.engines import EXPORTABLE

    # export's help, its --backend check and the exporters read spec.engines.EXPORTABLE (help worked it out from the data
    # files, the check from the registered builders): each engine in it has its builder, and no builder stands outside it
    assert EXPORTABLE == ("trtllm", "vllm", "sglang") and set(EXPORTERS) == set(EXPORTABLE)
    assert _written() == "trtllm, vllm or sglang (ATOM priced, not exported)"
    with pytest.raises(ValueError, match=r"^exporter 'atom': not a registered engine, not in spec.engines.EXPORTABLE, or exported"):
        register_exporter(type("AtomExporter", (), {"name": "atom"})())


def test_a_build_without_a_fusion_names_a_fusion_engines_know():
    """Engine.without drops a fusion its step makes, keeps the engine where it makes none, and refuses a name no engine
    knows: a misspelt one would price today's build for an older one."""
    old = TRTLLM.without("ar_norm")
    assert old.fusions == ("act_quant", "attn_out", "rope_decode", "pdl", "fp8_bmm", "routing", "mla_meta") and old.name == "trtllm" and TRTLLM.without("ar_norm") is old
    assert TRTLLM.without("hop_b") is TRTLLM  # known, not made today
    with pytest.raises(InputError) as e:
        TRTLLM.without("ar_nrom")
    assert str(e.value) == "fusion: 'ar_nrom' is not valid; one of: act_quant, attn_out, ar_norm, rope_decode, hop_b, pdl, fp8_bmm, routing, mla_meta"
    with pytest.raises(ValueError, match=r"engine 'twin': fusions \['allreduce'\] are none of"):
        register_engine(replace(VLLM, name="twin", fusions=("allreduce",)))
    assert "twin" not in ENGINES
