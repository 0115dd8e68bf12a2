"""Data checks on serving measurements: one row per measured setting, plans that agree with their runs.

A canonical serving CSV holds one row per measured setting. Two rows whose TTFT and TPOT agree to 9
significant digits are one measurement listed twice (the closest two re-runs of a setting in the sample
differ by 9e-4), and so is a row that prints both to a few decimals where another row's pair rounds to it:
- a *repeat* when both rows describe the same setting: it weighs that setting twice in every median;
- a *conflict* when they describe different plans: at most one of them is the deployment that ran.

Runs named like aiconfigurator's silicon sample (`..._tp8_ep8_NNN`, `..._tp8_0_ep8_0_NNN`) state their
deployment: the number of GPUs (the attention TP size, or the attention-DP rank count) and the MoE EP
size. A row whose `num_gpus` is that number times EP, and whose `moe_tp` equals its EP, carries the
product of the two sizes where the run used one node's worth: such rows are re-derived from the name.
In the shipped sample that signature (EP = MoE TP > 1, GPUs = EP squared) appears on 123 named rows,
every one contradicting its name, and on no named row that agrees with it.
Runs named by configuration (`..._cfg191`) state no plan; where one of them shares a measurement with a
named run, the named run's plan speaks for it, and for the configuration's other rows with the same
plan (named runs of two plans speak for neither: those rows are kept and doubted). Configuration rows with the signature and no such evidence are kept as they are and listed as
suspect, as are rows whose concurrency differs from the run name's `_cN_`, where nothing shows which is
right. Where something does, they go: a run series (one deployment's runs: the name but for its `_cN_` and
run index) that contradicts itself both at its recorded concurrencies and at its names' is *inconsistent*
(`contradiction` states the two bounds), and a run whose name leaves the concurrency blank (`_c_`) is
*unrecorded*: no column of such rows describes what ran. A run series read across its plans (the name but for its
`_cN_`, its `_tpN_epN` and run index: one campaign's runs of one model, GPU, engine, format and lengths) whose recorded
TP does not divide the model's attention heads on most of its measurements did not run the plans its columns record
(the sample's DeepSeek-R1 GB200 runs at TP 12-72 most likely ran attention DP with wide expert parallelism, which no
column holds): its runs whose TP does divide are no evidence of a TP plan either, and go as *unplanned* (its other
runs stay, and validate lists them as unmodelled). Not *unrecorded*: that run's own name lacks a field, where here each
name is whole and only its series shows the plan columns are not what ran. In the shipped sample one series has such
runs: DeepSeek-R1 NVFP4 8k/1k on GB200, 15 runs at TP 28-52 and two at TP 32 and 64 (priced as pure TP, TTFT 57x and
4.6x off). It needs the model's head count (spec.registry, by the row's model id): runs of a model the registry does
not know are left alone. A measurement listed more than once keeps a listing
that none of these rules drops, where it has one. `clean` applies these rules and says, per row,
what it changed, dropped or doubts, and why.
`repeatability` measures how far independent runs of one setting lie apart: the data's own noise.
"""
from __future__ import annotations

import math
import re

from llm_codesign.spec.plan import attn_dims
from llm_codesign.spec.registry import bundled

PLAN_FIELDS = ("num_gpus", "tp", "pp", "ep", "moe_tp", "attention_dp")
# a disaggregated row's pools (measure.validate.predict_disagg); blank in aggregated files, so their settings are unchanged
POOL_FIELDS = tuple(f"{pool}_{k}" for pool in ("prefill", "decode")
                    for k in ("instances", "gpus_per_instance", "tp", "attention_dp", "ep"))
SETTING_FIELDS = ("gpu", "backend", "weight_dtype", "kv_dtype", "isl", "osl", "concurrency", *PLAN_FIELDS,
                  "spec_method", "spec_draft_len", *POOL_FIELDS)
_NAMED_PLAN = re.compile(r"_tp(\d+)(?:_0)?_ep(\d+)(?:_0)?_\d+$")
_CONFIG = re.compile(r"_\d+x\d+_c\d+(_cfg\d+)$")
_NAMED_CONC = re.compile(r"_\d+x\d+_c(\d*)_")
_RUN_INDEX = re.compile(r"_\d+$")
# actions that take a row out of the clean form (each listed in its changes)
DROPPED = ("repeat", "conflict", "inconsistent", "unrecorded", "unplanned")


def _num(v: str) -> float:
    """A cell as a number; NaN for one that is not (validate lists such rows; the checks here skip them)."""
    try:
        return float(v)
    except ValueError:
        return float("nan")


def _int(r: dict, k: str) -> int:
    x = _num((r.get(k) or "").strip() or "1")
    return int(x) if math.isfinite(x) else 1


# runs of one setting that differ by more than this factor in a metric are listed as discordant: repeat
# runs of the sample agree within 1.16x at the 75th percentile (TTFT; TPOT 1.14x)
DISCORDANT_RATIO = 1.5
REPEAT_METRICS = ("ttft_ms", "tpot_ms", "output_tok_s_per_gpu")


def _float(r: dict, k: str) -> float:
    v = (r.get(k) or "").strip()
    return _num(v) if v else float("nan")


def named_plan(source: str) -> tuple[int, int] | None:
    """(GPUs, EP size) that a silicon-sample run name states, or None where the name states no plan."""
    m = _NAMED_PLAN.search(source or "")
    return (int(m[1]), int(m[2])) if m else None


def _measured(v) -> str:
    """A recorded mean to 9 significant digits: one measurement written twice may differ in its last
    bits (the same mean summed in another order: 1610.3835293804875 and ...877); independent re-runs of
    a setting differ by 9e-4 or more."""
    v = (v or "").strip()
    return f"{_num(v):.9g}" if v else ""


# a pair of means printed with 2 to 4 decimals is a rounded copy where a full-precision pair rounds to it:
# the sample's runs print 10 or more, and each of its 93 rows printed to 2 decimals rounds from another
# row's pair. Coarser prints (whole milliseconds) could meet another run's pair by chance.
ROUNDED_DECIMALS = (2, 4)


def _decimals(v) -> int:
    v = (v or "").strip().lower()
    return len(v.split(".")[1]) if "." in v and "e" not in v else 0


def _rounded(r: dict) -> tuple[int, int] | None:
    """The decimals of a row's TTFT and TPOT where both are printed coarsely enough to be a rounded copy."""
    if not all((r.get(k) or "").strip() for k in ("ttft_ms", "tpot_ms")):
        return None
    d = tuple(_decimals(r.get(k)) for k in ("ttft_ms", "tpot_ms"))
    return d if ROUNDED_DECIMALS[0] <= min(d) and max(d) <= ROUNDED_DECIMALS[1] else None


def _setting(r: dict) -> tuple:
    return tuple((r.get(k) or "").strip() or ("1" if k in PLAN_FIELDS else "") for k in SETTING_FIELDS)


def _config(source: str) -> str | None:
    """A configuration-named run's configuration (its name less ISL x OSL and concurrency), else None."""
    return _CONFIG.sub(r"\1", source) if _CONFIG.search(source or "") else None


def _signature(r: dict) -> bool:
    """The GPUs x EP product's mark: EP = MoE TP > 1 and GPUs = EP squared."""
    return _int(r, "moe_tp") == _int(r, "ep") > 1 and _int(r, "num_gpus") == _int(r, "ep") ** 2


def _plan(r: dict) -> tuple:
    return tuple(_int(r, k) for k in PLAN_FIELDS)


def _replan(r: dict) -> dict | None:
    """The row re-derived from its run name where it carries the GPUs × EP product; else None."""
    named = named_plan(r.get("source", ""))
    if named is None:
        return None
    gpus, ep = named
    n, tp, adp, moe_tp = _int(r, "num_gpus"), _int(r, "tp"), _int(r, "attention_dp"), _int(r, "moe_tp")
    if n == gpus or n != gpus * ep or _int(r, "ep") != ep or moe_tp != ep or _int(r, "pp") != 1 or gpus % ep:
        return None
    fixed = dict(r, num_gpus=str(gpus), moe_tp=str(gpus // ep))
    if adp > 1:
        fixed["attention_dp"] = str(gpus // tp) if gpus % tp == 0 else None
    else:
        fixed["tp"] = str(gpus)
    return fixed if fixed.get("attention_dp") is not None else None


def clean(rows: list[dict]) -> tuple[list[dict], list[dict]]:
    """(rows with plans re-derived where their run names contradict them and each measurement once,
    the changes: {row, source, action, detail}); row indices refer to the input."""
    changes: list[dict] = []
    fixed = []
    for i, r in enumerate(rows):
        f = _replan(r)
        if f is not None:
            detail = ", ".join(f"{k} {r.get(k) or 1}->{f[k]}" for k in PLAN_FIELDS if (r.get(k) or "1") != f[k])
            changes.append({"row": i, "source": r.get("source", ""), "action": "replanned",
                            "detail": f"run name states {named_plan(r['source'])[0]} GPUs: {detail}"})
        fixed.append(f if f is not None else r)
    groups, coarse = _measurements(fixed)
    # The repeat check runs first (a series is read with each measurement once, under its settled plan), so a run it keeps
    # may be dropped later: an unrecorded or unplanned run is kept only where no other listing of its measurement can be,
    # and where a kept run turns out inconsistent the checks run again with that series' verdict fixed and its runs out of
    # the repeat check, so that another listing of the measurement speaks for it. `found` only grows, so this ends (the
    # sample needs one pass).
    unrecorded = {i for i, r in enumerate(fixed) if _unrecorded(r)}
    unplanned = _unplanned(fixed, groups)
    found: dict[int, dict] = {}  # row -> its `inconsistent` change, from the pass that found it
    base = list(changes)
    while True:
        current, changes, drop = list(fixed), [*base, *found.values()], {i: i for i in found}
        drop.update(_drop_repeats(rows, current, groups, coarse, changes, skip=found.keys(), last=unrecorded | set(unplanned)))
        _replan_configs(rows, current, drop, changes)
        for i in sorted(unrecorded - drop.keys()):
            drop[i] = i
            changes.append({"row": i, "source": current[i].get("source", ""), "action": "unrecorded",
                            "detail": f"the run name states no concurrency (`_c_`), so the recorded "
                            f"{current[i].get('concurrency') or 'blank'} is not shown to be the run's"})
        for i in sorted(unplanned.keys() - drop.keys()):
            drop[i] = i
            changes.append({"row": i, "source": current[i].get("source", ""), "action": "unplanned", "detail": unplanned[i]})
        _inconsistent_series(current, drop, changes)
        new = {c["row"]: c for c in changes if c["action"] == "inconsistent" and c["row"] not in found}
        if not any(j != k and k in new for j, k in drop.items()):
            break
        found |= new
    fixed = current
    # a concurrency other than the run name's: nothing shows which is right, so it is kept and doubted
    for i, r in enumerate(fixed):
        m = _NAMED_CONC.search(r.get("source", "") or "")
        conc = (r.get("concurrency") or "").strip()
        if i not in drop and m and m[1] and conc and _num(conc) != float(m[1]):
            changes.append({"row": i, "source": r.get("source", ""), "action": "suspect",
                            "detail": f"concurrency {conc} where the run name says c{m[1]}; kept"})
    changes.sort(key=lambda c: (c["row"], c["action"]))
    return [r for i, r in enumerate(fixed) if i not in drop], changes


def _unrecorded(r: dict) -> bool:
    """A run name that leaves the concurrency blank (`_c_`)."""
    m = _NAMED_CONC.search(r.get("source", "") or "")
    return m is not None and not m[1]


def _series_name(r: dict, tail: re.Pattern) -> str:
    """What the runs of one series share in their names: the run name with its concurrency blanked (`_c_`) and `tail`
    (the run index, or the plan and run index) cut."""
    return tail.sub("", _NAMED_CONC.sub(lambda m: m[0].replace(f"_c{m[1]}_", "_c_"), r.get("source", "") or ""))


def _heads(model: str, known: dict) -> tuple[int, ...] | None:
    """The attention head counts TP must divide (spec.plan.validity's), by model id, or None for a model the registry
    does not bundle (read from the package alone: a clean never goes to the Hugging Face cache or Hub); `known` caches them."""
    if model not in known:
        spec = bundled(model)
        known[model] = None if spec is None else tuple(sorted({int(h) for h in attn_dims(spec)[0]}))
    return known[model]


def _unplanned(fixed: list[dict], groups: dict) -> dict[int, str]:
    """Row -> its `unplanned` detail: the runs, at a TP that divides the model's attention heads, of a run series (named
    runs, `_tpN_epN`, read across their concurrencies and plans) whose TP divides them on fewer than half its
    measurements (each counted once): such a series does not record its plans, so the dividing TP is no plan either."""
    measurement = {i: k for k, idx in groups.items() for i in idx}
    series: dict[tuple, list[int]] = {}
    for i, r in enumerate(fixed):
        source = r.get("source", "") or ""
        if named_plan(source) is None or _int(r, "tp") < 1:
            continue
        key = (_series_name(r, _NAMED_PLAN), *((r.get(k) or "").strip() for k in ("model", "gpu", "backend", "weight_dtype", "isl", "osl")))
        series.setdefault(key, []).append(i)
    known: dict = {}
    out: dict[int, str] = {}
    for key, idx in series.items():
        model = key[1]
        tps = {i: _int(fixed[i], "tp") for i in idx}
        if len(set(tps.values())) < 2 or (heads := _heads(model, known)) is None:
            continue
        fits = {i: all(h % tps[i] == 0 for h in heads) for i in idx}
        once = {measurement.get(i, i): fits[i] for i in idx}  # a measurement listed twice counts once
        if 2 * sum(once.values()) >= len(once):
            continue
        odd = sorted({tps[i] for i in idx if not fits[i]})
        said = ", ".join(map(str, odd[:-1])) + (" or " if len(odd) > 1 else "") + str(odd[-1])
        for i in idx:
            if fits[i]:
                out[i] = (f"its run series ({len(once)} measurements) records TP {said} on {len(once) - sum(once.values())} of them, "
                          f"which {model}'s {'/'.join(map(str, heads))} attention heads do not divide: the series does not "
                          f"record its plans, so TP {tps[i]} is not shown to be the run's")
    return out


def _named_concurrency(r: dict) -> float:
    """The concurrency a run name states (`_cN_`), else the recorded one."""
    m = _NAMED_CONC.search(r.get("source", "") or "")
    return float(m[1]) if m and m[1] else _num((r.get("concurrency") or "").strip() or "nan")


def contradiction(runs: list[tuple[float, float]]) -> tuple[int, int] | None:
    """The first pair (i, j) of one deployment's runs, (concurrency, TPOT) each, that no closed loop of fixed
    lengths can produce, or None. With concurrency c_i <= c_j: more requests never make a token faster (a
    step carries at least as many sequences and prefills), nor slower than running them c_j / c_i batches
    after one another (a batch shares its weight reads; its compute and KV reads add up); both within the
    DISCORDANT_RATIO that independent re-runs of one setting stay inside."""
    for i, (ci, ti) in enumerate(runs):
        for j, (cj, tj) in enumerate(runs):
            if i != j and 0 < ci <= cj and (ti > DISCORDANT_RATIO * tj or tj > DISCORDANT_RATIO * cj / ci * ti):
                return i, j
    return None


def _inconsistent_series(fixed: list[dict], drop: dict[int, int], changes: list[dict]) -> None:
    """Drop every run of a series whose concurrency is in doubt (a row's differs from its name's) when the
    series contradicts itself (`contradiction`) both at the recorded concurrencies and at the names' (in `drop`,
    each noted in `changes`): then neither reading describes what ran."""
    series: dict[tuple, list[int]] = {}
    for i, r in enumerate(fixed):
        c, t = _num((r.get("concurrency") or "").strip() or "nan"), _float(r, "tpot_ms")
        if i in drop or not (math.isfinite(c) and math.isfinite(t) and t > 0):
            continue
        key = (_series_name(r, _RUN_INDEX), (r.get("model") or "").strip(), *(v for k, v in zip(SETTING_FIELDS, _setting(r), strict=True) if k != "concurrency"))
        series.setdefault(key, []).append(i)
    for idx in series.values():
        recorded = [(_num(fixed[i]["concurrency"]), _float(fixed[i], "tpot_ms")) for i in idx]
        named = [(_named_concurrency(fixed[i]), t) for i, (_, t) in zip(idx, recorded, strict=True)]
        if recorded == named:
            continue
        why = [contradiction(recorded), contradiction(named)]
        if None in why:
            continue
        said = "; ".join(f"{how}, TPOT {runs[a][1]:.2f} ms at {runs[a][0]:g} but {runs[b][1]:.2f} ms at {runs[b][0]:g} ("
                         + ("one setting measured twice" if runs[a][0] == runs[b][0] else "faster with more requests"
                            if runs[a][1] > runs[b][1] else "slower than serving them one batch after another") + ")"
                         for how, runs, (a, b) in zip(("at the recorded concurrency", "at the run names'"), (recorded, named), why,
                                                      strict=True))
        for i in idx:
            drop[i] = i
            changes.append({"row": i, "source": fixed[i].get("source", ""), "action": "inconsistent",
                            "detail": f"its run series ({len(idx)} runs) contradicts itself {said}"})


def _measurements(fixed: list[dict]) -> tuple[dict, dict]:
    """The rows of each measured (TTFT, TPOT) pair, a rounded copy joining the measurement whose
    full-precision pair rounds to it; and the rounded rows with their decimals."""
    groups: dict[tuple, list[int]] = {}
    for i, r in enumerate(fixed):
        key = tuple(_measured(r.get(k)) for k in ("ttft_ms", "tpot_ms"))
        if all(key):
            groups.setdefault(key, []).append(i)
    coarse = {i: d for i, r in enumerate(fixed) if (d := _rounded(r)) is not None}
    for d in set(coarse.values()):
        full = {}
        for i, r in enumerate(fixed):
            if i not in coarse and all((r.get(k) or "").strip() for k in ("ttft_ms", "tpot_ms")):
                full.setdefault(tuple(round(_num(r[k]), n) for k, n in zip(("ttft_ms", "tpot_ms"), d, strict=True)), i)
        for i, di in coarse.items():
            j = full.get(tuple(_num(fixed[i][k]) for k in ("ttft_ms", "tpot_ms"))) if di == d else None
            if j is not None:
                groups[tuple(_measured(fixed[i].get(k)) for k in ("ttft_ms", "tpot_ms"))].remove(i)
                groups[tuple(_measured(fixed[j].get(k)) for k in ("ttft_ms", "tpot_ms"))].append(i)
    return groups, coarse


def _agrees(r: dict) -> bool:
    named = named_plan(r.get("source", ""))
    return named is not None and _int(r, "num_gpus") == named[0] and _int(r, "ep") == named[1]


def _drop_repeats(rows: list[dict], fixed: list[dict], groups: dict, coarse: dict, changes: list[dict], *, skip, last: set[int]
                  ) -> dict[int, int]:
    """Each measurement once: dropped row -> the row that speaks for it (a repeat, or a conflict where
    their settings differ), each drop noted in `changes`. Rows in `skip` take no part; a row in `last` (one a later
    check drops) speaks only where no other row with its measurement's plan can."""
    drop: dict[int, int] = {}
    for idx in groups.values():
        idx = [i for i in idx if i not in skip]
        if len(idx) < 2:
            continue
        # the plan of a row whose run name states it, and agrees, speaks for a shared measurement first; of the rows
        # with that plan a valid one, then one that agrees, then one at full precision
        agreed = {_setting(fixed[i]) for i in idx if _agrees(fixed[i])}
        keep = min(idx, key=lambda i: (bool(agreed) and _setting(fixed[i]) not in agreed, i in last, not _agrees(fixed[i]),
                                       _rounded(fixed[i]) is not None, i))
        for j in idx:
            if j == keep:
                continue
            drop[j] = keep
            same = _setting(fixed[j]) == _setting(fixed[keep])
            diff = [k for k, a, b in zip(SETTING_FIELDS, _setting(fixed[j]), _setting(fixed[keep]), strict=True) if a != b]
            changes.append({"row": j, "source": rows[j].get("source", ""), "action": "repeat" if same else "conflict",
                            "detail": f"same TTFT and TPOT as row {keep} ({fixed[keep].get('source', '')})"
                            + (f", rounded to {min(coarse[j])} decimals" if j in coarse and keep not in coarse else "")
                            + ("" if same else "; differs in " + ", ".join(f"{k} {fixed[j].get(k) or 1} vs {fixed[keep].get(k) or 1}" for k in diff))})
    return drop


def _replan_configs(rows: list[dict], fixed: list[dict], drop: dict[int, int], changes: list[dict]) -> None:
    """A configuration shown to carry the product takes the named run's plan on all its rows with that
    plan (in `fixed`); rows with the product's mark and no such evidence are doubted, not changed, and so are
    rows whose configuration shares measurements with named runs of more than one plan (nothing shows which ran)."""
    fixes: dict[tuple, set] = {}
    for j, keep in drop.items():
        if _config(rows[j].get("source", "")) and _setting(fixed[j]) != _setting(fixed[keep]) and _agrees(fixed[keep]):
            fixes.setdefault((_config(rows[j]["source"]), _plan(fixed[j])), set()).add(
                tuple((k, fixed[keep].get(k) or "1") for k in PLAN_FIELDS))
    for i, r in enumerate(fixed):
        cfg = _config(r.get("source", ""))
        if i in drop or cfg is None:
            continue
        plans = fixes.get((cfg, _plan(r)), set())
        if len(plans) == 1:
            plan = dict(*plans)
            detail = ", ".join(f"{k} {r.get(k) or 1}->{plan[k]}" for k in PLAN_FIELDS if (r.get(k) or "1") != plan[k])
            changes.append({"row": i, "source": r.get("source", ""), "action": "replanned",
                            "detail": f"configuration {cfg.split(':')[-1].lstrip('_')} shares measurements with named runs: {detail}"})
            fixed[i] = dict(r, **plan)
        elif plans:
            named = " or ".join(sorted(f"{dict(p)['num_gpus']} GPUs, EP {dict(p)['ep']}" for p in plans))
            changes.append({"row": i, "source": r.get("source", ""), "action": "suspect",
                            "detail": f"configuration {cfg.split(':')[-1].lstrip('_')} shares measurements with named runs of "
                            f"{len(plans)} plans ({named}); kept"})
        elif _signature(r):
            changes.append({"row": i, "source": r.get("source", ""), "action": "suspect",
                            "detail": f"plan has the GPUs x EP mark (num_gpus {r.get('num_gpus')}, ep = moe_tp = {r.get('ep')}); kept"})


def summary(changes: list[dict]) -> dict:
    """Counts per action, for reports."""
    out = {"replanned": 0, "repeat": 0, "conflict": 0, "suspect": 0, "inconsistent": 0, "unrecorded": 0, "unplanned": 0}
    for c in changes:
        out[c["action"]] += 1
    return out


def repeatability(rows: list[dict], preds: list[dict] | None = None, cleaned: tuple | None = None) -> dict:
    """How well the measurements reproduce themselves: over the settings measured more than once (the
    clean form, so a run listed twice counts once), how far each run lies from its setting's median run,
    as absolute percentage error. It is the error of a model that knew every setting's median run, a
    floor under any model's error on these rows; with `preds` (aligned with `rows`) the model's own error
    on the same runs sits beside it. Settings whose runs differ by over DISCORDANT_RATIO are listed.
    `cleaned`: clean(rows), where the caller has it already."""
    import numpy as np

    kept, changes = cleaned if cleaned is not None else clean(rows)
    dropped = {c["row"] for c in changes if c["action"] in DROPPED}
    index = [i for i in range(len(rows)) if i not in dropped]  # kept[j] is rows[index[j]], re-planned
    groups: dict[tuple, list[int]] = {}
    for j, r in enumerate(kept):
        key = ((r.get("model") or "").strip(), *_setting(r), (r.get("spec_acceptance") or "").strip())
        groups.setdefault(key, []).append(j)
    groups = {k: v for k, v in groups.items() if len(v) > 1}
    out: dict = {"settings": len(groups), "rows": sum(map(len, groups.values())), "discordant": []}
    for m in REPEAT_METRICS:
        floor, model = [], []
        for idx in groups.values():
            y = np.array([_float(kept[j], m) for j in idx])
            ok = np.isfinite(y) & (y > 0)
            if ok.sum() < 2:
                continue
            floor += list(np.abs(y[ok] / np.median(y[ok]) - 1.0) * 100.0)
            if preds is not None:
                p = np.array([(preds[index[j]] or {}).get(m, np.nan) for j in idx])
                good = ok & np.isfinite(p)
                model += list(np.abs(p[good] / y[good] - 1.0) * 100.0)
        # None where no run has the metric (offline rows record no TTFT): JSON has no NaN
        st = {"n": len(floor), "median_ape": float(np.median(floor)) if floor else None,
              "p90_ape": float(np.percentile(floor, 90)) if floor else None}
        if preds is not None:
            st.update(model_n=len(model), model_median_ape=float(np.median(model)) if model else None,
                      model_p90_ape=float(np.percentile(model, 90)) if model else None)
        out[m] = st
    for idx in groups.values():
        spread = {}
        for m in REPEAT_METRICS:
            y = [v for v in (_float(kept[j], m) for j in idx) if v > 0]
            if len(y) > 1 and max(y) > DISCORDANT_RATIO * min(y):
                spread[m] = round(max(y) / min(y), 2)
        if spread:
            out["discordant"].append({"rows": [index[j] for j in idx], "sources": [kept[j].get("source", "") for j in idx],
                                      "ratio": spread})
    return out
