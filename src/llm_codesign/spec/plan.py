"""Deployment plans: parallel sizes as arrays, and the one validity predicate with its reasons."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from llm_codesign.errors import InputError
from llm_codesign.spec.engines import step_tokens
from llm_codesign.spec.hardware import Gpu
from llm_codesign.spec.model import ModelSpec
from llm_codesign.spec.precision import Precision

# reason codes, in the order they are checked; the first failing one is reported
REASONS = (
    "gpus_mismatch",      # tp*adp*kvp*pp != num_gpus or ep*moe_tp*pp != num_gpus
    "heads",              # attention heads not divisible by tp
    "kv_heads",           # KV heads neither divisible by tp nor a divisor of it
    "experts",            # experts not divisible by ep
    "moe_width",          # expert width not divisible by moe_tp
    "layers",             # layers not divisible by pp
    "scale_up",           # a TP/Helix group larger than the scale-up domain
    "helix_needs_attention_tp",  # Helix with attention DP is not a supported combination
    "no_moe",             # ep/moe_tp > 1 on a dense model
    "dense_width",        # dense FFN width not divisible by tp*kvp
)
MESSAGES = {
    "gpus_mismatch": "the parallel sizes must multiply to the GPU count: tp*attention_dp*kvp*pp = ep*moe_tp*pp = gpus",
    "heads": "attention heads must be divisible by tp (heads {heads})",
    "kv_heads": "KV heads must divide tp or be divisible by it (kv_heads {kv_heads})",
    "experts": "experts must be divisible by ep (experts {experts})",
    "moe_width": "the expert FFN width must be divisible by moe_tp (width {moe_width})",
    "layers": "layers must be divisible by pp (layers {layers})",
    "scale_up": "a tensor-parallel group must fit in one scale-up domain (NVLink; PCIe within a server for PCIe cards) of {domain} GPUs",
    "helix_needs_attention_tp": "Helix (kvp > 1) is modelled with attention TP, not with attention_dp > 1",
    "no_moe": "ep and moe_tp must be 1 for a dense model",
    "dense_width": "the dense FFN width must be divisible by tp*kvp (width {dense_width})",
}


@dataclass(frozen=True)
class Plan:
    """Parallel sizes (ints, or equal-length int arrays for a sweep). GPUs = tp*adp*kvp*pp."""
    tp: object = 1
    pp: object = 1
    ep: object = 1
    moe_tp: object = 1
    adp: object = 1
    kvp: object = 1

    def arrays(self):
        return np.broadcast_arrays(*(np.asarray(x, dtype=np.int64) for x in (self.tp, self.pp, self.ep, self.moe_tp, self.adp, self.kvp)))

    @property
    def gpus(self):
        return np.asarray(self.tp) * np.asarray(self.adp) * np.asarray(self.kvp) * np.asarray(self.pp)

    def label(self, i: int | None = None) -> str:
        vals = [np.asarray(x).reshape(-1)[i or 0] if np.ndim(x) else x for x in (self.tp, self.pp, self.ep, self.moe_tp, self.adp, self.kvp)]
        tp, pp, ep, mtp, adp, kvp = (int(v) for v in vals)
        parts = [f"TP{tp}"] if adp == 1 else [f"DP{adp}xTP{tp}"]
        if kvp > 1:
            parts.append(f"Helix{kvp}")
        if pp > 1:
            parts.append(f"PP{pp}")
        if ep > 1 or mtp > 1:
            parts.append(f"EP{ep}" + (f"/MoE-TP{mtp}" if mtp > 1 else ""))
        return " ".join(parts)


def _attn_dims(model: ModelSpec):
    heads = [layer.attn.heads for layer, _ in model.groups if layer.attn.kind in ("gqa", "mla") or layer.attn.recurrent]
    # Gated DeltaNet splits its key heads by TP as well (vLLM divide(num_k_heads, tp)); Mamba-2's B/C
    # groups are replicated up to TP instead (MambaStateShapeCalculator.extra_groups_for_head_shards)
    heads += [layer.attn.kv_heads for layer, _ in model.groups if layer.attn.kind == "gdn"]
    kvh = [layer.attn.kv_heads for layer, _ in model.groups if layer.attn.kind == "gqa"]
    return heads, kvh


def _moe(model: ModelSpec):
    for layer, _ in model.groups:
        if layer.ffn.kind == "moe":
            return layer.ffn
    return None


def validity(model: ModelSpec, gpu: Gpu, plan: Plan, num_gpus) -> np.ndarray:
    """Reason code index per deployment (-1 when valid): one vectorised predicate for every plan."""
    tp, pp, ep, mtp, adp, kvp = plan.arrays()
    reason = np.full(tp.shape, -1, dtype=np.int64)

    def flag(code, bad):
        nonlocal reason  # broadcasts up when model dimensions are arrays (shape sweeps)
        reason = np.where((reason < 0) & bad, REASONS.index(code), reason)

    n = np.asarray(num_gpus)
    moe_bad = (ep * mtp * pp != n) if model.is_moe else False
    flag("gpus_mismatch", (tp * adp * kvp * pp != n) | moe_bad)
    heads, kvh = _attn_dims(model)
    for h in heads:  # ints, or arrays when shapes are swept
        flag("heads", h % tp != 0)
    for k in kvh:
        flag("kv_heads", (k % tp != 0) & (tp % k != 0))
    moe = _moe(model)
    if moe:
        flag("experts", moe.experts % ep != 0)
        flag("moe_width", moe.expert_inter % mtp != 0)
    else:
        flag("no_moe", (ep > 1) | (mtp > 1))
    flag("layers", np.asarray(model.num_layers) % pp != 0)
    # TP all-reduces every layer: keep TP (and Helix, which re-uses those GPUs as TP) inside the scale-up domain
    flag("scale_up", (tp * kvp > gpu.scale_up_domain) | ((ep * mtp > gpu.scale_up_domain) & (ep * mtp > 1) & (gpu.scale_up_domain < 8)))
    flag("helix_needs_attention_tp", (kvp > 1) & (adp > 1))
    for layer, _ in model.groups:
        if layer.ffn.kind == "dense":
            flag("dense_width", layer.ffn.inter % (tp * kvp) != 0)
    return reason


def reason_text(model: ModelSpec, gpu: Gpu, code: int) -> str:
    heads, kvh = _attn_dims(model)
    moe = _moe(model)
    dense = [layer.ffn.inter for layer, _ in model.groups if layer.ffn.kind == "dense"]
    return MESSAGES[REASONS[code]].format(
        heads=sorted({int(np.max(h)) for h in heads}), kv_heads=sorted({int(np.max(k)) for k in kvh}), experts=moe.experts if moe else 0,
        moe_width=moe.expert_inter if moe else 0, layers=model.num_layers, domain=gpu.scale_up_domain,
        dense_width=sorted(set(dense)))


@dataclass(frozen=True)
class SpecDecoding:
    """Speculative decoding: method, draft length k and acceptance.

    `rates` are per-position conditional acceptance probabilities; `mean_accepted` is the mean number
    of tokens a step emits (accepted drafts plus the target's own token, 1..k+1). One of them is set.
    """
    method: str  # "mtp", "eagle3" or "draft"
    k: int
    mean_accepted: float | None = None
    rates: tuple[float, ...] = ()
    draft_model: str | None = None

    def __post_init__(self):
        if self.method not in ("mtp", "eagle3", "draft"):
            raise InputError("spec", self.method, "one of: mtp, eagle3, draft")
        if not 1 <= self.k <= 16:
            raise InputError("draft_len", self.k, "an integer from 1 to 16")
        if self.mean_accepted is None and not self.rates:
            raise InputError("acceptance", None, "a mean accepted length (--acceptance) or per-position rates (--acceptance-rates)")
        if self.mean_accepted is not None and not 1.0 <= self.mean_accepted <= self.k + 1:
            raise InputError("acceptance", self.mean_accepted, f"a mean accepted length between 1 and k+1 = {self.k + 1}")
        if any(not 0.0 <= r <= 1.0 for r in self.rates):
            raise InputError("acceptance_rates", self.rates, "probabilities between 0 and 1")

    def _rates(self) -> np.ndarray:
        if self.rates:
            r = list(self.rates)
        else:
            # a mean accepted length for k: the constant per-position rate r with 1 + r + ... + r^k = mean
            lo, hi = 0.0, 1.0
            for _ in range(60):
                mid = (lo + hi) / 2
                if sum(mid ** i for i in range(self.k + 1)) < self.mean_accepted:
                    lo = mid
                else:
                    hi = mid
            r = [lo]
        return np.asarray(r + [r[-1]] * 32, dtype=float)

    def accepted(self, k=None) -> np.ndarray:
        """Mean tokens per step at draft length k (array ok): 1 + sum_i prod_{j<=i} r_j."""
        k = np.asarray(self.k if k is None else k, dtype=np.int64)
        cum = np.concatenate([[1.0], 1.0 + np.cumsum(np.cumprod(self._rates()))])
        return cum[np.clip(k, 0, len(cum) - 1)]


@dataclass(frozen=True)
class Deployment:
    """One deployment, validated at the edge."""
    gpu: Gpu
    num_gpus: int
    plan: Plan = field(default_factory=Plan)
    precision: Precision = field(default_factory=Precision.of)
    backend: str = "trtllm"
    spec: SpecDecoding | None = None
    max_num_tokens: int | None = None  # step token budget; None: the engine's default on this GPU
    cpp: bool = False  # chunked pipeline parallelism for long-context prefill

    @property
    def step_tokens(self) -> int:
        return step_tokens(self.backend, self.gpu) if self.max_num_tokens is None else self.max_num_tokens
