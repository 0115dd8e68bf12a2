"""Named efficiency parameters per GPU family, stored as data (default + fitted + user profile)."""
from __future__ import annotations

import tomllib
from dataclasses import dataclass, fields, replace
from functools import lru_cache
from importlib import resources

from llm_codesign.errors import InputError, close_matches, did_you_mean, read_toml
from llm_codesign.spec.engines import ENGINES, MOE_KERNELS
from llm_codesign.spec.validation import check_param

# per serving engine: [default.<name>] engine = value for every GPU family, or [<family>.<name>] for one family's GPUs
# (read by the same _apply after [default], so it wins there): `calibrate` writes what it fits from runs on one family
# under that family (measure.calibrate.to_toml), so that they move no other family's answers
BACKEND_KEYED = ("step_overhead_s", "ttft_overhead_s", "comm_latency_scale", "prefill_queue_fraction", "eager_launch_s", "eager_skew_s",
                 "idle_launch_s",
                 "ttft_wait_steps", "adp_wait_steps", "seq_overhead_s")
# per MoE kernel family (spec.engines.MOE_KERNELS) and GEMM kernel family of its weights (cost.kernels.
# gemm_kernel), within a GPU family's section ([hopper.moe_kernel_eff.cutlass] fp8_block = ...), held as
# "cutlass.fp8_block" keys; a pair without a value of its own takes moe_eff / moe_overhead_s (Calibration.moe_kernel)
KERNEL_KEYED = ("moe_kernel_eff", "moe_kernel_overhead_s", "moe_kernel_route_s", "moe_kernel_expert_s")
GEMM_KERNELS = ("bf16", "fp8", "fp8_block", "fp4", "w4a16", "fp8_deepgemm", "fp8_cutlass")


@dataclass(frozen=True)
class Calibration:
    """One GPU family's parameters. Every value comes from data/calibration/default.toml (cited there),
    then the bundled fit and a user's profile (`calibration_for`); the class holds no defaults of its own."""

    gemm_eff_bf16: float
    gemm_eff_fp8: float
    gemm_eff_fp8_block: float
    gemm_eff_fp4: float
    gemm_eff_w4a16: float
    gemm_eff_fp8_deepgemm: float
    gemm_eff_fp8_cutlass: float
    moe_eff_fp8_deepgemm: float
    gemm_bw_eff_w4a16: float
    gemm_overhead_bf16_s: float
    gemm_overhead_fp8_s: float
    gemm_overhead_fp8_block_s: float
    gemm_overhead_fp4_s: float
    gemm_overhead_w4a16_s: float
    gemm_overhead_fp8_deepgemm_s: float
    gemm_overhead_fp8_cutlass_s: float
    gemm_k_half_bf16: float
    gemm_k_half_fp8: float
    gemm_k_half_fp8_block: float
    gemm_k_half_fp4: float
    gemm_k_half_w4a16: float
    gemm_k_half_fp8_deepgemm: float
    gemm_k_half_fp8_cutlass: float
    gemm_blend_p: float
    gemm_max_split_k: float
    bw_eff: float
    kernel_overhead_s: float
    quant_token_s_vllm: float
    pdl_credit_s: float
    attn_decode_bw_eff: float
    attn_decode_bw_eff_fp8: float
    attn_decode_bw_eff_fa3_fp8: float
    attn_prefill_eff: float
    attn_prefill_eff_fp8: float
    attn_prefill_score_s: float
    attn_overhead_s: float
    attn_prefill_overhead_s: float
    attn_prefill_eff_fa3: float
    attn_prefill_eff_fa3_fp8: float
    attn_prefill_overhead_fa3_s: float
    attn_decode_head_s: float
    attn_decode_flops_eff: float
    attn_decode_group_bf16: float
    attn_decode_group_fp8: float
    attn_decode_max_group: float
    attn_decode_wide_flop_clk: float
    attn_decode_split_s: float
    attn_decode_mmha_s: float
    attn_prefill_head_s: float
    attn_prefill_s_half: float
    comm_latency_s: float
    comm_latency_slope_s: float
    comm_gather_latency_s: float
    comm_gather_latency_slope_s: float
    comm_a2a_latency_s: float
    comm_a2a_latency_slope_s: float
    deepep_ll_latency_s: float
    deepep_ll_expert_s: float
    deepep_ll_bw_eff: float
    deepep_ht_latency_s: float
    deepep_ht_combine_latency_s: float
    deepep_sm_bw: float
    deepep_ht_row_s: float
    deepep_ht_bw_eff: float
    comm_bw_half_bytes: float
    comm_bw_eff: float
    comm_large_latency_s: float
    comm_large_bw_eff: float
    scale_out_latency_s: float
    moe_eff: float
    moe_routing_alpha: float
    moe_overhead_s: float
    moe_route_s: float
    moe_kernel_eff: tuple[tuple[str, float], ...]
    moe_kernel_overhead_s: tuple[tuple[str, float], ...]
    moe_kernel_route_s: tuple[tuple[str, float], ...]
    moe_kernel_expert_s: tuple[tuple[str, float], ...]
    elementwise_kernels_per_layer: float
    prefill_queue_fraction: tuple[tuple[str, float], ...]
    mla_decode_flops_eff: float
    decode_item_s: float
    step_overhead_s: tuple[tuple[str, float], ...]
    ttft_overhead_s: tuple[tuple[str, float], ...]
    comm_latency_scale: tuple[tuple[str, float], ...]
    eager_launch_s: tuple[tuple[str, float], ...]
    eager_skew_s: tuple[tuple[str, float], ...]
    idle_launch_s: tuple[tuple[str, float], ...]
    ttft_wait_steps: tuple[tuple[str, float], ...]
    adp_wait_steps: tuple[tuple[str, float], ...]
    seq_overhead_s: tuple[tuple[str, float], ...]
    custom_ar_latency_s: float
    custom_ar_twoshot_latency_s: float
    custom_ar_bw_eff: float
    custom_ar_barrier_s: float
    custom_ar_peer_s: float

    def gemm_eff(self, kernel: str) -> float:
        """Achievable fraction of peak for a GEMM kernel family: bf16, fp8, fp8_block (the kernel
        tables' block-scaled FP8), fp8_deepgemm (DeepGEMM's, on Hopper), fp8_cutlass (the CUTLASS per-tensor
        FP8 scaled-mm SGLang and vLLM run on Hopper), fp4 or w4a16."""
        return getattr(self, f"gemm_eff_{kernel}")

    def moe_eff_of(self, kernel: str) -> float:
        """A grouped (MoE) GEMM's efficiency relative to a dense GEMM of its kernel family, where no MoE
        kernel family of its own is named (moe_kernel): DeepGEMM's grouped kernels their own
        (moe_eff_fp8_deepgemm); W4A16's rates are Marlin's MoE kernel's already (default.toml), so 1; the
        kernel tables' the fitted moe_eff."""
        if kernel == "w4a16":
            return 1.0
        return self.moe_eff_fp8_deepgemm if kernel == "fp8_deepgemm" else self.moe_eff

    def moe_kernel(self, family: str | None, kernel: str, *, rate: float = 1.0) -> tuple[float, float, float]:
        """(scale on the dense tile model's rate of GEMM kernel family `kernel`, fixed cost per grouped-GEMM
        launch, routing time per token-expert assignment) of the MoE kernel family an engine runs
        (Engine.moe_kernel) for its experts: where this GPU family has the pair's own values, its
        efficiency (moe_kernel_eff, a share of the dense peak) over the dense kernel's (gemm_eff, times `rate`:
        cost.gemm.main_loop_rate, what that GPU's main loop keeps of it; the share is the GPU's own already), its
        fixed cost (moe_kernel_overhead_s) and routing time (moe_kernel_route_s); else the kernel tables'
        (moe_eff_of, moe_overhead_s, moe_route_s). `family` None: the tables'."""
        key = f"{family}.{kernel}"
        eff = dict(self.moe_kernel_eff).get(key)
        scale = self.moe_eff_of(kernel) if eff is None else eff / (self.gemm_eff(kernel) * rate)
        return scale, dict(self.moe_kernel_overhead_s).get(key, self.moe_overhead_s), dict(self.moe_kernel_route_s).get(key, self.moe_route_s)

    def moe_kernel_expert(self, family: str | None, kernel: str) -> float:
        """Time per grouped-GEMM launch per expert a rank holds, busy or not (moe_kernel_expert_s), of a MoE
        kernel family that sets up every local expert's problem each launch; 0 where the family has none."""
        return dict(self.moe_kernel_expert_s).get(f"{family}.{kernel}", 0.0)

    def param(self, name: str) -> float:
        """A parameter by the name a fit varies: a field, or "moe_kernel_eff.<family>.<kernel>" for a per-kernel-family one."""
        table, _, key = name.partition(".")
        if not key:
            return getattr(self, name)
        own = dict(getattr(self, table))
        if key in own:
            return own[key]
        kernel = key.partition(".")[2]  # what the pair falls back to, in its own terms
        if table == "moe_kernel_eff":
            return self.moe_eff_of(kernel) * self.gemm_eff(kernel)
        if table == "moe_kernel_expert_s":
            return 0.0
        return self.moe_overhead_s if table == "moe_kernel_overhead_s" else self.moe_route_s

    def with_param(self, name: str, value: float) -> "Calibration":
        """A copy with one parameter (param's names) set."""
        table, _, key = name.partition(".")
        if key:
            return replace(self, **{table: tuple(sorted({**dict(getattr(self, table)), key: value}.items()))})
        return replace(self, **{name: value})

    def gemm_bw(self, kernel: str) -> float:
        """Share of HBM bandwidth a GEMM kernel family streams at: W4A16's dequantising main loop its
        own, the others bw_eff."""
        return self.gemm_bw_eff_w4a16 if kernel == "w4a16" else self.bw_eff

    def gemm_overhead(self, kernel: str) -> float:
        return getattr(self, f"gemm_overhead_{kernel}_s")

    def gemm_k_half(self, kernel: str) -> float:
        return getattr(self, f"gemm_k_half_{kernel}")

    def step_overhead(self, backend: str) -> float:
        return self.engine("step_overhead_s", backend)

    def engine(self, name: str, backend: str) -> float:
        """A per-engine parameter (one of BACKEND_KEYED) of a registered engine."""
        d = dict(getattr(self, name))
        if backend not in d:
            raise _missing(backend, [name])
        return d[backend]

    def engine_values(self, backend: str) -> dict[str, float]:
        """Every per-engine parameter (BACKEND_KEYED) of one engine, or one line naming each per-engine
        table that lacks it: a registered engine takes no other engine's values."""
        tables = {k: dict(getattr(self, k)) for k in BACKEND_KEYED}
        missing = [k for k, d in tables.items() if backend not in d]
        if missing:
            raise _missing(backend, missing)
        return {k: d[backend] for k, d in tables.items()}

    def ttft_overhead(self, backend: str) -> float:
        return self.engine("ttft_overhead_s", backend)

    def eager_launch(self, backend: str) -> float:
        """Host-side cost per kernel launch in steps that run outside CUDA graphs (prefill)."""
        return self.engine("eager_launch_s", backend)

    def queue_fraction(self, backend: str) -> float:
        """The share of the rest of a "waves" run's wave that re-arrives with a request's cohort (0: the cohorts
        kept, 1: the whole wave in lockstep; serve.aggregated._own_prefill)."""
        return self.engine("prefill_queue_fraction", backend)

    def in_step(self, backend: str | None = None) -> "Calibration":
        """Parameters for kernels inside a captured serving step of an engine. Each kernel pays the
        fixed cost the kernel tables measured under CUDA graphs, no discount; what the tables' rows
        launch and the step does not (quantisation and norms fused into other kernels) is priced by
        the fusions the engine makes (spec.engines Engine.fusions, cost.kernels), and where the engine
        runs its own all-reduce instead of NCCL (Engine.own_allreduce, kernels.collective_time): the
        cost model is handed the engine beside this calibration. comm_latency_scale (1 unless a
        profile sets it) scales the NCCL collectives left. Kernels run at the tables' efficiencies in
        every engine: the attention kernels an engine picks instead of TensorRT-LLM's are priced by
        kind (Engine.attention_kernels), and GEMMs call the same libraries (the per-engine GEMM and
        attention scales once fitted here are removed)."""
        c = self.engine("comm_latency_scale", backend) if backend else 1.0
        if c == 1.0:
            return self
        return replace(self, **{k: getattr(self, k) * c for k in (
            "comm_latency_s", "comm_latency_slope_s", "comm_gather_latency_s", "comm_gather_latency_slope_s",
            "comm_a2a_latency_s", "comm_a2a_latency_slope_s", "comm_bw_half_bytes")})


def _missing(backend: str, tables: list[str]) -> InputError:
    """A registered engine that per-engine tables of the calibration do not list (its section is missing)."""
    return InputError("engine", backend, "a name every per-engine calibration table lists; missing from "
                      + ", ".join(f"[default.{t}]" for t in tables) + " (data/calibration/default.toml, or a profile)")


_FIELDS = {f.name for f in fields(Calibration)}
# parameters a profile may still name by an old name: what the value became (kdec f029b12: the per-head decode fallback's
# rate went from a share of the BF16 tensor peak to FLOP per SM clock, the peak's FLOP per SM clock being 2,048 on
# Ampere, 4,096 on Hopper, 8,192 on Blackwell: spec.hardware's per-family table)
RENAMED = {"attn_decode_wide_flops_eff": "was renamed attn_decode_wide_flop_clk (FLOP per SM clock): multiply by 2048 (ampere), "
                                         "4096 (hopper) or 8192 (blackwell)"}


def _apply(c: Calibration, section: dict, origin: str, name: str = "default") -> Calibration:
    """`section` ([`name`] of a profile: default or a GPU family's) over `c`."""
    kw = {}
    for k, v in section.items():
        if k in KERNEL_KEYED:
            kw[k] = _kernel_table(c, k, v, origin)
            continue
        if isinstance(v, dict) and k not in BACKEND_KEYED:
            # a table of engines under a name that is not per engine (or no longer is: the removed
            # gemm_eff_scale / attn_eff_scale) would otherwise be dropped in silence
            raise InputError(f"calibration.{k}", "a table", f"{origin}: per-engine tables are " + ", ".join(BACKEND_KEYED))
        if k in RENAMED:
            raise InputError(f"calibration.{k}", v, f"{origin}: {k} {RENAMED[k]}")
        if k not in _FIELDS:
            raise InputError(f"calibration.{k}", v, f"{origin}: known parameters are " + ", ".join(sorted(_FIELDS)))
        # every value finite and in the parameter's physical range (spec.validation.param_range)
        if k in BACKEND_KEYED:
            if not isinstance(v, dict):
                raise InputError(f"calibration.{k}", v, f"{origin}: a [{name}.{k}] table of engine = non-negative number")
            d = dict(getattr(c, k))
            d.update({b: check_param(f"calibration.{k}.{b}", k, x) for b, x in v.items()})
            # an engine that never holds a request under attention DP has no such wait to set: it would be ignored
            held = [b for b, x in v.items() if k == "adp_wait_steps" and b in ENGINES and not ENGINES[b].holds_adp_requests and x]
            if held:
                raise InputError(f"calibration.{k}.{held[0]}", v[held[0]], f"{origin}: 0 ({held[0]} never holds a request "
                                 "under attention DP: Engine.holds_adp_requests)")
            kw[k] = tuple(sorted(d.items()))
        else:
            kw[k] = check_param(f"calibration.{k}", k, v)
    return replace(c, **kw)


def _kernel_table(c: Calibration, name: str, v, origin: str) -> tuple[tuple[str, float], ...]:
    """A [<section>.<name>.<MoE kernel family>] table of GEMM kernel family = number over `c`'s own."""
    if not isinstance(v, dict):
        raise InputError(f"calibration.{name}", v, f"{origin}: a table per MoE kernel family ([<section>.{name}.<family>])")
    d = dict(getattr(c, name))
    for fam, per in v.items():
        if fam not in MOE_KERNELS:
            raise InputError(f"calibration.{name}.{fam}", per, f"{origin}: a MoE kernel family: " + ", ".join(MOE_KERNELS))
        if not isinstance(per, dict) or not set(per) <= set(GEMM_KERNELS):
            raise InputError(f"calibration.{name}.{fam}", per, f"{origin}: a table of GEMM kernel family (" + ", ".join(GEMM_KERNELS)
                             + ") = number")
        d.update({f"{fam}.{kern}": check_param(f"calibration.{name}.{fam}.{kern}", name, x) for kern, x in per.items()})
    return tuple(sorted(d.items()))


def _layers(doc: dict, family: str, origin: str, base: Calibration) -> Calibration:
    c = base
    if "default" in doc:
        c = _apply(c, doc["default"], origin)
    if family in doc:
        c = _apply(c, doc[family], origin, family)
    return c


def _sections(doc: dict, family: str, origin: str) -> dict:
    """A profile's top level checked: each key a table named [default], for a GPU family (the bundled
    ones, or the GPU's own where a GPU .toml names another) or [intervals] (measure.intervals reads it),
    so that `default = [1, 2]` is one line rather than a traceback, and a misspelt [defualt] is not
    ignored in silence."""
    known = ["default", *sorted(set(_bundled()[0]) - {"default"} | {family}), "intervals"]
    for k, v in doc.items():
        if k not in known:
            raise InputError(f"calibration.{k}", "a table" if isinstance(v, dict) else v, f"{origin}: "
                             + did_you_mean([f"[{n}]" for n in close_matches(k, known)]) + "a section named "
                             + ", ".join(f"[{n}]" for n in known))
        if not isinstance(v, dict):
            raise InputError(f"calibration.{k}", v, f"{origin}: a [{k}] table of parameter = number")
    return doc


@lru_cache(maxsize=1)
def _bundled() -> tuple[dict, dict]:
    root = resources.files("llm_codesign").joinpath("data/calibration")
    default = tomllib.loads(root.joinpath("default.toml").read_text())
    fitted_path = root.joinpath("fitted.toml")
    fitted = tomllib.loads(fitted_path.read_text()) if fitted_path.is_file() else {}
    return default, fitted


def _before_peer(doc: dict) -> dict:
    """A profile's sections with custom_ar_peer_s at 0 where one sets the one-shot's fixed cost (custom_ar_latency_s) but
    not it: `calibrate` wrote such a profile before that cost per further peer existed, fitting the fixed cost flat over
    2, 4 and 8 GPUs (the peers' cost inside it), so the bundled ~0.1 us a peer on top would count it twice. A section that
    sets neither keeps the bundled pair, fitted together."""
    return {k: v | {"custom_ar_peer_s": 0.0} if isinstance(v, dict) and "custom_ar_latency_s" in v and "custom_ar_peer_s" not in v
            else v for k, v in doc.items()}


def file_stamp(path) -> tuple | None:
    """What a cache of a file read by its path is keyed on beside the path: the file it resolves to now (device and
    inode: a relative path after a chdir, a file replaced by os.replace) and its size and modification and change times,
    so that a file rewritten (Profile.write, `calibrate -o` twice to one name, while the page runs) is read again rather
    than answered from the first read. One stat, ~1 us a call (a realpath was 15). None where it cannot be read (the
    reader then says why)."""
    import os

    try:
        st = os.stat(path)
    except (OSError, TypeError, ValueError):
        return None
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


@lru_cache(maxsize=64)
def _cached(family: str, profile: str | None, stamp: tuple | None = None) -> Calibration:  # stamp: file_stamp(profile)
    c = _layers(_bundled()[1], family, "fitted.toml", documented(family))
    if profile:
        origin = LABELS.get(profile, profile)  # an unwritten Profile's private file by what answers call it
        doc = _sections(read_toml(profile, "calibration", "a calibration profile"), family, origin)
        c = _layers(_before_peer(doc), family, origin, c)
    return c


def documented(family: str = "") -> Calibration:
    """default.toml alone: the cited starting values, before any fit."""
    doc = _bundled()[0]
    base = {k: tuple(sorted(v.items())) if k in BACKEND_KEYED or k in KERNEL_KEYED else v for k, v in doc["default"].items()}
    missing = sorted(_FIELDS - set(base))
    if missing:  # a packaging error, never user input
        raise RuntimeError(f"default.toml [default] lacks {missing}")
    return _layers({k: v for k, v in doc.items() if k != "default"}, family, "default.toml", _apply(Calibration(**base), doc["default"], "default.toml"))


def calibration_for(gpu, profile: str | None = None) -> Calibration:
    """Parameters of a GPU's family: defaults, then the bundled fit, then the user's profile."""
    return _cached(gpu.family, profile, file_stamp(profile) if profile else None)


LABELS: dict[str, str] = {}  # a private file's path -> what answers call it (measure.calibrate._temporary's: "this Profile")


def profile_label(path) -> str:
    """A profile as answers name it: its file's name, or the label of a private file (an unwritten Profile's)."""
    from pathlib import Path

    return LABELS.get(str(path)) or Path(path).name

