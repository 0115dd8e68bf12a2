"""Models from the Hugging Face Hub through a prepared local cache (spec/hub.py): no network is used."""
import subprocess
import sys

import pytest

pytest.importorskip("huggingface_hub")

from llm_codesign.errors import InputError  # noqa: E402
from llm_codesign.spec.registry import _data, get_model  # noqa: E402

COMMIT = "0123456789abcdef0123456789abcdef01234567"


def cache_with(root, repo, files: dict[str, str], commit=COMMIT):
    """A folder laid out like the Hugging Face cache: models--org--name/{refs/main, snapshots/<commit>/...}."""
    d = root / ("models--" + repo.replace("/", "--"))
    (d / "refs").mkdir(parents=True)
    (d / "refs" / "main").write_text(commit)
    snap = d / "snapshots" / commit
    snap.mkdir(parents=True)
    for name, text in files.items():
        (snap / name).write_text(text)
    return root


def bundled(name):
    return _data().joinpath(name).read_text()


@pytest.fixture
def hub_cache(tmp_path, monkeypatch):
    cache_with(tmp_path, "someorg/tiny-llama", {"config.json": bundled("meta-llama--Meta-Llama-3.1-8B_config.json"),
                                                # remote code a config may point at: never imported
                                                "modeling_evil.py": "raise SystemExit('remote code ran')"})
    cache_with(tmp_path, "someorg/qwen-nvfp4", {"config.json": bundled("nvidia--Qwen3-235B-A22B-NVFP4_config.json"),
                                                "hf_quant_config.json": bundled("nvidia--Qwen3-235B-A22B-NVFP4_hf_quant_config.json")})
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return tmp_path


def test_offline_cache_hit_is_the_same_shape_as_the_bundled_config(hub_cache):
    m, ref = get_model("someorg/tiny-llama"), get_model("llama-3.1-8b")
    assert (m.total_params, m.active_params, m.num_layers) == (ref.total_params, ref.active_params, ref.num_layers)
    assert m.hf_ids == ("someorg/tiny-llama",)
    assert any(f"someorg/tiny-llama@{COMMIT}" in n for n in m.notes)  # the revision read is pinned


def test_quantization_file_and_pinned_revision_without_network(hub_cache, monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE")
    # a commit hash found in the cache needs no network call, even online
    m = get_model(f"someorg/qwen-nvfp4@{COMMIT}")
    assert m.default_precision.weight.name == "nvfp4"
    assert m.default_precision == get_model("qwen3-235b-a22b-nvfp4").default_precision


def test_auto_map_is_ignored(hub_cache, tmp_path):
    import json

    cfg = json.loads(bundled("meta-llama--Meta-Llama-3.1-8B_config.json"))
    cfg["auto_map"] = {"AutoModelForCausalLM": "modeling_evil.EvilForCausalLM"}
    cache_with(tmp_path, "someorg/remote-code", {"config.json": json.dumps(cfg), "modeling_evil.py": "raise SystemExit(1)"})
    assert get_model("someorg/remote-code").total_params == get_model("llama-3.1-8b").total_params


def test_offline_cache_miss_is_one_line(hub_cache):
    with pytest.raises(InputError, match=r"HF_HUB_OFFLINE=1 forbids downloading it") as e:
        get_model("someorg/not-cached")
    assert str(hub_cache) in str(e.value) and "\n" not in str(e.value)


def test_cli_offline_miss_exits_2(tmp_path):
    import os

    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(tmp_path)}
    r = subprocess.run([sys.executable, "-m", "llm_codesign.cli", "estimate", "someorg/not-cached", "--gpu", "h100"],
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 2 and r.stdout == ""
    assert len(r.stderr.strip().splitlines()) == 1 and "HF_HUB_OFFLINE=1" in r.stderr


def test_without_the_extra_the_message_names_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "huggingface_hub", None)
    with pytest.raises(InputError, match=r"llm-codesign\[hub\]"):
        get_model("someorg/anything")
