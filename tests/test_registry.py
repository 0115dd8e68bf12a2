"""spec/registry.py: short names and Hugging Face ids resolve to the same bundled configs."""
import pytest

from llm_codesign.errors import InputError
from llm_codesign.spec.registry import get_model, list_models


def test_names_and_ids_resolve_alike():
    by_id = get_model("meta-llama/Llama-3.1-70B-Instruct")
    assert by_id.name == "llama-3.1-70b" and by_id == get_model("llama-3.1-70b")
    assert get_model("LLAMA-3.1-70B").name == "llama-3.1-70b"


def test_listing_matches_the_specs():
    rows = {r["name"]: r for r in list_models()}
    assert len(rows) >= 20
    r = rows["deepseek-r1"]
    m = get_model("deepseek-r1")
    assert (r["total_params"], r["active_params"], r["layers"], r["moe"]) == (m.total_params, m.active_params, 61, True)
    assert 660e9 < m.total_params < 690e9 and 35e9 < m.active_params < 40e9  # DeepSeek-V3 report: 671B total, 37B active


def test_unknown_name_names_the_close_ones_and_where_the_rest_are_listed():
    # the close names, not all 32 (issue 41: `llama3-70b` got the whole list and no "did you mean")
    with pytest.raises(InputError, match=r"did you mean llama-3.3-70b, llama-3.1-70b or llama-2-70b\? a bundled name \(`llm-codesign models`"):
        get_model("llama3-70b")
    with pytest.raises(InputError, match=r"is not valid; a bundled name \(`llm-codesign models` lists all \d+\)"):
        get_model("no-such-model")
