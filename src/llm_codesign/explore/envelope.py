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
    # a dense FFN's width over d_model at a gated FFN's parameters (3 matrices; a 2-matrix FFN's width x 2/3, as
    # data/accuracy/proxy.toml [granularity]'s 8/3 against 4): published dense models span 2.67 (falcon-40b's GELU 4 x,
    # deepseek-llm-67b) to 5.0 (qwen3-32b); no accuracy term sees it, so only this bound keeps a search near them
    "ffn_ratio": ("ratio", "FFN width / d_model (gated-equivalent)"),
    "experts": ("ratio", "routed experts"),
    "top_k": ("count", "experts per token"),
    "granularity": ("ratio", "granularity G"),
    "active_fraction": ("ratio", "active / total parameters"),
}
# a design within 5% of a limit is "at the edge" (one grid step: 2 layers of 48 are 4%)
EDGE_HEADROOM = 1.05
# a shape exactly on a limit is inside: 9216 / 60 = 153.6 = 1.5 x 102.4 came out 1.3e-16 past it in floating point
BOUND_RTOL = 1e-9
MOE_VARIABLES = ("experts", "top_k", "granularity", "active_fraction")
GQA_VARIABLES = ("q_per_kv", "kv_heads")
DENSE_VARIABLES = ("ffn_ratio",)


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


def ffn_ratio(hidden, inter, gated=True):
    """A dense FFN's width over d_model at a gated FFN's parameters: inter / hidden, x 2/3 for a 2-matrix FFN (the
    proxy's ffn_ratio_gated / ffn_ratio, data/accuracy/proxy.toml [granularity])."""
    g = _bundled("proxy.toml")["granularity"]
    return np.asarray(inter, float) / np.asarray(hidden, float) * np.where(gated, 1.0, g["ffn_ratio_gated"] / g["ffn_ratio"])


def features(row: dict) -> dict:
    """Envelope variables of one shape given as an envelope.toml row (or the same keys)."""
    f = {"aspect_ratio": row["hidden"] / row["layers"], "layers": float(row["layers"]), "head_dim": float(row["head_dim"])}
    if row.get("kv_heads"):
        f |= {"q_per_kv": row["heads"] / row["kv_heads"], "kv_heads": float(row["kv_heads"])}
    if row.get("inter") and not row.get("experts"):
        f["ffn_ratio"] = float(ffn_ratio(row["hidden"], row["inter"], row.get("gated", True)))
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
    dense = [(layer.ffn, n) for layer, n in model.groups if isinstance(layer.ffn, DenseFfn)]
    if moe is None and dense and len({f.gated for f, _ in dense}) == 1:
        # the layers' mean width (nemotron-super-49b's NAS-pruned blocks differ), one FFN kind
        row |= {"inter": int(round(sum(f.inter * n for f, n in dense) / sum(n for _, n in dense))), "gated": dense[0][0].gated}
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
    over: tuple[str, ...] = ()  # the rows the range is drawn over (the window's pool for the variable)


@dataclass(frozen=True)
class Envelope:
    scale: float  # total parameters it was drawn at
    models: tuple[str, ...]  # the published models in the window
    bounds: dict[str, Bound]
    depth_log_base: float  # Levine et al.: layers >= log_base(d_model)
    dense: bool = False  # drawn over the dense models only

    def to_dict(self) -> dict:
        return {"scale": self.scale, "models": list(self.models), "kind": TRUNK_DENSE if self.dense else "every model",
                "ratio_margin": float(data()["policy"]["ratio_margin"]), "count_margin": float(data()["policy"]["count_margin"]), "depth_threshold": f"layers >= log{self.depth_log_base:g}(d_model)",
                "bounds": {k: {"min": b.lo, "max": b.hi, "published_min": b.lo_value, "published_max": b.hi_value,
                               "min_set_by": list(b.lo_models), "max_set_by": list(b.hi_models), "drawn_over": list(b.over)}
                           for k, b in self.bounds.items()}}


# the trunk's variables: a MoE's width and depth follow its active size, not its total (mixtral-8x7b, 46.7B, is 4096 x 32,
# a 13B dense trunk), so a dense search draws them over the dense models; attention geometry (head size, KV heads,
# query heads per KV head) is the same kind of layer in both and stays drawn over every model of the window
TRUNK_VARIABLES = ("aspect_ratio", "layers", "ffn_ratio")
TRUNK_DENSE = "trunk (width, depth, aspect) from dense models; attention geometry from all"
_POOL_NAMES = ("trunk", "all", "moe", "gqa")


def _pools(dense: bool = False) -> dict[str, list[dict]]:
    """The published rows each variable is drawn over (TRUNK_VARIABLES over "trunk": the dense models for a `dense`
    search, every model otherwise; neither a trunk derived from another row's nor one counted in sublayers:
    envelope.toml `trunk`)."""
    rows = data()["model"]
    trunks = [r for r in rows if "trunk" not in r]
    return {"trunk": [r for r in trunks if not r.get("experts")] if dense else trunks, "all": rows,
            "moe": [r for r in rows if r.get("experts")], "gqa": [r for r in rows if r.get("kv_heads")]}


def _members(x: np.ndarray, rows: list[dict]) -> np.ndarray:
    """Which of `rows` lie in the window of each log10 scale `x`: within window_decades, or the min_models nearest
    (ties included) where fewer lie there. (len(x), len(rows)) booleans."""
    pol = data()["policy"]
    d = np.abs(np.asarray(x, float)[:, None] - np.log10([r["total_params"] for r in rows])[None, :])
    near = d <= pol["window_decades"]
    k = int(pol["min_models"])
    nearest = d <= np.partition(d, k - 1, axis=1)[:, k - 1:k] if d.shape[1] > k else np.ones_like(near)
    return np.where((near.sum(axis=1) < k)[:, None], nearest, near)


def _pool_of(var: str) -> str:
    return "moe" if var in MOE_VARIABLES else "gqa" if var in GQA_VARIABLES else "trunk" if var in TRUNK_VARIABLES else "all"


@lru_cache(maxsize=256)
def _bounds(key: tuple[tuple[str, ...], ...], dense: bool = False) -> tuple[tuple[str, ...], dict]:
    """Each variable's published range over the window's models (`key`: the names in the _POOL_NAMES pools),
    widened by the margin; `dense`: no MoE variables."""
    pol = data()["policy"]
    by_name = {r["name"]: r for r in data()["model"]}
    pools = dict(zip(_POOL_NAMES, ([by_name[n] for n in names] for names in key), strict=True))
    bounds, used = {}, []
    for var, (kind, _) in VARIABLES.items():
        if (dense and var in MOE_VARIABLES) or (not dense and var in DENSE_VARIABLES):
            continue  # a dense search has none of the MoE's; the dense FFN's bounds only a dense search (or model)
        pool = pools[_pool_of(var)]
        vals = [(features(r)[var], r["name"]) for r in pool if var in features(r)]
        used += [n for _, n in vals]
        lo_v, hi_v = min(v for v, _ in vals), max(v for v, _ in vals)
        if kind == "ratio":
            lo, hi = lo_v / pol["ratio_margin"], hi_v * pol["ratio_margin"]
        else:
            lo, hi = lo_v * (1 - pol["count_margin"]), hi_v * (1 + pol["count_margin"])
        bounds[var] = Bound(var, lo, hi, lo_v, hi_v, tuple(n for v, n in vals if v == lo_v), tuple(n for v, n in vals if v == hi_v),
                            tuple(n for _, n in vals))
    order = [n for names in key for n in names]
    return tuple(n for n in dict.fromkeys(order) if n in set(used)), bounds


def _keys(scales, dense: bool = False) -> list[tuple[tuple[str, ...], ...]]:
    x = np.log10(np.asarray(scales, float).reshape(-1))
    pools = _pools(dense)
    masks = {name: _members(x, rows) for name, rows in pools.items()}
    names = {name: [r["name"] for r in rows] for name, rows in pools.items()}
    return [tuple(tuple(n for n, m in zip(names[p], masks[p][i], strict=True) if m) for p in _POOL_NAMES)
            for i in range(len(x))]


def envelope_at(scale: float, *, dense: bool = False) -> Envelope:
    """The envelope at `scale` total parameters: every variable's published range over the models of the
    window (MoE variables over its MoE models, KV-head variables over its GQA models), widened by the margin.
    `dense`: the trunk variables over the dense models, no MoE variables (a dense search's; TRUNK_DENSE)."""
    from llm_codesign.explore.quality import constants

    models, bounds = _bounds(_keys([scale], dense)[0], dense)
    return Envelope(float(scale), models, bounds, float(constants()["shape"]["depth_log_base"]), dense)


def shape_arrays(cand: dict) -> dict:
    """Envelope variables of explore.design candidate arrays (GQA attention, gated FFN or experts)."""
    h, L = np.asarray(cand["hidden"], float), np.asarray(cand["layers"], float)
    f = {"aspect_ratio": h / L, "layers": L, "head_dim": np.asarray(cand["head_dim"], float),
         "q_per_kv": np.asarray(cand["heads"], float) / np.asarray(cand["kv_heads"], float),
         "kv_heads": np.asarray(cand["kv_heads"], float), "hidden": h}
    E = np.asarray(cand["experts"])
    if "inter" in cand and not np.any(E > 0):  # design's dense rows: gated FFNs (grid_rows)
        f["ffn_ratio"] = ffn_ratio(h, cand["inter"])
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
        lo, hi = np.log(b.lo / x), np.log(x / b.hi)
        out[f"{var}.min"] = np.where(lo > BOUND_RTOL, lo, 0.0)  # on the limit within BOUND_RTOL: inside
        out[f"{var}.max"] = np.where(hi > BOUND_RTOL, hi, 0.0)
    if "hidden" in f:
        out["depth_threshold"] = np.maximum(np.log(depth_threshold(f["hidden"], env.depth_log_base) / np.asarray(f["layers"], float)), 0.0)
    return out


def depth_threshold(hidden, base: float = 3.0):
    """Levine et al. 2020's depth threshold log_base(d_model): below it depth is far more valuable than width."""
    return np.log(np.asarray(hidden, float)) / math.log(base)


def violations_at(f: dict, scales, *, dense: bool = False) -> dict[str, np.ndarray]:
    """`violations` with each shape judged against the envelope at its own scale (array `scales`, total params)."""
    keys = _keys(scales, dense)
    n = len(keys)
    out: dict[str, np.ndarray] = {}
    groups: dict[tuple, list[int]] = {}
    for i, key in enumerate(keys):
        groups.setdefault(key, []).append(i)
    for idx in groups.values():
        env = envelope_at(float(np.asarray(scales, float).reshape(-1)[idx[0]]), dense=dense)
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
    # inside the widened limits may still be beyond every published model (the margin's allowance): each such bound
    # with the published extreme and who set it (a 70B dense winner at aspect 192 against mixtral-8x7b's 128 x 1.5)
    beyond = []
    for var, b in env.bounds.items():
        if var in f:
            x_ = pick(f[var])
            for side, pub, models, out_ in (("max", b.hi_value, b.hi_models, x_ > b.hi_value), ("min", b.lo_value, b.lo_models, x_ < b.lo_value)):
                if out_:
                    beyond.append({"bound": f"{var}.{side}", "value": x_, "published": pub, "set_by": list(models),
                                   "limit": b.hi if side == "max" else b.lo, "by": x_ / pub if side == "max" else pub / x_,
                                   "drawn_over": list(b.over), "bundled_beyond": bundled_beyond(var, side, pub, dense=env.dense)})
    closest = {"bound": key, "value": x, "limit": lim, "headroom": by}
    if key != "depth_threshold":
        b = env.bounds[key.split(".")[0]]
        side = key.split(".")[1]
        closest |= {"published": b.hi_value if side == "max" else b.lo_value, "set_by": list(b.hi_models if side == "max" else b.lo_models)}
    return {"inside": True, "outside": [], "closest": closest, "at_edge": bool(by < EDGE_HEADROOM), "beyond_published": beyond}


@lru_cache(maxsize=1)
def _bundled_not_rows() -> tuple[tuple[str, float, bool, dict], ...]:
    """The registry's bundled models whose shape no envelope row has (not a row, nor a row's same_shape or
    re-quantisation: llama-3.1-70b-fp8 is llama-3.1-70b's shape): (name, total parameters, MoE, envelope variables).
    Gemma-2-27B (4608 x 46, gated FFN 36864: ffn_ratio 8.0) is bundled but not a row (envelope.toml says why)."""
    from llm_codesign.spec.registry import entries, get_model

    rows = data()["model"]
    known = {r["name"] for r in rows} | {n for r in rows for n in r.get("same_shape", ())}
    shapes = [features(r) for r in rows]
    out = []
    for e in entries():
        if e["name"] in known:
            continue
        row = row_of(get_model(e["name"]))
        f = features(row)
        if not any(f.keys() == g.keys() and all(math.isclose(f[k], g[k], rel_tol=1e-9) for k in f) for g in shapes):
            out.append((e["name"], float(row["total_params"]), bool(row.get("experts")), f))
    return tuple(out)


def bundled_beyond(var: str, side: str, published: float, *, dense: bool) -> list[dict]:
    """Bundled models that are not envelope rows (_bundled_not_rows) and lie beyond the rows' `published` extreme of
    `var` on `side`, of the kind the bound is drawn over (a dense search's trunk variables: dense models): "above every
    published model on ffn_ratio (against qwen3-32b's 5)" was false beside bundled Gemma-2-27B's 8.0 (newc9 #11)."""
    out = []
    for name, total, moe, f in _bundled_not_rows():
        if var in f and not (dense and moe and _pool_of(var) == "trunk") and (f[var] > published if side == "max" else f[var] < published):
            out.append({"name": name, "value": f[var], "total_params": total})
    return out


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


def _scaled(m: ModelSpec, params: float, active: float | None = None) -> ModelSpec:
    """`m`'s recipe at `params` total parameters: hidden and every layer count scaled together (its aspect
    ratio), head size, KV heads, experts and top-k kept, query heads and FFN/expert widths following the width.
    With `active` (a MoE's active budget) the widths and depth scale to the active count instead and the routed
    experts (a multiple of 8, top-k at least) take the total: scaling alone keeps the model's own active fraction
    (mixtral-8x22b's 0.28 put 32.7B active beside a 120B / 5B budget)."""
    from dataclasses import replace

    target = (lambda x: x.active_params) if active is not None else (lambda x: x.total_params)  # noqa: E731
    goal = active if active is not None else params
    s = (goal / target(m)) ** (1 / 3)
    out, best = m, None
    for _ in range(4 if active is None else 8):  # parameters go as layers x hidden^2: a few fixed-point steps land within ~1%
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
        if best is None or abs(math.log(target(out) / goal)) < abs(math.log(target(best) / goal)):
            best = out
        s *= (goal / target(out)) ** (1 / 3)
    if active is None:
        return out
    # the active count: the nearest step's, its depth then trimmed a layer at a time (hidden moves in steps of 128,
    # ~11% of the parameters at 2304), then the experts take the total
    if len(best.groups) == 1:
        layer, n = best.groups[0]
        deeper = [replace(best, groups=((layer, max(n + d, 1)),)) for d in range(-4, 5)]
        best = min(deeper, key=lambda x: abs(math.log(x.active_params / goal)))
    return _with_experts(best, params)


def _with_experts(m: ModelSpec, params: float) -> ModelSpec:
    """`m` with the routed-expert count that brings its total nearest `params` at its active count (each routed expert
    adds its own weights and a router column in every MoE layer; top-k and the expert width kept)."""
    from dataclasses import replace

    moe = [layer.ffn for layer, _ in m.groups if isinstance(layer.ffn, MoE)]
    if not moe:
        return m

    def at(e: int) -> ModelSpec:
        return replace(m, groups=tuple((Layer(layer.attn, replace(layer.ffn, experts=e)) if isinstance(layer.ffn, MoE) else layer, n)
                                       for layer, n in m.groups))

    e0 = moe[0].experts
    per_expert = at(e0 + 1).total_params - m.total_params  # exact: total parameters are linear in the expert count
    e = max(int(round((e0 + (params - m.total_params) / per_expert) / 8)) * 8, moe[0].top_k, 8)
    return at(e)


@lru_cache(maxsize=2)
def _reference_pool(moe: bool) -> tuple[str, ...]:
    from llm_codesign.spec.registry import get_model

    return tuple(r["name"] for r in data()["model"] if bool(r.get("experts")) == moe and _representable(get_model(r["name"])))


def reference_model(params: float, *, baseline: ModelSpec | None, moe: bool, budget_tol: float,
                    active: float | None = None) -> tuple[ModelSpec, str, str]:
    """The reference's shape, name and basis (`reference`): the baseline, else the nearest published model of the kind,
    scaled to the budget where it lies outside the tolerance. With `active` (a MoE search's active budget) nearest is
    in log total plus log active parameters and both are scaled to (_scaled)."""
    import math

    from llm_codesign.spec.registry import get_model

    if baseline is not None:
        return baseline, baseline.name, "baseline"
    pool = [get_model(n) for n in _reference_pool(moe)]
    act = active if moe else None

    def dist(x):
        return abs(math.log(x.total_params / params)) + (abs(math.log(x.active_params / act)) if act else 0.0)

    near = min(pool, key=dist)
    kind = "MoE" if moe else "dense"
    by = " by total and active parameters" if act else ""
    if abs(near.total_params / params - 1) <= budget_tol and (not act or abs(near.active_params / act - 1) <= budget_tol):
        return near, near.name, f"no baseline: the nearest published {kind} model{by}"
    m = _scaled(near, params, act)
    name = f"{near.name} scaled to {m.total_params / 1e9:,.4g}B" + (f" ({m.active_params / 1e9:.3g}B active)" if act else "")
    return (m, name, f"no baseline: the nearest published {kind} model{by} ({near.name}, "
            f"{near.total_params / 1e9:.3g}B" + (f" / {near.active_params / 1e9:.3g}B active" if act else "") + "), its shape scaled to the budget")
