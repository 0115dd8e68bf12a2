"""Every published row is filed where accuracy_of finds it (newc6 #8): rows_of matches base_name(model), so a row filed
under a name the registry resolves to another model (Neural Magic's "llama-3.1-8b-instruct", the registry's
llama-3.1-8b) never reached an answer, and estimate printed the proxy beside a published int4 pair."""
from __future__ import annotations

import pytest

from llm_codesign.errors import InputError
from llm_codesign.explore.accuracy_model import accuracy_of, published, rows_of
from llm_codesign.spec.precision import Precision
from llm_codesign.spec.registry import get_model

# models with published rows that the registry does not bundle: they pair among themselves only (format_drops)
OUTSIDE = {"llama-3-70b", "qwen3.6-35b-a3b", "granite-3.1-8b-instruct"}


def _resolves(name: str) -> str | None:
    try:
        return get_model(name).name
    except InputError:
        return None


@pytest.mark.parametrize("name", sorted({r["model"] for r in published()["score"]}))
def test_each_published_model_is_a_registry_name_or_alias_or_declared_outside(name):
    aliases = published()["aliases"]
    got = _resolves(name)
    if name in OUTSIDE:
        assert got is None, f"{name} resolves to registry model {got}: file its rows under {got}"
    else:
        assert got == name or name in aliases, f"{name!r} resolves to {got!r}: file its rows under the registry name"
    assert all(_resolves(a) == a for a in aliases)  # every alias key is itself a registry entry


def test_llama_8b_int4_answers_with_its_published_pair():
    m = get_model("llama-3.1-8b")
    assert len(rows_of("llama-3.1-8b")) == 4  # Meta's base and instruct BF16 rows, Neural Magic's BF16 and W4A16
    acc = accuracy_of(m, Precision.of("int4", activation="bf16"))
    # Neural Magic's recoveries (% of BF16): 100 - mean(98.9, 96.1, 93.0, 99.7, 97.4) = 100 - 485.1/5 = 100 - 97.02 = 2.98
    assert acc["source"] == "published" and acc["drop_source"] == "published"
    assert acc["relative_drop_pct"] == pytest.approx(2.98, abs=1e-9)
    assert acc["short"] == "OpenLLM v1 (% of BF16) 98.9, -3.0%"
