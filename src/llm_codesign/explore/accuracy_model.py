"""Accuracy, the third dimension: published scores of real checkpoints where they exist, a proxy elsewhere.

Published rows (data/accuracy/published.toml) give benchmark scores per checkpoint and precision; a precision's
drop against the model's own best precision is taken from them when both were measured on the same benchmark and
setting. Otherwise the proxy answers: the cited scaling-law loss of explore/quality.py with architecture terms
(GQA/MQA sharing, MLA, MoE granularity, hybrid recurrent mixers, sliding windows, head size) as multipliers on the
effective parameter count, and per-format precision drops computed from the published pairs. Every constant lives
in data/accuracy/proxy.toml (overridable) and every answer says whether it is `published`, `proxy` or `none`.
A model's answers lead with one benchmark at every precision (`headline`) and say so where a precision has no score on it.
"""
from __future__ import annotations

import copy
import math
import tomllib
from functools import lru_cache
from importlib import resources

import numpy as np

from llm_codesign.errors import InputError, read_toml
from llm_codesign.explore import quality
from llm_codesign.explore.envelope import data, describe, envelope_at, features, position, reference_model, row_of
from llm_codesign.spec.kinds import GQA, MLA, MoE, NoMixer, Recurrent


@lru_cache(maxsize=None)  # the bundled files, parsed once (a search asks for every precision's accuracy)
def _read(name: str) -> dict:
    return tomllib.loads(resources.files("llm_codesign").joinpath(f"data/accuracy/{name}").read_text())


def published() -> dict:
    return _read("published.toml")


def proxy_constants(override: str | None = None) -> dict:
    """Proxy terms, with a user's TOML of the same sections and keys laid over them (a copy of the
    bundled terms: the caller's to change)."""
    doc = copy.deepcopy(_read("proxy.toml"))
    if override:
        user = read_toml(override, "accuracy_proxy", "an accuracy-proxy constants")
        for sec, vals in user.items():
            if sec not in doc or not isinstance(vals, dict):
                raise InputError(f"accuracy_proxy.{sec}", vals, "one of the sections " + ", ".join(doc))
            for k, v in vals.items():
                if k not in doc[sec]:
                    raise InputError(f"accuracy_proxy.{sec}.{k}", v, "one of " + ", ".join(doc[sec]))
                if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v):
                    raise InputError(f"accuracy_proxy.{sec}.{k}", v, "a finite number")
                doc[sec][k] = float(v)
    return doc


def base_name(name: str) -> str:
    """The model whose published rows a registry entry shares (its re-packagings map to the original): published.toml's
    [aliases], else the entry's release in the registry (spec.registry.release_of: qwen3-32b-fp8 is qwen3-32b's)."""
    from llm_codesign.spec.registry import release_of

    key = str(name).lower()
    return published()["aliases"].get(key) or release_of(key)


# ---------------------------------------------------------------------------------------------
# Proxy: loss with architecture terms


def _extrapolated(x, lo, hi, growth):
    """Log-distance of `x` beyond the studied range [lo, hi] (0 inside) and the sigma factor it earns there:
    1 + growth x distance (proxy.toml [extrapolation]: never flat outside a term's evidence)."""
    x = np.maximum(np.asarray(x, float), 1e-12)
    d = np.maximum(np.maximum(np.log(lo / x), np.log(x / hi)), 0.0)
    return d, 1.0 + growth * d


def ln_terms(*, kv_ratio=1.0, gqa_fraction=1.0, mla_fraction=0.0, granularity=None, recurrent_fraction=0.0,
             attention_fraction=1.0, window_fraction=0.0, head_dim=128, pc: dict | None = None) -> dict:
    """The architecture terms, each as (ln m, its 1-sigma, the 1-sigma at its studied edge, log-distance beyond
    its studied range: 0 inside). Broadcasts."""
    pc = pc or proxy_constants()
    kv, mla, gr, hy, win, hd = (pc[k] for k in ("kv_sharing", "mla", "granularity", "hybrid", "window", "head_dim"))
    growth = pc["extrapolation"]["growth_per_efold"]
    out = {}
    # GQA/MQA: the credit is capped at the studied ratios (Ainslie et al. 2023 Table 1 reach r = 64, MQA on T5-XXL);
    # beyond, the value stays at the edge's and the spread grows
    r = np.maximum(np.asarray(kv_ratio, float), 1.0)
    d, f = _extrapolated(r, kv["studied_min"], kv["studied_max"], growth)
    log2r = np.log2(np.minimum(r, kv["studied_max"]))
    gqa = np.asarray(gqa_fraction, float)
    s = kv["sigma"] * log2r * gqa
    out["kv_sharing"] = (-kv["coeff"] * log2r * gqa, s * f, s, d * (gqa > 0))
    mla_f = np.asarray(mla_fraction, float)
    z = np.zeros_like(mla_f)
    out["mla"] = (mla["ln_mult"] * mla_f, mla["sigma"] * mla_f, mla["sigma"] * mla_f, z)
    if granularity is not None:
        G0 = np.asarray(granularity, float)
        G = np.maximum(G0, gr["min_granularity"])
        moe = G0 > 0
        ln_g = -np.log((gr["g"] / G ** gr["gamma"] + gr["a"]) / (gr["g"] + gr["a"])) / gr["alpha"]
        d, f = _extrapolated(G, gr["studied_min"], gr["studied_max"], growth)
        s = np.where(moe, gr["sigma"], 0.0)
        out["granularity"] = (np.where(moe, ln_g, 0.0), s * f, s, np.where(moe, d, 0.0))
    rec = np.asarray(recurrent_fraction, float)
    att = np.asarray(attention_fraction, float)
    hybrid = (rec > 0) & (att > 0)
    s = np.where(hybrid, hy["sigma"], np.where(rec > 0, hy["pure_recurrent_sigma"], 0.0))
    d = np.where(hybrid, np.maximum(np.log(np.maximum(rec, 1e-12) / hy["studied_max"]), 0.0), 0.0)
    out["hybrid"] = (np.where(hybrid, hy["ln_mult"] * np.minimum(rec / hy["reference_fraction"], 1.0), 0.0), s * (1.0 + growth * d), s, d)
    wf = np.asarray(window_fraction, float)
    d = np.maximum(np.log(np.maximum(wf, 1e-12) / win["studied_max"]), 0.0)
    out["window"] = (win["ln_mult_per_fraction"] * wf, win["sigma"] * wf * (1.0 + growth * d), win["sigma"] * wf, d)
    # head size: Vaswani et al. 2017 Table 3 (A) prices d_k below `low`; above `high` only the spread is known
    dk = np.asarray(head_dim, float)
    below, above = dk < hd["low"], dk > hd["high"]
    d, f = _extrapolated(dk, hd["studied_min"], hd["studied_max"], growth)
    s = np.where(below | above, hd["sigma"], 0.0)
    out["head_dim"] = (np.where(below, hd["ln_mult_below"], np.where(above, hd["ln_mult_above"], 0.0)), s * f, s, d)
    return out


def ln_multiplier(*, pc: dict | None = None, **arch):
    """ln of the effective-parameter multiplier of the architecture terms and its 1-sigma spread (broadcasts)."""
    t = ln_terms(pc=pc, **arch)
    return sum(v[0] for v in t.values()), np.sqrt(sum(v[1] ** 2 for v in t.values()))


def loss(total_params, active_params, hidden, layers, weight_dtype: str = "bf16", *, tokens=None, c: dict | None = None,
         pc: dict | None = None, with_sigma: bool = False, **arch):
    """Proxy loss (nats/token, lower is better): quality.loss's Chinchilla + MoE + aspect + precision terms with the
    architecture multiplier (ln_multiplier keywords) on the effective parameter count. Broadcasts."""
    c = c or quality.constants()
    s, m = c["scaling"], c["moe"]
    ln_m, sig = ln_multiplier(pc=pc, **arch)
    n_act, n_tot = np.asarray(active_params, float), np.asarray(total_params, float)
    n_eff = n_act ** (1 - m["total_weight"]) * n_tot ** m["total_weight"] * np.exp(ln_m)
    D = s["tokens"] if tokens is None else np.asarray(tokens, float)
    param_term = s["A"] / n_eff ** s["alpha"]
    # the aspect-ratio and precision terms of quality.loss, reused (it adds its own base, subtracted here)
    rest = quality.loss(total_params, active_params, hidden, layers, weight_dtype, c=c)
    base = s["E"] + s["A"] / (n_act ** (1 - m["total_weight"]) * n_tot ** m["total_weight"]) ** s["alpha"] + s["B"] / s["tokens"] ** s["beta"]
    out = s["E"] + param_term + s["B"] / D ** s["beta"] + (rest - base)
    if with_sigma:
        return out, s["alpha"] * param_term * sig
    return out


def loss_terms(total_params, active_params, hidden, layers, weight_dtype: str = "bf16", *, tokens=None, c: dict | None = None,
               pc: dict | None = None, **arch) -> dict:
    """The proxy loss (`loss`) with its uncertain terms apart, for comparing two shapes (quality_delta):
    {"loss", "slope" (nats per unit ln N_eff), "ln": {term: (value, sigma, sigma at the studied edge, distance
    beyond it)} in ln N_eff, "nats": the same for the terms added to the loss}. Besides the architecture terms:
    `moe_rule` (the MoE exponent w's share of ln N_eff, w ln(N_total / N_active), with its assumed spread) and
    `aspect` (the aspect-ratio penalty, extrapolated outside Kaplan's plotted range and below Levine's depth
    threshold). Broadcasts."""
    c = c or quality.constants()
    pc = pc or proxy_constants()
    s, m, sh = c["scaling"], c["moe"], c["shape"]
    growth = pc["extrapolation"]["growth_per_efold"]
    q_width = arch.pop("q_width", None)  # query width / hidden: a position only, no term reads it (proxy.toml [query_heads])
    L = loss(total_params, active_params, hidden, layers, weight_dtype, tokens=tokens, c=c, pc=pc, **arch)
    ln_m = ln_multiplier(pc=pc, **arch)[0]
    n_act, n_tot = np.asarray(active_params, float), np.asarray(total_params, float)
    n_eff = n_act ** (1 - m["total_weight"]) * n_tot ** m["total_weight"] * np.exp(ln_m)
    out = {"loss": L, "slope": s["alpha"] * s["A"] / n_eff ** s["alpha"], "ln": ln_terms(pc=pc, **arch)}
    # the MoE rule: only MoE shapes are judged against the published active fractions
    spread = np.log(n_tot / n_act)
    af = n_act / n_tot
    lo, hi = _active_fraction_range()
    moe = np.asarray(arch.get("granularity") if arch.get("granularity") is not None else 0.0, float) > 0
    d, f = _extrapolated(af, lo, hi, growth)
    d = np.where(moe, d, 0.0)
    s_w = np.where(moe, m["total_weight_sigma"] * spread, 0.0)  # a dense shape's spread is its input embedding: no rule in it
    out["ln"]["moe_rule"] = (m["total_weight"] * spread, s_w * f, s_w, d)
    # aspect ratio and depth (quality.toml [shape])
    h, nl = np.asarray(hidden, float), np.asarray(layers, float)
    A = h / nl
    pen = sh["coeff"] * np.maximum(np.abs(np.log(A / sh["optimum"])) - np.log(sh["flat_band"]), 0.0) ** 2
    d, _ = _extrapolated(A, sh["studied_min"], sh["studied_max"], growth)
    d = np.maximum(d, np.maximum(np.log(np.log(h) / np.log(sh["depth_log_base"]) / nl), 0.0))
    # beyond the studied range the spread grows with the distance, from the penalty's own spread and, where the
    # penalty is nil (a shallow stack in the flat band), from the term's coefficient: never flat there
    out["nats"] = {"aspect": (pen, sh["sigma_rel"] * pen * (1.0 + growth * d) + sh["coeff"] * growth * d, sh["sigma_rel"] * pen, d)}
    _beyond_scale(out, n_tot, c=c, pc=pc)
    # where each shape sits on the axes whose terms are flat over most of the grid (aspect ratio, head size): (ln x, the
    # delta's 1-sigma per e-fold between two shapes, in nats), quality.toml [shape] and proxy.toml [head_dim] spread_per_efold
    loss_now = np.asarray(L, float)
    out["position"] = {"aspect": (np.log(A), sh["spread_per_efold"] * loss_now),
                       "head_dim": (np.log(np.asarray(arch.get("head_dim", 128), float)), pc["head_dim"]["spread_per_efold"] * loss_now)}
    if q_width is not None:  # no term prices the query width: kv_sharing is measured at fixed query heads
        out["position"]["q_width"] = (np.log(np.asarray(q_width, float)), pc["query_heads"]["spread_per_efold"] * loss_now)
    return out


# each term's section holding the scales (total parameters) its source measured it at: studied_scale_min / _max
_SCALE_OF = {"kv_sharing": "kv_sharing", "mla": "mla", "granularity": "granularity", "hybrid": "hybrid", "window": "window",
             "head_dim": "head_dim"}


def scale_ranges(*, c: dict | None = None, pc: dict | None = None) -> dict:
    """{term: (lo, hi)}: the total parameter counts each loss_terms term was measured over (proxy.toml and quality.toml
    studied_scale_*; the MoE rule over the published MoE models, envelope.toml)."""
    c = c or quality.constants()
    pc = pc or proxy_constants()
    out = {name: (pc[sec]["studied_scale_min"], pc[sec]["studied_scale_max"]) for name, sec in _SCALE_OF.items()}
    return out | {"moe_rule": _moe_scale_range(), "aspect": (c["shape"]["studied_scale_min"], c["shape"]["studied_scale_max"])}


def _beyond_scale(out: dict, n_tot, *, c: dict, pc: dict) -> None:
    """loss_terms' terms applied at a scale their source did not measure (a KV-sharing coefficient from <= 11B models
    at 100B): the log-distance beyond the measured totals is added to the term's distance beyond its studied range, so
    it is `extrapolated` and its spread grows by the same rule (proxy.toml [extrapolation]); the sigma at the studied
    edge, the equal-quality test's, is kept. A term that says nothing at a shape (value and spread 0: MHA's KV
    sharing, a head size inside 32-256) is not applied there; the aspect term always is (its flat band is a claim), its
    penalty's spread grown by both distances.
    Sets out["scale"]: {term: {"range": (lo, hi), "beyond": log-distance}}."""
    growth = pc["extrapolation"]["growth_per_efold"]
    sh = c["shape"]
    out["scale"] = {}
    for name, (lo, hi) in scale_ranges(c=c, pc=pc).items():
        unit = "nats" if name == "aspect" else "ln"
        if name not in out[unit]:
            continue
        v, _, se, d = (np.asarray(x, float) for x in out[unit][name])
        ds, _ = _extrapolated(n_tot, lo, hi, growth)
        # a dense shape's "moe_rule" value is its input embedding's share, not a routing rule: applied to MoE shapes only
        on = se > 0 if name == "moe_rule" else (np.abs(v) > 0) | (se > 0)
        ds = ds if name == "aspect" else np.where(on, ds, 0.0)
        dd = d + ds
        if name == "aspect":  # the penalty's spread grows with both distances; the nil penalty's floor (a shallow stack's) with
            # the axis's alone: two flat-band shapes at 100B differ by the position spread (quality_delta), not by their sizes
            sig = sh["sigma_rel"] * v * (1.0 + growth * dd) + sh["coeff"] * growth * d
        else:
            sig = se * (1.0 + growth * dd)
        out[unit][name] = (v, sig, se, dd)
        out["scale"][name] = {"range": (float(lo), float(hi)), "beyond": ds}


@lru_cache(maxsize=1)
def _moe_scale_range() -> tuple[float, float]:
    """The totals of the published MoE models (data/accuracy/envelope.toml): where the MoE rule's active fractions come from."""
    n = [r["total_params"] for r in data()["model"] if r.get("experts")]
    return float(min(n)), float(max(n))


@lru_cache(maxsize=1)
def _active_fraction_range() -> tuple[float, float]:
    """The active fractions published MoE models use (data/accuracy/envelope.toml, every scale)."""
    af = [r["active_params"] / r["total_params"] for r in data()["model"] if r.get("experts")]
    return min(af), max(af)


def quality_delta(cand: dict, ref: dict, *, k: float = 1.0, tol: float = 0.0) -> dict:
    """A shape's loss against a reference's (loss_terms of each) with the delta's own uncertainty: per term, the
    error is shared by both shapes (a term they share at one value cancels), so its part of the delta's sigma is
    what the term's sigma changes between them, at least its sigma times the term's relative change; different
    terms add in quadrature. Two shapes apart on an axis whose term is flat there (aspect ratio inside Kaplan's band,
    head size between low and high: loss_terms' "position") add that term's spread per e-fold times the e-folds
    between them, so different shapes never read +- 0. The constraint: delta <= k x sigma_test + tol x reference loss,
    sigma_test taking each term's sigma at its studied edge (extrapolation and position widen the band, never loosen
    the test).
    Returns arrays: delta, sigma, sigma_test, passes, resolved (sigma <= |delta| + k x sigma_test), and per term the distance beyond its studied range ("beyond", the
    scale's included) and beyond the scales it was measured at ("beyond_scale")."""
    def part(a, b, i):
        va, vb, sa, sb = a[0], b[0], a[i], b[i]
        rel = np.abs(va - vb) / np.maximum(np.maximum(np.abs(va), np.abs(vb)), 1e-300)
        return np.maximum(np.abs(sa - sb), np.maximum(sa, sb) * np.where(np.abs(va - vb) > 0, rel, 0.0))

    slope = ref["slope"]
    var = var_test = 0.0
    for unit, scale in (("ln", slope), ("nats", 1.0)):
        for name, t in cand[unit].items():
            r = ref[unit].get(name, (0.0, 0.0, 0.0, 0.0))
            var = var + (part(t, r, 1) * scale) ** 2
            var_test = var_test + (part(t, r, 2) * scale) ** 2
    for name, (x, s) in cand.get("position", {}).items():
        rx, rs = ref.get("position", {}).get(name, (x, 0.0))
        var = var + (np.maximum(s, rs) * np.abs(x - rx)) ** 2
    delta = np.asarray(cand["loss"], float) - np.asarray(ref["loss"], float)
    sigma, sigma_test = np.sqrt(var), np.sqrt(var_test)
    passes = delta <= k * sigma_test + tol * np.asarray(ref["loss"], float)
    # passing says the loss is within the test's band; whether the proxy can tell is another question: a row is
    # resolved when the delta's whole error (sigma: flat axes, extrapolation) is no wider than the delta and the band
    # together, else its "equal quality" is a band 5-15x narrower than its error (modelling-notes, designq)
    resolved = sigma <= np.abs(delta) + k * sigma_test
    beyond = {name: np.broadcast_to(t[3], delta.shape) for unit in ("ln", "nats") for name, t in cand[unit].items()}
    if "q_width" in cand.get("position", {}) and "q_width" in ref.get("position", {}):  # no source measured it: extrapolated
        beyond["q_width"] = np.broadcast_to(np.abs(cand["position"]["q_width"][0] - ref["position"]["q_width"][0]), delta.shape)
    beyond_scale = {name: np.broadcast_to(v["beyond"], delta.shape) for name, v in cand.get("scale", {}).items()}
    return {"delta": delta, "sigma": sigma, "sigma_test": sigma_test, "passes": passes, "resolved": resolved, "beyond": beyond,
            "beyond_scale": beyond_scale}


def delta_terms(cand: dict, ref: dict, *, active, ref_active, c: dict | None = None, pc: dict | None = None) -> dict:
    """Why a shape's loss differs from a reference's (loss_terms of each; `active`: the shape's active parameters,
    arrays): {"nats": {term: its part of the delta}, "flat": {axis: the shapes differ on it where its term is flat}}.
    The effective-parameter terms (active parameters "params", the MoE rule, KV sharing, head size, granularity, ...)
    add in ln N_eff: each takes the delta of the parameter term in proportion to its own ln change (the secant slope
    of A / N_eff^alpha between the two, the tangent `slope` where they cancel), so the parts sum to the delta exactly;
    the aspect penalty is its own nats. "flat": aspect ratio inside Kaplan's flat band (quality.toml [shape]
    optimum / flat_band .. optimum x flat_band) or head size inside [low, high] (proxy.toml [head_dim]) on both
    shapes at different values: the term reads 0 there because the proxy cannot tell them apart, not because it
    measured no difference (quality_delta's band carries its spread per e-fold)."""
    c = c or quality.constants()
    pc = pc or proxy_constants()
    dln = {"params": np.log(np.asarray(active, float) / float(ref_active))}
    for name, t in cand["ln"].items():
        dln[name] = np.asarray(t[0], float) - np.asarray(ref["ln"].get(name, (0.0,))[0], float)
    # where neither shape is MoE (the rule's sigma nil on both: loss_terms) its ln(total / active) is the input embedding's
    # share of the parameters, not a routing choice: said with the parameters (a dense row read "total/active -0.00%")
    if "moe_rule" in dln:
        dense = (np.asarray(cand["ln"]["moe_rule"][2], float) == 0) & (np.asarray(ref["ln"].get("moe_rule", (0, 0, 0))[2], float) == 0)
        dln["params"] = dln["params"] + np.where(dense, dln["moe_rule"], 0.0)
        dln["moe_rule"] = np.where(dense, 0.0, dln["moe_rule"])
    nats = {name: np.asarray(t[0], float) - np.asarray(ref["nats"].get(name, (0.0,))[0], float) for name, t in cand["nats"].items()}
    delta = np.asarray(cand["loss"], float) - np.asarray(ref["loss"], float)
    total = sum(dln.values())
    d_param = delta - sum(nats.values())  # the parameter term's own change (one precision and token count: theirs cancel)
    safe = np.where(np.abs(total) > 1e-12, total, 1.0)
    secant = np.where(np.abs(total) > 1e-12, -d_param / safe, np.asarray(ref["slope"], float))
    out = {name: -secant * v for name, v in dln.items()} | nats
    sh, hd = c["shape"], pc["head_dim"]
    la, lr = np.asarray(cand["position"]["aspect"][0], float), float(np.ravel(ref["position"]["aspect"][0])[0])
    band = (sh["optimum"] / sh["flat_band"], sh["optimum"] * sh["flat_band"])
    in_band = lambda x: (x >= np.log(band[0])) & (x <= np.log(band[1]))  # noqa: E731
    ha, hr = np.asarray(cand["position"]["head_dim"][0], float), float(np.ravel(ref["position"]["head_dim"][0])[0])
    in_hd = lambda x: (x >= np.log(hd["low"])) & (x <= np.log(hd["high"]))  # noqa: E731
    flat = {"aspect": in_band(la) & in_band(np.asarray(lr)) & (np.abs(la - lr) > 1e-9),
            "head_dim": in_hd(ha) & in_hd(np.asarray(hr)) & (np.abs(ha - hr) > 1e-9)}
    rng = {"aspect": band, "head_dim": (float(hd["low"]), float(hd["high"]))}
    if "q_width" in cand["position"] and "q_width" in ref["position"]:  # flat everywhere: no range (proxy.toml [query_heads])
        qa, qr = np.asarray(cand["position"]["q_width"][0], float), float(np.ravel(ref["position"]["q_width"][0])[0])
        flat["q_width"], rng["q_width"] = np.abs(qa - qr) > 1e-9, None
    return {"nats": out, "flat": flat, "flat_range": rng}


def query_heads(model) -> float | None:
    """A ModelSpec's query heads, the geometric mean over its attention layers (GQA and MLA); None without attention."""
    n = [(k, layer.attn.heads) for layer, k in model.groups if isinstance(layer.attn, (GQA, MLA))]
    return float(2.0 ** (sum(k * math.log2(h) for k, h in n) / sum(k for k, _ in n))) if n else None


def query_width(model) -> float | None:
    """A ModelSpec's query width over its hidden size (query heads x head size / hidden: 1 for Llama, 64 x 128 / 5120 = 1.6
    for qwen3-32b), the geometric mean over its attention layers (GQA and MLA, the query-key width); None without
    attention. The proxy's position on the query heads' axis (loss_terms): Chen et al. 2025's H at fixed head size and
    hidden, while a head-count change at a fixed width is the head size's axis (Vaswani et al. Table 3 (A), h x d_k =
    d_model), so counting heads would move both positions for one change."""
    n = [(k, layer.attn.heads * layer.attn.head_dim / model.hidden) for layer, k in model.groups if isinstance(layer.attn, (GQA, MLA))]
    return float(2.0 ** (sum(k * math.log2(w) for k, w in n) / sum(k for k, _ in n))) if n else None


def model_features(model, ref_heads: float | None = None) -> dict:
    """The proxy's architecture keywords for a ModelSpec (layer-count weighted over its layer groups). `ref_heads`: a
    reference's query heads, the KV-sharing ratio then ref_heads / kv_heads (the KV-head change at the query heads
    Ainslie et al. and DeepSeek-V2 D.1 held fixed; proxy.toml [query_heads])."""
    mixers = gqa = mla = rec = win = 0
    log2r = 0.0
    hd_sum = 0.0
    gran = None
    for layer, n in model.groups:
        a, f = layer.attn, layer.ffn
        if not isinstance(a, NoMixer):
            mixers += n
        if isinstance(a, GQA):
            gqa += n
            log2r += n * math.log2(max((ref_heads or a.heads) / max(a.kv_heads, 1), 1.0))
            hd_sum += n * a.head_dim
            win += n if a.window else 0
        elif isinstance(a, MLA):
            mla += n
            hd_sum += n * a.head_dim
        elif isinstance(a, Recurrent):
            rec += n
        if isinstance(f, MoE) and f.expert_inter:
            pc = proxy_constants()["granularity"]
            ratio = pc["ffn_ratio_gated"] if f.gated else pc["ffn_ratio"]
            gran = ratio * model.hidden / f.expert_inter
    mixers = max(mixers, 1)
    attn = gqa + mla
    return {"kv_ratio": 2.0 ** (log2r / gqa) if gqa else 1.0, "gqa_fraction": gqa / mixers, "mla_fraction": mla / mixers,
            "granularity": gran, "recurrent_fraction": rec / mixers, "attention_fraction": attn / mixers,
            "window_fraction": win / mixers, "head_dim": hd_sum / attn if attn else 128.0}


def releases_of(model) -> tuple[tuple[str, ...], str]:
    """The registry releases whose facts (training tokens, trained weight format) `model` shares, and how they were found:
    a bundled name's own release ("name", base_name); for any other model (a config.json, a Hub id outside the registry)
    the releases of the bundled entries with its shape ("shape", spec.registry.shape_releases: Qwen3-30B-A3B-FP8's
    config.json is qwen3-30b-a3b's shape); ((), "") where neither holds."""
    from llm_codesign.spec.registry import is_bundled, shape_releases

    if is_bundled(model.name):
        return (base_name(model.name),), "name"
    rel = shape_releases(model)
    return rel, "shape" if rel else ""


def training_tokens(model) -> dict | None:
    """The pre-training tokens the proxy's data term takes for `model`: the one decision estimate, compare, design's
    baseline and reference, the API and the page all read (a bundled name took published.toml's count, the same shape's
    config.json the default: qwen3-30b-a3b 1.9211 against 1.9394 nats, newc11 #6). The developer's stated count of its
    release (published.toml [tokens]), found by name or, outside the registry, by shape where every release of that shape
    states one and the same count; None: quality.toml's assumed count. {tokens, source, url, release, by}."""
    rel, how = releases_of(model)
    ts = [published()["tokens"].get(r) for r in rel]
    if not ts or any(t is None for t in ts) or len({float(t["tokens"]) for t in ts}) > 1:
        return None
    return {"tokens": float(ts[0]["tokens"]), "source": ts[0]["source"], "url": ts[0]["url"], "release": rel[0], "by": how}


def tokens_of(model) -> float | None:
    """training_tokens' count alone (None: the assumed default)."""
    t = training_tokens(model)
    return t["tokens"] if t else None


def model_loss(model, weight_dtype: str | None = None, *, c: dict | None = None, pc: dict | None = None,
               known_tokens: bool = False, with_sigma: bool = False):
    """Proxy loss of a ModelSpec; known_tokens uses its release's stated training tokens (training_tokens) where published."""
    f = model_features(model)
    tok = tokens_of(model) if known_tokens else None
    r = loss(model.total_params, model.active_params, model.hidden, model.num_layers,
             weight_dtype or model.default_precision.weight.name, tokens=tok, c=c, pc=pc, with_sigma=with_sigma, **f)
    return (float(r[0]), float(r[1])) if with_sigma else float(r)


def extrapolated(terms: dict, i: int | None = None) -> list[str]:
    """The loss_terms outside their studied ranges (of row `i` for arrays)."""
    pick = (lambda v: float(np.asarray(v).reshape(-1)[i if i is not None else 0]))  # noqa: E731
    return sorted(name for unit in ("ln", "nats") for name, t in terms[unit].items() if pick(t[3]) > 0)


def model_terms(model, weight_dtype: str | None = None, *, c: dict | None = None, pc: dict | None = None, tokens=None,
                ref_heads: float | None = None) -> dict:
    """loss_terms of a ModelSpec (its own weight format unless given; `tokens`: its training tokens, else the default;
    `ref_heads`: the query heads of the shape it is compared with, model_features')."""
    f = model_features(model, ref_heads)
    return loss_terms(model.total_params, model.active_params, model.hidden, model.num_layers,
                      weight_dtype or model.default_precision.weight.name, tokens=tokens, c=c, pc=pc, q_width=query_width(model), **f)


def shape_terms(cand: dict, weight_dtype: str, c: dict | None = None, pc: dict | None = None, *, ref_heads: float | None = None,
                tokens=None) -> dict:
    """loss_terms of explore.design candidate arrays (GQA attention, gated FFN or experts); `ref_heads`: the reference's
    query heads, the KV-sharing term then read at them (model_features); `tokens`: their training tokens (the reference's,
    so the data term cancels in quality_delta), else the default."""
    return loss_terms(cand["total_params"], cand["active_params"], cand["hidden"], cand["layers"], weight_dtype, tokens=tokens,
                      c=c, pc=pc, **_shape_arch(cand, pc or proxy_constants(), ref_heads))


def _shape_arch(cand: dict, pc: dict, ref_heads: float | None = None) -> dict:
    moe = np.asarray(cand["experts"]) > 0
    ei = np.maximum(np.asarray(cand["expert_inter"], float), 1.0)
    gran = np.where(moe, pc["granularity"]["ffn_ratio_gated"] * np.asarray(cand["hidden"], float) / ei, 0.0)
    # Ainslie et al. 2023 and DeepSeek-V2 D.1 remove KV heads at fixed query heads: a shape's KV heads are read at the
    # reference's query heads, and its own query width (heads x head size / hidden: query_width) is a position the proxy is
    # flat on (loss_terms)
    heads = np.asarray(cand["heads"], float)
    q = heads if ref_heads is None else np.full_like(heads, float(ref_heads))
    return {"kv_ratio": q / np.asarray(cand["kv_heads"], float), "granularity": gran, "head_dim": cand["head_dim"],
            "q_width": heads * np.asarray(cand["head_dim"], float) / np.asarray(cand["hidden"], float)}


def envelope_judgement(model, weight_dtype: str, *, pc: dict) -> dict | None:
    """Where `model` lies outside the published envelope at its scale (explore.envelope; None inside): the bounds it
    breaks (envelope.position) and its proxy loss against the published model of its kind nearest its size, taken as it
    is within 10% of the size, else its shape scaled to it (envelope.reference_model, design's reference without a
    baseline), with that difference's band (quality_delta), in nats: what lint's R8 reports, and what widens
    accuracy_of's band there."""
    n = float(model.total_params)
    pos = position(envelope_at(n, dense=not model.is_moe), features(row_of(model)) | {"hidden": float(model.hidden)})  # design's envelope
    if pos["inside"]:
        return None
    ref, name, _ = reference_model(n, baseline=None, moe=model.is_moe, budget_tol=0.1)
    tok = tokens_of(ref)  # both at the reference's training tokens, as design judges its shapes (the data term cancels)
    ref_terms = model_terms(ref, weight_dtype, pc=pc, tokens=tok)
    t = model_terms(model, weight_dtype, pc=pc, ref_heads=query_heads(ref), tokens=tok)
    q = quality_delta(t, ref_terms)
    return {"outside": pos["outside"], "reference": name, "reference_loss": float(np.ravel(ref_terms["loss"])[0]),
            "delta": float(np.ravel(q["delta"])[0]), "sigma": float(np.ravel(q["sigma"])[0]), "extrapolated": extrapolated(t)}


# ---------------------------------------------------------------------------------------------
# Published scores and precision drops


def rows_of(name: str) -> list[dict]:
    b = base_name(name)
    return [r for r in published()["score"] if r["model"] == b]


def headline(name: str) -> dict | None:
    """The one benchmark a model's accuracy row shows at every precision: of its published (benchmark, setting)
    pairs, the one scored at the most precisions, the first in published.toml among equals (so the same checkpoint
    line and harness across precisions: Llama-3.1-70B's BF16 MMLU, Meta's base model, beside FP8's OpenLLM v1
    instruct average read as FP8 the more accurate). {benchmark, setting, scores: {precision: (score, checkpoint,
    source, url)}}; None without published rows."""
    keys: dict[tuple[str, str], dict] = {}
    for r in rows_of(name):
        for k, v in r["scores"].items():
            keys.setdefault((k, r["setting"]), {}).setdefault(r["precision"], (v, r["checkpoint"], r["source"], r["url"]))
    if not keys:
        return None
    # a recovery table ("(% of BF16)", BF16 recorded as 100) is a drop, not a score: it leads only where nothing else is
    # published, so Llama-3.1-8B's BF16 row reads MMLU 66.7, not "OpenLLM v1 (% of BF16) 100" (max keeps the first of equals)
    (bench, setting), per = max(keys.items(), key=lambda kv: ("(% of " not in kv[0][0], len(kv[1])))
    return {"benchmark": bench, "setting": setting, "scores": per}


def _pair_drops(lo: list[dict], hi: list[dict]) -> list[float]:
    """Per-benchmark relative drops (percent) of rows `lo` against rows `hi` on the same benchmark and setting."""
    ref = {(r["setting"], k): v for r in hi for k, v in r["scores"].items()}
    return [100.0 * (ref[(r["setting"], k)] - v) / ref[(r["setting"], k)]
            for r in lo for k, v in r["scores"].items() if (r["setting"], k) in ref and ref[(r["setting"], k)] > 0]


def _cls(fmt: str, pc: dict) -> str:
    return pc["precision"]["same_as"].get(fmt, fmt)


# what each weight-format class's published pairs quantise: a W4A16 drop (weights only) is not a W4A4 one
SCHEMES = {"bf16": "W16A16", "fp8": "W8A8 (FP8 weights and activations)", "nvfp4": "W4A4 (NVFP4 weights and activations)",
           "mxfp4": "W4A16 (MXFP4 weights, BF16 activations)", "int4": "W4A16 (INT4 weights, BF16 activations)",
           "int8": "W8A8 (INT8 weights and activations)"}


@lru_cache(maxsize=8)
def _format_drops(override: str | None) -> dict:
    pc = proxy_constants(override)
    by_model: dict[str, dict[str, list[dict]]] = {}
    for r in published()["score"]:
        by_model.setdefault(r["model"], {}).setdefault(_cls(r["precision"], pc), []).append(r)
    pairs: dict[tuple[str, str], list[tuple[str, float]]] = {}
    for model, per in by_model.items():
        for hi, lo in (("bf16", "fp8"), ("bf16", "nvfp4"), ("fp8", "nvfp4"), ("bf16", "mxfp4"), ("bf16", "int4")):
            if hi in per and lo in per:
                d = _pair_drops(per[lo], per[hi])
                if d:
                    pairs.setdefault((hi, lo), []).append((model, float(np.mean(d))))
    out = {"bf16": {"drop_pct": 0.0, "sigma_pct": 0.0, "scheme": SCHEMES["bf16"], "basis": ["reference"]}}
    fp8 = [v for _, v in pairs.get(("bf16", "fp8"), [])]
    if fp8:
        out["fp8"] = {"drop_pct": float(np.mean(fp8)), "sigma_pct": float(np.std(fp8)), "scheme": SCHEMES["fp8"],
                      "basis": [f"{m}: {v:.2f}% vs bf16" for m, v in pairs[("bf16", "fp8")]]}
    for lo in ("nvfp4", "mxfp4", "int4"):
        est = [(m, v) for m, v in pairs.get(("bf16", lo), [])]
        if "fp8" in out:
            est += [(m, out["fp8"]["drop_pct"] + v) for m, v in pairs.get(("fp8", lo), [])]
        if est:
            vals = [v for _, v in est]
            out[lo] = {"drop_pct": float(np.mean(vals)), "sigma_pct": float(np.std(vals)), "scheme": SCHEMES[lo],
                       "basis": [f"{m}: {v:.2f}% vs bf16" for m, v in est]}
    # a priced format with no published pair: a labelled proxy band (proxy.toml [format_band], its sources there)
    fb = pc["format_band"]
    if "mxfp4" not in out and "nvfp4" in out:
        nv = out["nvfp4"]
        out["mxfp4"] = {"drop_pct": nv["drop_pct"] + fb["mxfp4_gap_pct"],
                        "sigma_pct": math.hypot(nv["sigma_pct"], fb["mxfp4_gap_sigma_pct"]),
                        "scheme": "W4A4 (MXFP4 weights and activations, post-training)", "band": True,
                        "basis": [f"unmeasured: NVFP4's published {nv['drop_pct']:.2f}% plus MXFP4's gap to NVFP4, about "
                                  f"{fb['mxfp4_gap_pct']:g}% (Chhugani et al. 2026, arXiv:2603.08713, abstract), ± "
                                  f"{fb['mxfp4_gap_sigma_pct']:g}% (the gap closes to < 1% with better scaling, same paper)"]}
    if "int8" not in out:
        out["int8"] = {"drop_pct": fb["int8_drop_pct"], "sigma_pct": fb["int8_drop_sigma_pct"], "band": True,
                       "scheme": "W8A8 (INT8 weights and activations, post-training)",
                       "basis": [f"unmeasured: W8A8-INT's 1-3% degradation over the Llama-3.1 family (Kurtic et al. 2025, "
                                 f"arXiv:2411.02355, abstract), {fb['int8_drop_pct']:g} ± {fb['int8_drop_sigma_pct']:g}%"]}
    return out


def format_drops(override: str | None = None) -> dict:
    """Relative accuracy drop (percent, vs BF16) per weight-format class, from the published pairs: per model the
    mean over shared benchmarks, then the mean over models; sigma is the spread between models; `scheme` what
    the class quantises (NVFP4's pairs are W4A4, INT4's W4A16); `band`: True where no pair is published and the drop is
    a proxy band (proxy.toml [format_band]: post-training MXFP4), its `basis` naming its source."""
    return _format_drops(override)


def reference_precision(model) -> str:
    """The precision a model's accuracy drop is measured against (reference_basis says why)."""
    return reference_basis(model)[0]


def reference_basis(model) -> tuple[str, str]:
    """(the model's best precision, why): its release's trained weight format. A bundled entry's base checkpoint's native
    format (DeepSeek-V3's fp8_block, gpt-oss's mxfp4, llama-3.1-70b-fp8's bf16); another model's (a config.json, a Hub
    id) its own format where it is the trained format of a bundled release of its shape (DeepSeek-V3's config.json:
    fp8_block), else those releases' format where they agree; else BF16, the unquantized weights: a quantization_config
    (GPTQ, AWQ, FP8) is read as post-training quantization of them, not as the model's reference (an INT4 GPTQ
    checkpoint read "accuracy drop vs int4 (reference) 0.00%", newc11 #1)."""
    from llm_codesign.spec.registry import get_model

    own = model.default_precision.weight.name
    rel, how = releases_of(model)
    if how == "name":
        b = rel[0]
        if b != model.name.lower():
            try:
                return get_model(b).default_precision.weight.name, f"{b}'s weights, the release this entry packages"
            except InputError:
                pass
        return own, "its own weights"
    refs = {r: get_model(r).default_precision.weight.name for r in rel}
    # a shape is not an identity (Qwen2.5-72B has Qwen2-72B's): what it settles is the format the shape was trained in
    if own in refs.values():
        return own, f"the trained format of {next(r for r, f in refs.items() if f == own)}, whose shape it has"
    if len(set(refs.values())) == 1:
        return next(iter(refs.values())), f"the trained format of {' and '.join(refs)}, whose shape it has"
    if own == "bf16":
        return "bf16", "its own weights"
    why = "its releases' formats differ" if refs else "no bundled model has its shape"
    return "bf16", f"the unquantized weights its {own} checkpoint quantizes (post-training assumed: {why})"


def accuracy_of(model, precision=None, *, pc_override: str | None = None) -> dict:
    """Accuracy of `model` at `precision` (a Precision or a weight-format name): published scores where they exist,
    the drop against the model's best precision (published pairs, else the proxy's format drops), the proxy loss,
    and `source` = published | proxy | none."""
    pc = proxy_constants(pc_override)
    fmt = precision.weight.name if hasattr(precision, "weight") else str(precision or model.default_precision.weight.name)
    ref, ref_why = reference_basis(model)
    rows = rows_of(model.name)
    here = [r for r in rows if r["precision"] == fmt]
    here, other = _as_priced(here, precision, model)
    requant = _requantised(fmt, ref) and not here
    # no score, no pair, and same_as would claim 0.00% ± 0.00%: a re-quantisation leaves the drop unknown, said below
    drop, sigma, drop_source, basis = (None, None, None, "") if requant else _drop(fmt, ref, rows, here, pc=pc, pc_override=pc_override)
    loss_v, loss_s = model_loss(model, fmt, pc=pc, known_tokens=True, with_sigma=True)
    source = "published" if here else ("proxy" if drop is not None else "none")
    scores = [{"benchmark": k, "score": v, "setting": r["setting"], "checkpoint": r["checkpoint"], "source": r["source"],
               "url": r["url"]} for r in here for k, v in r["scores"].items()]
    head = headline(model.name)
    # the headline benchmark first (what estimate's row and a frontier point show), the rest in published order
    if head:
        scores.sort(key=lambda x: (x["benchmark"], x["setting"]) != (head["benchmark"], head["setting"]))
    short = _short(source, scores, drop, sigma, drop_source=drop_source, basis=basis)
    out = {"source": source, "precision": fmt, "reference_precision": ref, "scores": scores,
           "relative_drop_pct": drop, "drop_uncertainty_pct": sigma, "drop_source": drop_source, "drop_basis": basis,
           "proxy_loss": loss_v, "proxy_loss_uncertainty": loss_s, "short": short,
           "drop_band": drop_source == "proxy" and basis.startswith("proxy band"), "reference_basis": ref_why,
           "training_tokens": training_tokens(model)}
    ex = extrapolated(model_terms(model, fmt, pc=pc))
    if ex:  # terms outside their studied ranges: the loss and its spread are extrapolations there
        out["extrapolated"] = ex
    out |= _outside_envelope(model, fmt, loss_s, pc=pc)
    if requant:
        out["drop_unmeasured"] = (f"a per-tensor re-quantisation of the {ref} checkpoint (128x128 weight blocks); no per-tensor "
                                  "FP8 score of a block-FP8-trained model is published, and DeepSeek-V3 trained with block scales "
                                  "because one scale per tensor loses its outlier channels (arXiv:2412.19437 sec. 3.3.1): its drop "
                                  "is unmeasured, not 0")
        out["note"] = f"no accuracy source for {model.name} at {fmt}: {out['drop_unmeasured']}"
    elif source == "none":
        out["note"] = (f"no accuracy source for {model.name} at {fmt}: no published score and no published precision "
                       f"delta from {ref} to {fmt}; the proxy loss covers the architecture only")
    elif source == "proxy" and not rows:
        out["note"] = f"no published score for {model.name}; the drop is the proxy's (published format deltas)"
    elif other:
        out["note"] = other
    if said := _provenance(model, fmt, ref, ref_why, out["training_tokens"]):
        out["note"] = f"{out['note']}; {said}" if out.get("note") else said
    if head:
        out |= _headline_fields(head, out, fmt=fmt, ref=ref)
    return out


def _as_priced(here: list[dict], precision, model=None) -> tuple[list[dict], str]:
    """(the published rows at the priced weight format whose checkpoint is the one priced, a note on those left out): a
    row whose checkpoint the registry holds (spec.registry.registered) with its attention in another format than
    `precision`'s (a Precision; a format name checks nothing) is another recipe's score, not this answer's (newc12 #1:
    deepseek-r1-mxfp4 at NVFP4, every projection NVFP4 as no NVFP4 checkpoint of its release exists, quoted
    nvidia/DeepSeek-R1-NVFP4's, which keeps q/kv BF16). A checkpoint the registry does not hold is taken as
    published. A checkpoint keeping only some attention projections wider (ModelSpec.attn_kept_partial: its input
    projections in Precision.attn_in, or a smaller part at the linear format) is this answer's recipe where the formats
    match and `model` launches it (spec.plan.launched_checkpoint), else another's."""
    from llm_codesign.spec.plan import launched_checkpoint
    from llm_codesign.spec.registry import registered

    if not hasattr(precision, "attn") or not here:
        return here, ""
    kept, left = [], []
    for r in here:
        ck = registered(r["checkpoint"])
        other = ck is not None and (ck.default_precision.attn != precision.attn or ck.default_precision.attn_in != precision.attn_in or (
            ck.attn_kept_partial and model is not None and launched_checkpoint(model, precision).name != ck.name))
        (left if other else kept).append(r)
    if not left:
        return here, ""
    ck = left[0]["checkpoint"]
    attn = registered(ck)
    part = attn.attn_kept_partial and attn.default_precision.attn == precision.attn
    attn = (f"{', '.join(attn.attn_kept_partial)} in bf16" if part else f"attention projections in {attn.default_precision.attn.name}")
    return kept, (f"the drop is the proxy's, not a published recipe's: {ck}'s published {precision.weight.name} scores are "
                  f"of its {attn}, priced here in "
                  f"{(precision.attn_in if part else precision.attn).name} (no {precision.weight.name} checkpoint of this model in the registry)")


def _provenance(model, fmt: str, ref: str, why: str, tok: dict | None) -> str:
    """What accuracy_of's answer takes from beyond this checkpoint, in words ('' where a bundled name answers of itself):
    the weights priced at the reference format of a quantized checkpoint (the original's, not its own), the reference
    of a model outside the registry, and training tokens found by its shape (releases_of)."""
    own = model.default_precision.weight.name
    said = []
    if fmt == ref != own:
        said.append(f"{fmt} prices the {'unquantized ' if fmt == 'bf16' else ''}original, not this {own} checkpoint")
    elif ref != own and releases_of(model)[1] != "name":  # a bundled entry's release is said by its row's "vs"
        said.append(f"the drop is against {ref}, {why}")
    if tok and tok["by"] == "shape":
        shape = "" if "whose shape" in "".join(said) else ", whose shape it has"
        said.append(f"its proxy loss at {tok['release']}'s {tok['tokens'] / 1e12:g}T training tokens{shape} ({tok['source']})")
    return "; ".join(said)


def _drop(fmt: str, ref: str, rows: list, here: list, *, pc: dict, pc_override: str | None) -> tuple:
    """accuracy_of's drop of `fmt` against `ref`: (drop %, 1 sigma, its source, its basis in words); (None, None, None, "")
    where nothing gives one. Its reference's class at no score of its own is the reference; then published pairs; then the
    proxy's format drops (a proxy band where no pair is published behind the format)."""
    if _cls(fmt, pc) == _cls(ref, pc) and (fmt == ref or not here):
        return 0.0, 0.0, "reference", f"{fmt} is this model's reference precision"
    d = _pair_drops(here, [r for r in rows if r["precision"] == ref]) if here else []
    if d:
        return float(np.mean(d)), float(np.std(d)), "published", f"mean over {len(d)} published benchmark(s) against {ref}"
    fd = format_drops(pc_override)
    a, b = fd.get(_cls(fmt, pc)), fd.get(_cls(ref, pc))
    trained = b is not None and b.get("band")
    if trained:  # the reference is the model's trained format (gpt-oss's MXFP4), never a PTQ
        b = {"drop_pct": 0.0, "sigma_pct": 0.0}
    if a is None or b is None:
        return None, None, None, ""
    basis = (f"published format drops: {fmt} {a['drop_pct']:.2f}% and " +
             (f"{ref} this model's trained format" if trained else f"{ref} {b['drop_pct']:.2f}% vs bf16"))
    if a.get("band"):  # no published pair behind it: say so, and what it rests on
        basis = f"proxy band, {a['basis'][0]}; {ref} {b['drop_pct']:.2f}% vs bf16"
    return max(a["drop_pct"] - b["drop_pct"], 0.0), math.hypot(a["sigma_pct"], b["sigma_pct"]), "proxy", basis


def _requantised(fmt: str, ref: str) -> bool:
    """`fmt` is a coarser re-quantisation of a block-scaled checkpoint: per-tensor FP8 weights from DeepSeek's 128x128
    block-FP8 ones. proxy.toml's same_as files both under FP8 for the format drops (a BF16 model's published FP8 pairs);
    between the two no pair is published in either direction."""
    return (fmt, ref) == ("fp8", "fp8_block")


def _short(source: str, scores: list, drop, sigma, *, drop_source, basis: str) -> str:
    """accuracy_of's few words (a frontier point's, the plot legend's): the published score, or the proxy's drop labelled
    as a proxy band where no published pair is behind it."""
    if source == "published":
        s0 = scores[0]
        return f"{s0['benchmark']} {s0['score']:g}" + (f", -{drop:.1f}%" if drop else "")
    if source == "proxy" and (drop_source == "reference" or not (drop or sigma)):  # BF16 of gpt-oss's MXFP4: an exact upcast
        return "best precision (proxy)"
    if source == "proxy":
        return f"-{drop:.1f}±{sigma:.1f}% " + ("(proxy band, unmeasured)" if basis.startswith("proxy band") else "(proxy)")
    return "none"


def _headline_fields(head: dict, acc: dict, *, fmt: str, ref: str) -> dict:
    """accuracy_of's `headline` (the model's one benchmark, with the reference precision's score and citation) and, where
    `fmt` has no score on it, a `note` saying so (after any note `acc` has)."""
    out = {"headline": {"benchmark": head["benchmark"], "setting": head["setting"], "precisions": sorted(head["scores"])}}
    r0 = head["scores"].get(ref)
    if r0:
        out["headline"]["reference"] = dict(zip(("precision", "score", "checkpoint", "source", "url"), (ref, *r0), strict=True))
    if fmt not in head["scores"]:  # say so rather than show another benchmark's score as if comparable
        shown = ", ".join(head["scores"])
        was = f" ({ref} {r0[0]:g}, {r0[1]})" if r0 else ""
        how = "; the drop above is the proxy's" if acc["drop_source"] == "proxy" else ""
        other = (f"; its published scores ({', '.join(dict.fromkeys(x['benchmark'] for x in acc['scores']))}) are on other "
                 "benchmarks, not comparable") if acc["scores"] else ""
        said = f"no {fmt} score published on {head['benchmark']}, the benchmark shown at {shown}{was}{how}{other}"
        out["note"] = f"{acc['note']}; {said}" if acc.get("note") else said
    return out


def _outside_envelope(model, fmt: str, terms_sigma: float, *, pc: dict) -> dict:
    """accuracy_of's band outside the published envelope (envelope_judgement; nothing inside it): the proxy's terms were
    set and checked on published shapes, so outside their envelope no published model vouches for the difference it
    claims from the nearest one; that whole difference counts as spread with its own band, in quadrature with the
    terms' (a shape whose terms carry no spread, MHA at 12.6B, read ± 0 before)."""
    env = envelope_judgement(model, fmt, pc=pc)
    if env is None:
        return {}
    widened = math.sqrt(terms_sigma ** 2 + env["delta"] ** 2 + env["sigma"] ** 2)
    note = (f"outside the published envelope at {model.total_params / 1e9:.3g}B (" + "; ".join(describe(v) for v in env["outside"])
            + f"): ± {widened:.4f} counts the proxy's whole difference from {env['reference']} ({env['delta']:+.4f} ± "
            f"{env['sigma']:.4f} nats) as spread")
    return {"proxy_loss_uncertainty": widened, "envelope_note": note,
            "envelope": {"inside": False, "outside": [v["bound"] for v in env["outside"]], "reference": env["reference"],
                         "delta_vs_reference": env["delta"], "delta_sigma": env["sigma"], "terms_uncertainty": terms_sigma}}


def point_accuracy(acc: dict) -> dict:
    """The compact form a frontier point carries."""
    return {k: acc[k] for k in ("source", "relative_drop_pct", "drop_uncertainty_pct", "reference_precision", "short", "drop_band")} | (
        {"benchmark": acc["scores"][0]["benchmark"], "score": acc["scores"][0]["score"]} if acc["scores"] else {}) | (
        {"drop_unmeasured": acc["drop_unmeasured"]} if "drop_unmeasured" in acc else {})
