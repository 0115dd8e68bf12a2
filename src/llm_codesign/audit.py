"""Data checks on serving measurements: one row per measured setting, plans that agree with their runs.

A canonical serving CSV holds one row per measured setting. Two rows whose TTFT and TPOT agree to
every printed digit are one measurement listed twice (independent runs never agree to 1e-6 ms):
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
plan. Configuration rows with the signature and no such evidence are kept as they are and listed as
suspect, as are rows whose concurrency differs from the run name's `_cN_` (nothing shows which is
right). `clean` applies these rules and says, per row, what it changed, dropped or doubts, and why.
"""
from __future__ import annotations

import re

PLAN_FIELDS = ("num_gpus", "tp", "pp", "ep", "moe_tp", "attention_dp")
SETTING_FIELDS = ("gpu", "backend", "weight_dtype", "kv_dtype", "isl", "osl", "concurrency", *PLAN_FIELDS,
                  "spec_method", "spec_draft_len")
_NAMED_PLAN = re.compile(r"_tp(\d+)(?:_0)?_ep(\d+)(?:_0)?_\d+$")
_CONFIG = re.compile(r"_\d+x\d+_c\d+(_cfg\d+)$")
_NAMED_CONC = re.compile(r"_\d+x\d+_c(\d+)_")


def _int(r: dict, k: str) -> int:
    v = (r.get(k) or "").strip()
    return int(float(v)) if v else 1


def named_plan(source: str) -> tuple[int, int] | None:
    """(GPUs, EP size) that a silicon-sample run name states, or None where the name states no plan."""
    m = _NAMED_PLAN.search(source or "")
    return (int(m[1]), int(m[2])) if m else None


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
    # rows whose run name states their plan, and agrees, speak for a shared measurement first
    def rank(i: int) -> tuple:
        r, named = fixed[i], named_plan(fixed[i].get("source", ""))
        agrees = named is not None and _int(r, "num_gpus") == named[0] and _int(r, "ep") == named[1]
        return (not agrees, i)

    groups: dict[tuple, list[int]] = {}
    for i, r in enumerate(fixed):
        key = ((r.get("ttft_ms") or "").strip(), (r.get("tpot_ms") or "").strip())
        if all(key):
            groups.setdefault(key, []).append(i)
    drop: dict[int, int] = {}  # dropped row -> the row that speaks for its measurement
    for idx in groups.values():
        if len(idx) < 2:
            continue
        keep = min(idx, key=rank)
        for j in idx:
            if j == keep:
                continue
            drop[j] = keep
            same = _setting(fixed[j]) == _setting(fixed[keep])
            diff = [k for k, a, b in zip(SETTING_FIELDS, _setting(fixed[j]), _setting(fixed[keep]), strict=True) if a != b]
            changes.append({"row": j, "source": rows[j].get("source", ""), "action": "repeat" if same else "conflict",
                            "detail": f"same TTFT and TPOT as row {keep} ({fixed[keep].get('source', '')})"
                            + ("" if same else "; differs in " + ", ".join(f"{k} {fixed[j].get(k) or 1} vs {fixed[keep].get(k) or 1}" for k in diff))})
    # a configuration shown to carry the product takes the named run's plan on all its rows with that plan
    fixes = {}
    for j, keep in drop.items():
        if _config(rows[j].get("source", "")) and _setting(fixed[j]) != _setting(fixed[keep]):
            fixes[(_config(rows[j]["source"]), _plan(fixed[j]))] = {k: fixed[keep].get(k) or "1" for k in PLAN_FIELDS}
    for i, r in enumerate(fixed):
        cfg = _config(r.get("source", ""))
        if i in drop or cfg is None:
            continue
        plan = fixes.get((cfg, _plan(r)))
        if plan is not None:
            detail = ", ".join(f"{k} {r.get(k) or 1}->{plan[k]}" for k in PLAN_FIELDS if (r.get(k) or "1") != plan[k])
            changes.append({"row": i, "source": r.get("source", ""), "action": "replanned",
                            "detail": f"configuration {cfg.split(':')[-1].lstrip('_')} shares measurements with named runs: {detail}"})
            fixed[i] = dict(r, **plan)
        elif _signature(r):
            changes.append({"row": i, "source": r.get("source", ""), "action": "suspect",
                            "detail": f"plan has the GPUs x EP mark (num_gpus {r.get('num_gpus')}, ep = moe_tp = {r.get('ep')}); kept"})
    # a concurrency other than the run name's: nothing shows which is right, so it is kept and doubted
    for i, r in enumerate(fixed):
        m = _NAMED_CONC.search(r.get("source", "") or "")
        conc = (r.get("concurrency") or "").strip()
        if i not in drop and m and conc and float(conc) != float(m[1]):
            changes.append({"row": i, "source": r.get("source", ""), "action": "suspect",
                            "detail": f"concurrency {conc} where the run name says c{m[1]}; kept"})
    changes.sort(key=lambda c: (c["row"], c["action"]))
    return [r for i, r in enumerate(fixed) if i not in drop], changes


def summary(changes: list[dict]) -> dict:
    """Counts per action, for reports."""
    out = {"replanned": 0, "repeat": 0, "conflict": 0, "suspect": 0}
    for c in changes:
        out[c["action"]] += 1
    return out
