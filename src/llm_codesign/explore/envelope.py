"""The trust region: where published models put their shapes, per parameter scale.

The accuracy proxy's shape terms were fitted on small models, and no published model puts 8 layers at 70B
parameters: a shape far from every trained one is an extrapolation whatever the proxy says. The envelope at
a scale N is the range of each shape variable (aspect ratio, depth, KV heads and query heads per KV head, head
size; experts, top-k, granularity and active fraction for MoE) over the published models within a factor of
10^window_decades of N in total parameters (at least `min_models` of them, the nearest), widened by a stated
margin; plus Levine et al.'s depth threshold at every scale. The models and the policy are in
data/accuracy/envelope.toml, each model cited to its bundled config.json (a test re-derives every row).
"""
from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

import numpy as np

from llm_codesign.spec.kinds import GQA, MLA, DenseFfn, MoE
from llm_codesign.spec.model import Layer, ModelSpec

# variable -> (kind, what it is); ratio bounds widen by x/ ratio_margin, count bounds by +- count_margin
VARIABLES = {
    "aspect_ratio": ("ratio", "d_model / layers"),
    "layers": ("count", "layers"),
    "q_per_kv": ("ratio", "query heads per KV head"),
    "kv_heads": ("count", "KV heads"),
    "head_dim": ("ratio", "head size"),
    "experts": ("ratio", "routed experts"),
    "top_k": ("count", "experts per token"),
    "granularity": ("ratio", "granularity G"),
    "active_fraction": ("ratio", "active / total parameters"),
}
MOE_VARIABLES = ("experts", "top_k", "granularity", "active_fraction")
GQA_VARIABLES = ("q_per_kv", "kv_heads")


@lru_cache(maxsize=1)
def data() -> dict:
    return _bundled("envelope.toml")


@lru_cache(maxsize=None)
def _bundled(name: str) -> dict:
    """A bundled data/accuracy file, parsed once (read here, not through accuracy_model, which imports this module)."""
    return tomllib.loads(resources.files("llm_codesign").joinpath(f"data/accuracy/{name}").read_text())


def granularity(hidden, expert_inter, gated=True):
    """Krajewski et al.'s G = d_ff / d_expert with the dense-equivalent width of a gated FFN (8/3 d_model),
    the accuracy proxy's convention (data/accuracy/proxy.toml [granularity])."""
    g = _bundled("proxy.toml")["granularity"]
    ratio = g["ffn_ratio_gated"] if gated else g["ffn_ratio"]
    return ratio * np.asarray(hidden, float) / np.maximum(np.asarray(expert_inter, float), 1.0)


def features(row: dict) -> dict:
    """Envelope variables of one shape given as an envelope.toml row (or the same keys)."""
    f = {"aspect_ratio": row["hidden"] / row["layers"], "layers": float(row["layers"]), "head_dim": float(row["head_dim"])}
    if row.get("kv_heads"):
        f |= {"q_per_kv": row["heads"] / row["kv_heads"], "kv_heads": float(row["kv_heads"])}
    if row.get("experts"):
        f |= {"experts": float(row["experts"]), "top_k": float(row["top_k"]),
              "granularity": float(granularity(row["hidden"], row["expert_inter"], row.get("gated", True))),
              "active_fraction": row["active_params"] / row["total_params"]}
    return f


def row_of(model) -> dict:
    """A ModelSpec as an envelope.toml row: its full-attention layers' heads (GQA; MLA has no KV-head count)
    and its first MoE layer's experts."""
    full = [a for layer, _ in model.groups for a in (layer.attn,) if isinstance(a, GQA) and not a.window and not a.attn_chunk]
    gqa = full or [layer.attn for layer, _ in model.groups if isinstance(layer.attn, GQA)]
    mla = [layer.attn for layer, _ in model.groups if isinstance(layer.attn, MLA)]
    row = {"total_params": int(model.total_params), "active_params": int(model.active_params), "layers": model.num_layers,
           "hidden": model.hidden}
    if gqa:
        row |= {"heads": gqa[0].heads, "kv_heads": gqa[0].kv_heads, "head_dim": gqa[0].head_dim}
    elif mla:
        row |= {"heads": mla[0].heads, "head_dim": mla[0].head_dim}
    else:
        row["head_dim"] = 0
    moe = next((layer.ffn for layer, _ in model.groups if isinstance(layer.ffn, MoE)), None)
    if moe is not None:
        row |= {"experts": moe.experts, "top_k": moe.top_k, "expert_inter": moe.expert_inter, "gated": moe.gated}
    return row


@dataclass(frozen=True)
class Bound:
    variable: str
    lo: float
    hi: float
    lo_value: float  # the published extreme before the margin, and the models at it
    hi_value: float
    lo_models: tuple[str, ...]
    hi_models: tuple[str, ...]


@dataclass(frozen=True)
class Envelope:
    scale: float  # total parameters it was drawn at
    models: tuple[str, ...]  # the published models in the window
    bounds: dict[str, Bound]
    depth_log_base: float  # Levine et al.: layers >= log_base(d_model)

    def to_dict(self) -> dict:
        return {"scale": self.scale, "models": list(self.models), "depth_threshold": f"layers >= log{self.depth_log_base:g}(d_model)",
                "bounds": {k: {"min": b.lo, "max": b.hi, "published_min": b.lo_value, "published_max": b.hi_value,
                               "min_set_by": list(b.lo_models), "max_set_by": list(b.hi_models)} for k, b in self.bounds.items()}}


def _pools() -> dict[str, list[dict]]:
    rows = data()["model"]
    return {"all": rows, "moe": [r for r in rows if r.get("experts")], "gqa": [r for r in rows if r.get("kv_heads")]}


def _members(x: np.ndarray, rows: list[dict]) -> np.ndarray:
    """Which of `rows` lie in the window of each log10 scale `x`: within window_decades, or the min_models nearest
    (ties included) where fewer lie there. (len(x), len(rows)) booleans."""
    pol = data()["policy"]
    d = np.abs(np.asarray(x, float)[:, None] - np.log10([r["total_params"] for r in rows])[None, :])
    near = d <= pol["window_decades"]
    k = int(pol["min_models"])
    nearest = d <= np.partition(d, k - 1, axis=1)[:, k - 1:k] if d.shape[1] > k else np.ones_like(near)
    return np.where((near.sum(axis=1) < k)[:, None], nearest, near)


@lru_cache(maxsize=256)
def _bounds(key: tuple[tuple[str, ...], ...]) -> tuple[tuple[str, ...], dict]:
    """Each variable's published range over the window's models (`key`: the names in the all, MoE and GQA pools),
    widened by the margin."""
    pol = data()["policy"]
    by_name = {r["name"]: r for r in data()["model"]}
    pools = dict(zip(("all", "moe", "gqa"), ([by_name[n] for n in names] for names in key), strict=True))
    bounds = {}
    for var, (kind, _) in VARIABLES.items():
        pool = pools["moe" if var in MOE_VARIABLES else "gqa" if var in GQA_VARIABLES else "all"]
        vals = [(features(r)[var], r["name"]) for r in pool if var in features(r)]
        lo_v, hi_v = min(v for v, _ in vals), max(v for v, _ in vals)
        if kind == "ratio":
            lo, hi = lo_v / pol["ratio_margin"], hi_v * pol["ratio_margin"]
        else:
            lo, hi = lo_v * (1 - pol["count_margin"]), hi_v * (1 + pol["count_margin"])
        bounds[var] = Bound(var, lo, hi, lo_v, hi_v, tuple(n for v, n in vals if v == lo_v), tuple(n for v, n in vals if v == hi_v))
    return tuple(dict.fromkeys(n for names in key for n in names)), bounds


def _keys(scales) -> list[tuple[tuple[str, ...], ...]]:
    x = np.log10(np.asarray(scales, float).reshape(-1))
    masks = {name: _members(x, rows) for name, rows in _pools().items()}
    names = {name: [r["name"] for r in rows] for name, rows in _pools().items()}
    return [tuple(tuple(n for n, m in zip(names[p], masks[p][i], strict=True) if m) for p in ("all", "moe", "gqa"))
            for i in range(len(x))]


def envelope_at(scale: float) -> Envelope:
    """The envelope at `scale` total parameters: every variable's published range over the models of the
    window (MoE variables over its MoE models, KV-head variables over its GQA models), widened by the margin."""
    from llm_codesign.explore.quality import constants

    models, bounds = _bounds(_keys([scale])[0])
    return Envelope(float(scale), models, bounds, float(constants()["shape"]["depth_log_base"]))


def shape_arrays(cand: dict) -> dict:
    """Envelope variables of explore.design candidate arrays (GQA attention, gated FFN or experts)."""
    h, L = np.asarray(cand["hidden"], float), np.asarray(cand["layers"], float)
    f = {"aspect_ratio": h / L, "layers": L, "head_dim": np.asarray(cand["head_dim"], float),
         "q_per_kv": np.asarray(cand["heads"], float) / np.asarray(cand["kv_heads"], float),
         "kv_heads": np.asarray(cand["kv_heads"], float), "hidden": h}
    E = np.asarray(cand["experts"])
    if np.any(E > 0):
        f |= {"experts": E.astype(float), "top_k": np.asarray(cand["top_k"], float),
              "granularity": granularity(h, cand["expert_inter"]),
              "active_fraction": np.asarray(cand["active_params"], float) / np.asarray(cand["total_params"], float)}
    return f


def violations(env: Envelope, f: dict) -> dict[str, np.ndarray]:
    """Per bound ("aspect_ratio.max", "layers.min", ..., "depth_threshold"), the log-distance beyond it of
    each shape (0 inside). `f`: shape_arrays or features (plus "hidden" for the depth threshold)."""
    out = {}
    for var, b in env.bounds.items():
        if var not in f:
            continue
        x = np.maximum(np.asarray(f[var], float), 1e-12)
        out[f"{var}.min"] = np.maximum(np.log(b.lo / x), 0.0)
        out[f"{var}.max"] = np.maximum(np.log(x / b.hi), 0.0)
    if "hidden" in f:
        out["depth_threshold"] = np.maximum(np.log(depth_threshold(f["hidden"], env.depth_log_base) / np.asarray(f["layers"], float)), 0.0)
    return out


def depth_threshold(hidden, base: float = 3.0):
    """Levine et al. 2020's depth threshold log_base(d_model): below it depth is far more valuable than width."""
    return np.log(np.asarray(hidden, float)) / math.log(base)


def violations_at(f: dict, scales) -> dict[str, np.ndarray]:
    """`violations` with each shape judged against the envelope at its own scale (array `scales`, total params)."""
    keys = _keys(scales)
    n = len(keys)
    out: dict[str, np.ndarray] = {}
    groups: dict[tuple, list[int]] = {}
    for i, key in enumerate(keys):
        groups.setdefault(key, []).append(i)
    for idx in groups.values():
        env = envelope_at(float(np.asarray(scales, float).reshape(-1)[idx[0]]))
        sub = {k: np.asarray(v)[idx] if np.ndim(v) else v for k, v in f.items()}
        for k, v in violations(env, sub).items():
            out.setdefault(k, np.zeros(n))[idx] = v
    return out


def position(env: Envelope, f: dict, i: int | None = None) -> dict:
    """One shape's place in the envelope: inside, or the bounds it lies outside, each with the limit, the
    value, how far (x factor) and the published models that set it. `i` picks a row of array features."""
    pick = (lambda a: float(np.asarray(a, float)[i])) if i is not None else (lambda a: float(a))  # noqa: E731
    out = []
    for key, dist in violations(env, f).items():
        d = pick(dist)
        if d <= 0:
            continue
        if key == "depth_threshold":
            h = pick(f["hidden"])
            lim = float(depth_threshold(h, env.depth_log_base))
            out.append({"bound": key, "value": pick(f["layers"]), "limit": lim, "by": math.exp(d),
                        "set_by": [f"Levine et al. 2020 (arXiv:2006.12467): layers >= log{env.depth_log_base:g}({h:.0f})"]})
            continue
        var, side = key.split(".")
        b = env.bounds[var]
        out.append({"bound": key, "value": pick(f[var]), "limit": b.lo if side == "min" else b.hi, "by": math.exp(d),
                    "set_by": list(b.lo_models if side == "min" else b.hi_models),
                    "published": b.lo_value if side == "min" else b.hi_value})
    out.sort(key=lambda v: -v["by"])
    if out:
        return {"inside": False, "outside": out}
    # inside: the bound it lies nearest (headroom as a factor: 1.2 means 20% short of it)
    room = []
    for var, b in env.bounds.items():
        if var in f:
            x = pick(f[var])
            room += [(x / b.lo, f"{var}.min", x, b.lo), (b.hi / x, f"{var}.max", x, b.hi)]
    if "hidden" in f:
        lim = float(depth_threshold(pick(f["hidden"]), env.depth_log_base))
        room.append((pick(f["layers"]) / lim, "depth_threshold", pick(f["layers"]), lim))
    by, key, x, lim = min(room)
    return {"inside": True, "outside": [], "closest": {"bound": key, "value": x, "limit": lim, "headroom": by}}


def describe(v: dict) -> str:
    """One violation as text: 'aspect_ratio 3072 > max 192 (x16.0; Mixtral-8x7B 128 x1.5)'."""
    if v["bound"] == "depth_threshold":
        return f"layers {v['value']:.0f} < log3(d_model) = {v['limit']:.1f} (Levine et al. 2020)"
    var, side = v["bound"].split(".")
    op = "<" if side == "min" else ">"
    fmt = (lambda x: f"{x:.4g}") if VARIABLES[var][0] == "ratio" else (lambda x: f"{x:.1f}".rstrip("0").rstrip("."))  # noqa: E731
    return f"{var} {fmt(v['value'])} {op} {side} {fmt(v['limit'])} (x{v['by']:.2f}; {', '.join(v['set_by'])}: {fmt(v['published'])})"


# ---------------------------------------------------------------------------------------------------------
# the nearest published model: the reference design judges shapes against, and what the accuracy proxy's band
# counts outside the envelope


def _representable(m: ModelSpec) -> bool:
    """A published shape the design rows can state: full GQA attention in every layer, one FFN kind."""
    return all(isinstance(layer.attn, GQA) and not layer.attn.window and not layer.attn.attn_chunk for layer, _ in m.groups) and (
        all(isinstance(layer.ffn, MoE) for layer, _ in m.groups) or all(isinstance(layer.ffn, DenseFfn) for layer, _ in m.groups))


def _scaled(m: ModelSpec, params: float) -> ModelSpec:
    """`m`'s recipe at `params` total parameters: hidden and every layer count scaled together (its aspect
    ratio), head size, KV heads, experts and top-k kept, query heads and FFN/expert widths following the width."""
    from dataclasses import replace

    s = (params / m.total_params) ** (1 / 3)
    out = m
    for _ in range(4):  # parameters go as layers x hidden^2: a few fixed-point steps land within ~1%
        h = max(int(round(m.hidden * s / 128)) * 128, 128)
        w = h / m.hidden
        groups = []
        for layer, n in m.groups:
            a, f = layer.attn, layer.ffn
            heads = max(int(round(a.heads * w / a.kv_heads)) * a.kv_heads, a.kv_heads)
            a = replace(a, heads=heads)
            f = (replace(f, inter=max(int(round(f.inter * w / 256)) * 256, 256)) if isinstance(f, DenseFfn) else
                 replace(f, expert_inter=max(int(round(f.expert_inter * w / 128)) * 128, 128),
                         shared_inter=int(round(f.shared_inter * w / 128)) * 128))
            groups.append((Layer(a, f), max(int(round(n * s)), 1)))
        out = replace(m, name=f"{m.name} scaled", hidden=h, groups=tuple(groups), layout=())
        s *= (params / out.total_params) ** (1 / 3)
    return out


@lru_cache(maxsize=2)
def _reference_pool(moe: bool) -> tuple[str, ...]:
    from llm_codesign.spec.registry import get_model

    return tuple(r["name"] for r in data()["model"] if bool(r.get("experts")) == moe and _representable(get_model(r["name"])))


def reference_model(params: float, *, baseline: ModelSpec | None, moe: bool, budget_tol: float) -> tuple[ModelSpec, str, str]:
    """The reference's shape, name and basis (`reference`): the baseline, else the nearest published model of the kind,
    scaled to the budget where it lies outside the tolerance."""
    import math

    from llm_codesign.spec.registry import get_model

    if baseline is not None:
        return baseline, baseline.name, "baseline"
    pool = [get_model(n) for n in _reference_pool(moe)]
    near = min(pool, key=lambda x: abs(math.log(x.total_params / params)))
    kind = "MoE" if moe else "dense"
    if abs(near.total_params / params - 1) <= budget_tol:
        return near, near.name, f"no baseline: the nearest published {kind} model"
    m = _scaled(near, params)
    name = f"{near.name} scaled to {m.total_params / 1e9:,.4g}B"
    return (m, name, f"no baseline: the nearest published {kind} model ({near.name}, "
            f"{near.total_params / 1e9:.3g}B), its shape scaled to the budget")
