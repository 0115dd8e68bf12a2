"""Bundled model registry: short names and Hugging Face ids resolve to a verbatim config.json."""
from __future__ import annotations

import json
import tomllib
from collections import Counter
from functools import lru_cache
from importlib import resources
from pathlib import Path, PurePath

from llm_codesign.errors import InputError, close_matches, did_you_mean
from llm_codesign.spec.kinds import NoMixer
from llm_codesign.spec.model import ModelSpec, from_hf_config, load_config_file, pasted_name
from llm_codesign.spec.precision import Precision


def _data():
    return resources.files("llm_codesign").joinpath("data/models")


@lru_cache(maxsize=1)
def entries() -> tuple[dict, ...]:
    return tuple(tomllib.loads(_data().joinpath("registry.toml").read_text())["model"])


@lru_cache(maxsize=1)
def _index() -> dict[str, dict]:
    idx = {}
    for e in entries():
        idx[e["name"].lower()] = e
        for h in e.get("hf_ids", []):
            idx[h.lower()] = e
            idx.setdefault(h.split("/")[-1].lower(), e)
    return idx


@lru_cache(maxsize=None)
def _load_entry(name: str) -> ModelSpec:
    e = _index()[name]
    cfg = json.loads(_data().joinpath(e["config"]).read_text())
    if e.get("quantization_config"):  # a quantized release of a bundled shape: its own config.json's entry (registry.toml)
        cfg = {**cfg, "quantization_config": e["quantization_config"]}
    quant = json.loads(_data().joinpath(e["quant"]).read_text()) if e.get("quant") else None
    spec = from_hf_config(cfg, e["name"], quant, tuple(e.get("hf_ids", [])))
    if e.get("precision"):
        w, kv = e["precision"]
        spec = spec.with_precision(Precision.of(w, kv=kv))
    return spec


def release_of(name: str) -> str:
    """The registry entry whose weights the entry `name` quantizes (its `release`: llama-3.1-70b for llama-3.1-70b-fp8),
    else `name` itself (lower case): one release's entries share its measured runs and published scores."""
    key = str(name).strip().lower()
    e = _index().get(key)
    return str(e.get("release", e["name"])).lower() if e is not None else key


def _shape_key(m: ModelSpec) -> tuple:
    """What a ModelSpec's weights are laid out as, its name, precision and notes aside: two configs of one key are one shape."""
    return (m.hidden, m.vocab, m.tie_embeddings, m.groups, m.layout)


@lru_cache(maxsize=1)
def _by_shape() -> dict[tuple, tuple[str, ...]]:
    out: dict[tuple, set[str]] = {}
    for e in entries():
        try:
            m = _load_entry(e["name"].lower())
        except InputError:  # an entry the cost model cannot represent (list_models says which) has no shape to match
            continue
        out.setdefault(_shape_key(m), set()).add(release_of(e["name"]))
    return {k: tuple(sorted(v)) for k, v in out.items()}


def shape_releases(model: ModelSpec) -> tuple[str, ...]:
    """The releases (release_of) of the bundled entries whose shape `model` has, sorted; () for a shape none has: a config.json
    or Hub id of a bundled model's quantization or fine-tune (Qwen3-30B-A3B-FP8's is qwen3-30b-a3b's shape; DeepSeek-V3's
    is deepseek-r1's and deepseek-v3's)."""
    return _by_shape().get(_shape_key(model), ())


def is_bundled(name: str) -> bool:
    """Whether `name` is a bundled entry's name or Hugging Face id (nothing loaded)."""
    return str(name).strip().lower() in _index()


def bundled(ref: str) -> ModelSpec | None:
    """The bundled model a registry name or Hugging Face id names, or None: nothing read beyond the package (no
    config path, no Hugging Face cache or Hub), for a reader of ids that must stay offline."""
    key = ref.strip().lower()
    return _load_entry(key) if key in _index() else None


def registered(hf_id: str) -> ModelSpec | None:
    """The registry's model whose Hugging Face ids list `hf_id` exactly, or None (nothing read from the hub)."""
    e = next((e for e in entries() if hf_id.lower() in (h.lower() for h in e.get("hf_ids", []))), None)
    return get_model(e["name"]) if e else None


def get_model(ref: str | Path | dict) -> ModelSpec:
    """A registry name, a Hugging Face id, a path to a config.json (or a folder holding one), or a config.json's
    contents as a dict (a shape of one's own, named by its _name_or_path, else "custom": nothing is read or downloaded)."""
    if isinstance(ref, dict):
        return from_hf_config(ref, pasted_name(ref))
    ref = str(ref) if isinstance(ref, PurePath) else ref
    if ref is not None and not isinstance(ref, str):  # a number or a list, from Python alone
        raise InputError("model", ref, "a registry name (see `llm-codesign models`), a Hugging Face id, a config.json path, or a "
                                       "config.json's contents as a dict")
    if ref is None or not ref.strip():
        raise InputError("model", ref, "a registry name (see `llm-codesign models`), a Hugging Face id, or a config.json path")
    if (m := bundled(ref)) is not None:
        return m
    p = Path(ref)
    try:  # a name past the file system's limit (ENAMETOOLONG) is no file: named as an unknown model, not an OSError
        on_disk = p.is_dir() or p.exists()
    except OSError:
        on_disk = False
    if p.suffix == ".json" or p.name.lower().startswith("config.") or on_disk:  # a file meant
        return load_config_file(p)
    from llm_codesign.spec import hub

    if hub.looks_like_repo(ref):  # not bundled: the local Hugging Face cache, then the Hub (extra `hub`)
        try:
            return hub.get_hub_model(ref)
        except InputError as err:  # a misspelt bundled id is named before the Hub's reason
            near = close_matches(ref, [h for e in entries() for h in e.get("hf_ids", [])], cutoff=0.85)
            if not near or type(err) is not InputError:
                raise
            raise InputError(err.field, err.value, did_you_mean(near) + err.valid) from None
    raise InputError("model", ref, unknown_model_hint(ref))


def unknown_model_hint(ref: str) -> str:
    """What a model reference may be, led by the bundled names close to `ref` (a misspelt `llama3-70b`
    gets `llama-3.1-70b` rather than the list of every name)."""
    names = [e["name"] for e in entries()] + [h for e in entries() for h in e.get("hf_ids", [])]
    return (did_you_mean(close_matches(ref, names)) + f"a bundled name (`llm-codesign models` lists all {len(entries())}), "
            "a Hugging Face id, or a config.json path")


def _mixers(m: ModelSpec) -> dict[str, int]:
    """Layers per token-mixer kind (gqa, mla, gdn, mamba2, ...), the layer pattern at a glance."""
    out: Counter[str] = Counter()
    for layer, n in m.groups:
        if not isinstance(layer.attn, NoMixer):
            out[layer.attn.kind] += n
    return dict(out)


def list_models() -> list[dict]:
    """Every bundled model with its counts; models the cost model cannot represent carry `error`."""
    out = []
    for e in entries():
        try:
            m = _load_entry(e["name"].lower())
            out.append({"name": e["name"], "hf_ids": e.get("hf_ids", []), "total_params": m.total_params,
                        "active_params": m.active_params, "layers": m.num_layers, "moe": m.is_moe,
                        "precision": m.default_precision.label(), "mixers": _mixers(m),
                        "kv_values_per_token": m.kv_values_per_token(), "state_bytes_per_seq": m.state_bytes_per_seq()})
        except InputError as err:
            out.append({"name": e["name"], "hf_ids": e.get("hf_ids", []), "total_params": None,
                        "active_params": None, "error": str(err)})
    return out
