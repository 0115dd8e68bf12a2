"""GPU catalog: frozen specs loaded from cited TOML files (data/gpus/*.toml) or a user's own file."""
from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path, PurePath

import numpy as np

from llm_codesign.errors import InputError, MissingInput, close_matches, did_you_mean, parse_nested
from llm_codesign.spec.validation import check_gpu

MATH_PRECISIONS = ("bf16", "fp8", "fp4", "int8")


# a GPU file that does not state its block-scaled FP8 rate takes its family's: on Hopper the CUDA cores apply
# the scales after each 128-deep K block, 1/(1 + 8192/(2 x 128 x 128)) = 0.8 of the kernel's rate per SM
# (data/gpus/h100.toml block_scale_source; [hopper] gemm_eff_fp8_block is the scale-free rate); the tensor
# cores of later families apply them
BLOCK_SCALE_RATE = {"hopper": 0.8}
# dense BF16 tensor FLOP per SM (CU) per clock by family, so that peak("bf16") / (sms x it) is the clock the peak is
# quoted at (Gpu.sm_clocks_per_s): Ampere GA100 2,048 (1,024 FMA, A100 whitepaper; 312 TFLOPS / 108 SMs = 1.41 GHz),
# Ada and Blackwell SM120 1,024 (L40S 362 TFLOPS / 142 SMs = 2.49 GHz, RTX PRO 6000 500 / 188 = 2.60 GHz), Hopper
# 4,096 (data/gpus/h100.toml block_scale_source's 8,192 FP8; 989 TFLOPS / 132 SMs = 1.83 GHz), Blackwell 8,192
# (b200.toml smem_source: 2.25 PFLOPS / 148 SMs at ~1.86 GHz), CDNA3 2,048 (MI300X 1,307 TFLOPS / 304 CUs = 2.10 GHz),
# CDNA4 4,096 (MI355X 2,517 / 256 = 2.40 GHz): each the vendor's peak clock. A family not listed has no clock to read
# (Gpu.sm_clocks_per_s refuses it in one line where a price needs it).
BF16_FLOP_PER_CLK_SM = {"ampere": 2048, "ada": 1024, "blackwell_sm120": 1024, "hopper": 4096, "blackwell": 8192,
                        "cdna3": 2048, "cdna4": 4096}

@dataclass(frozen=True)
class Gpu:
    """One GPU's specifications in SI units (bytes, bytes/s, FLOP/s, watts), each with its source (`sources`): a catalog
    entry (`get_gpu("h100")`, `llm-codesign gpus`) or a GPU TOML of one's own; `to_dict()` in GB, TB/s and TFLOP/s."""
    id: str
    name: str
    vendor: str
    arch: str
    family: str  # calibration family: ampere, hopper, blackwell, ada, blackwell_sm120, cdna3, cdna4
    sms: int
    hbm_bytes: float  # the vendor's headline capacity, decimal bytes
    hbm_bandwidth_bytes_per_s: float
    l2_bytes: float
    scale_up_bandwidth_bytes_per_s: float  # per GPU, one direction, all its scale-up links together
    scale_up_domain: int
    scale_out_bandwidth_bytes_per_s: float  # per GPU, one direction (assumed NIC)
    tdp_w: float
    peak_flops: tuple[tuple[str, float], ...]  # (math precision, dense FLOP/s)
    fp4_formats: tuple[str, ...]
    tiles: tuple[tuple[int, int, int], ...]  # (tile M, tile N, SMs per tile)
    aliases: tuple[str, ...] = ()
    # operand bytes shared memory feeds the tensor cores per dense BF16 FLOP of an SM (0: not a bound);
    # a narrow GEMM tile needs more (cost.gemm.tile_feed)
    smem_bytes_per_bf16_flop: float = 0.0
    # share of its FP8 main loop's rate a GEMM that applies 128-deep K blocks' scales in software keeps
    # (cost.gemm.main_loop_rate; 1: the tensor cores apply them, or no such kernel is known to run short of it)
    block_scale_rate: float = 1.0
    # Capacity the driver reports (nvidia-smi, rocm-smi, torch.cuda.mem_get_info): what serving engines
    # size their KV caches from, and what every fit in this package uses. 0 reads as hbm_bytes.
    memory_bytes: float = 0.0
    sources: tuple[tuple[str, str], ...] = ()
    # how the scale-up domain's GPUs reach each other (spec.validation.SCALE_UP_TOPOLOGIES): "switch", any peer at the
    # whole scale_up_bandwidth (NVSwitch, a PCIe switch); "mesh", one point-to-point link to each of the domain's other
    # GPUs, each scale_up_bandwidth / (domain - 1) (AMD's 8-GPU xGMI boards; scale_up_link_bytes_per_s)
    scale_up_topology: str = "switch"
    # the catalog GPU this one is derived from (what_if: the page's what-if GPU, a GPU file with `base`), "" for none: its TDP and board
    # are the base's, so the bundled power figures carry (serve.energy.board_power), and its price where no figure differs
    # (explore.pricing.gpu_hour_price, same_figures)
    base_id: str = ""

    def __post_init__(self):
        if not self.memory_bytes > 0:
            object.__setattr__(self, "memory_bytes", self.hbm_bytes)

    def figures(self) -> tuple:
        """What the cost model reads of the hardware (every figure but names and sources), its FLOP/s rates as the
        nonzero ones in order: two GPUs alike here price alike."""
        return (self.vendor, self.arch, self.family, self.sms, self.hbm_bytes, self.memory_bytes, self.hbm_bandwidth_bytes_per_s,
                self.l2_bytes, self.scale_up_bandwidth_bytes_per_s, self.scale_up_domain, self.scale_out_bandwidth_bytes_per_s,
                self.tdp_w, tuple(sorted((k, v) for k, v in self.peak_flops if v > 0)), self.tiles, self.smem_bytes_per_bf16_flop,
                self.block_scale_rate, self.fp4_formats, self.scale_up_topology)

    def peak(self, math: str) -> float:
        """Dense FLOP/s of a math precision; 0.0 when the tensor cores lack it."""
        return dict(self.peak_flops).get(math, 0.0)

    def supports(self, math: str) -> bool:
        """Whether the tensor cores run this math precision (bf16, fp8, nvfp4, ...)."""
        return self.peak(math) > 0

    @property
    def sm_clocks_per_s(self) -> float:
        """SM (CU) clock cycles the GPU runs a second, all SMs together: the tensor peak over its BF16 FLOP per SM and
        clock (BF16_FLOP_PER_CLK_SM, by family), what a kernel whose rate is stated per SM clock scales by
        (cost.kernels' per-head decode fallback). A family not listed is refused: its FLOP per clock is not known."""
        per_clk = BF16_FLOP_PER_CLK_SM.get(self.family)
        if per_clk is None:
            from llm_codesign.errors import InputError

            raise InputError("gpu.family", self.family, "a family whose BF16 FLOP per SM clock is known, to price a decode "
                             "kernel stated per SM clock: one of " + ", ".join(sorted(BF16_FLOP_PER_CLK_SM)))
        return self.peak("bf16") / per_clk

    def scale_up_link_bytes_per_s(self, peers):
        """Bytes/s one GPU sends (one direction) to `peers` GPUs of its scale-up domain at once (arrays broadcast):
        on a switch its whole scale-up bandwidth whatever the count; on a full mesh the links to those peers alone,
        min(peers, domain - 1) of the domain - 1, 0 for none (RCCL models a GPU's xGMI to each peer as its own link,
        ROCm/rccl src/graph/topo.cc:590-593@0cbce2a; a 2-GPU collective on an 8-GPU MI300X board has 1 link of 7)."""
        peers = np.asarray(peers, float)
        bw = self.scale_up_bandwidth_bytes_per_s
        if self.scale_up_topology != "mesh":
            return bw + 0.0 * peers
        links = max(self.scale_up_domain - 1, 1)
        return bw * np.clip(peers, 0.0, links) / links

    @property
    def ridge_point(self) -> float:
        """FLOP/byte where BF16 compute equals HBM time."""
        return self.peak("bf16") / self.hbm_bandwidth_bytes_per_s

    def to_dict(self) -> dict:
        return {
            "id": self.id, "name": self.name, "vendor": self.vendor, "arch": self.arch,
            "family": self.family, "sms": self.sms, "hbm_gb": self.hbm_bytes / 1e9,
            "memory_gib": self.memory_bytes / 2**30,
            "hbm_tb_s": self.hbm_bandwidth_bytes_per_s / 1e12,
            "peak_tflops": {k: v / 1e12 for k, v in self.peak_flops},
            "fp4_formats": list(self.fp4_formats),
            "scale_up_gb_s": self.scale_up_bandwidth_bytes_per_s / 1e9,
            "scale_up_domain": self.scale_up_domain, "scale_up_topology": self.scale_up_topology,
            "scale_out_gb_s": self.scale_out_bandwidth_bytes_per_s / 1e9,
            "tdp_w": self.tdp_w, "aliases": list(self.aliases), "sources": dict(self.sources),
        }


_REQUIRED = ("id", "family", "sms", "hbm_bytes", "hbm_bandwidth_bytes_per_s", "peak_flops", "tdp_w")
# every key a GPU file takes, per table ("" the top level; [sources] is free-form): what gpu_from_toml reads, and the
# documentation-only keys the bundled files carry (the *_source citations, confidence), read by people, not the model.
# Any other key is refused: a misspelt optional one ("hbm_bandwith_tbs") was ignored in silence, its default priced.
_KEYS = {"": (*_REQUIRED, "name", "vendor", "arch", "aliases", "memory_bytes", "l2_bytes", "scale_up_bandwidth_bytes_per_s",
              "scale_up_domain", "scale_up_topology", "scale_out_bandwidth_bytes_per_s", "fp4_formats", "tiles", "sources",
              "memory_source", "nic_source", "scale_up_source", "confidence"),
         "peak_flops": MATH_PRECISIONS,
         "tiles": ("shapes", "smem_bytes_per_bf16_flop", "block_scale_rate", "source", "smem_source", "block_scale_source")}


def _check_keys(d: dict, origin: str) -> None:
    """Each key of a parsed GPU file one it takes (_KEYS), else one InputError naming the key, the file, the close keys
    (errors.close_matches) and the keys that table takes."""
    for table, known in _KEYS.items():
        sub = d if not table else d.get(table)
        for k in sub if isinstance(sub, dict) else ():  # a table that is not one is check_gpu's to refuse
            if k not in known:
                raise InputError(f"gpu.{table}" if table else "gpu", k, did_you_mean(close_matches(k, known)) + f"a key a GPU file"
                                 f"{f' [{table}]' if table else ''} takes ({origin} has it), one of: {', '.join(sorted(known))}")


# a GPU file's id: typed on command lines (--gpu ID, sweep's tasks name their GPU by it) and shown in every answer
_ID = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")


def _check_id(given) -> str:
    """A GPU file's id, lower-cased; one with spaces, or characters a command line or a file name would not take whole
    (`a/b`, `-x`, `.x`), one line (an empty one is check_gpu's)."""
    gid = str(given).lower()
    if any(c.isspace() for c in gid.strip()):
        # a suggestion the twin check (get_gpu) would refuse in turn: "H100 SXM" -> h100-sxm, the bundled H100's alias
        e_g = '-'.join(gid.split())
        raise InputError("gpu.id", given, f"a name without spaces, e.g. {'my-' if _norm(e_g) in _alias_table() else ''}{e_g}")
    if not _ID.fullmatch(gid):
        raise InputError("gpu.id", given, "letters, digits, '.', '_' and '-', the first a letter or digit, at most 64 "
                         "(it is typed on command lines and may name a file)")
    return gid


def gpu_from_toml(text: str, origin: str) -> Gpu:
    try:
        d = parse_nested(tomllib.loads, text, "gpu", origin)
    except tomllib.TOMLDecodeError as e:
        raise InputError("gpu", origin, f"a valid TOML file ({e})") from None
    # unknown keys first, each with its closest valid name: a misspelt required one ("hbm_bandwith_tbs") is named as such
    # ("did you mean hbm_bandwidth_bytes_per_s?"); checked after the required ones, the only key left to name was a
    # valid optional one ("it has scale_up_bandwidth_bytes_per_s: a misspelling?")
    if "base" in d:  # the what-if form (base + what-if keys), as the API's what_if
        return _gpu_from_base(d, origin)
    _check_keys(d, origin)
    for f in _REQUIRED:
        if f not in d:
            raise MissingInput(f"gpu.{f}", f"{origin} must define {', '.join(_REQUIRED)}")
    check_gpu(d, origin)  # types, finite positive figures, tile shapes (spec.validation)
    gid = _check_id(d["id"])
    peaks = {k: float(v) for k, v in d["peak_flops"].items()}  # _check_keys took MATH_PRECISIONS alone
    if peaks.get("bf16", 0) <= 0:
        raise InputError("gpu.peak_flops.bf16", d["peak_flops"].get("bf16"), "a positive FLOP/s figure")
    for f in ("sms", "hbm_bytes", "hbm_bandwidth_bytes_per_s", "tdp_w", "memory_bytes"):
        if f in d and not (isinstance(d[f], int | float) and float(d[f]) > 0):
            raise InputError(f"gpu.{f}", d[f], "a positive number")
    tiles = d.get("tiles", {}).get("shapes", [[128, 128, 1], [128, 256, 1], [64, 128, 1]])
    return Gpu(
        id=gid, name=str(d.get("name", d["id"])), vendor=str(d.get("vendor", "unknown")).lower(),
        arch=str(d.get("arch", "")), family=str(d["family"]), sms=int(d["sms"]),
        hbm_bytes=float(d["hbm_bytes"]), hbm_bandwidth_bytes_per_s=float(d["hbm_bandwidth_bytes_per_s"]),
        l2_bytes=float(d.get("l2_bytes", 0.0)),
        scale_up_bandwidth_bytes_per_s=float(d.get("scale_up_bandwidth_bytes_per_s", 0.0)),
        scale_up_domain=int(d.get("scale_up_domain", 1)), scale_up_topology=str(d.get("scale_up_topology", "switch")),
        scale_out_bandwidth_bytes_per_s=float(d.get("scale_out_bandwidth_bytes_per_s", 50e9)),
        tdp_w=float(d["tdp_w"]), peak_flops=tuple(sorted(peaks.items())),
        fp4_formats=tuple(d.get("fp4_formats", ["nvfp4", "mxfp4"] if "fp4" in peaks else [])),
        tiles=tuple(tuple(int(x) for x in t) for t in tiles),
        smem_bytes_per_bf16_flop=float(d.get("tiles", {}).get("smem_bytes_per_bf16_flop", 0.0)),
        block_scale_rate=float(d.get("tiles", {}).get("block_scale_rate", BLOCK_SCALE_RATE.get(str(d["family"]), 1.0))),
        aliases=tuple(d.get("aliases", ())), memory_bytes=float(d.get("memory_bytes", 0.0)),
        sources=tuple((k, str(v)) for k, v in d.get("sources", {}).items())
        + ((("memory", str(d["memory_source"])),) if "memory_source" in d else ())
        + ((("smem_feed", str(d["tiles"]["smem_source"])),) if "smem_source" in d.get("tiles", {}) else ()),
    )


@lru_cache(maxsize=1)
def catalog() -> dict[str, Gpu]:
    out = {}
    for f in sorted(resources.files("llm_codesign").joinpath("data/gpus").iterdir()):
        if f.name.endswith(".toml"):
            g = gpu_from_toml(f.read_text(), f.name)
            out[g.id] = g
    return out


def _norm(s: str) -> str:
    return s.strip().lower().replace("_", "-").replace(" ", "-")


@lru_cache(maxsize=1)
def _alias_table() -> dict[str, str]:
    table = {}
    for g in catalog().values():
        for a in (g.id, *g.aliases):
            table[_norm(a)] = g.id
    return table


HOWTO_NEW_GPU = "docs/howto/compare-gpus.md#a-gpu-that-is-not-in-the-catalog"


@lru_cache(maxsize=1)
def _not_in_catalog() -> dict[str, dict]:
    """Known GPUs the catalog does not hold (data/gpus_not_in_catalog.toml: data-sheet figures), by each name normalised as
    the catalog's ids are: refused as such, not matched onto a catalog GPU of other bandwidth and power."""
    doc = tomllib.loads(resources.files("llm_codesign").joinpath("data/gpus_not_in_catalog.toml").read_text(encoding="utf-8"))
    return {_norm(a): g for g in doc["gpu"] for a in (g["name"], *g["aliases"])}


def not_in_catalog(known: dict, advice: str | None = None) -> str:
    """What to say of a known GPU the catalog lacks: the data-sheet figures where it differs from its nearest catalog GPU
    (H100 PCIe against h100, the SXM: bandwidth 2 vs 3.35 TB/s, TDP 350 vs 700 W, SMs 114 vs 132) and how to write its .toml,
    or `advice` in its place (the web page's server, which reads no GPU .toml)."""
    near = catalog()[known["nearest"]]
    pairs = (("memory", known["hbm_gb"], near.hbm_bytes / 1e9, "GB"), ("bandwidth", known["bandwidth_tb_s"], near.hbm_bandwidth_bytes_per_s / 1e12, "TB/s"),
             ("TDP", known["tdp_w"], near.tdp_w, "W"), ("SMs" if near.vendor == "nvidia" else "CUs", known["sms"], near.sms, ""))
    differs = ", ".join(f"{what} {a:g} vs {b:g}{' ' + unit if unit else ''}" for what, a, b, unit in pairs if abs(a - b) > 1e-9 * max(a, b))
    return (f"a GPU in the catalog ({known['name']} is not in it: it differs from {near.id}, the {near.name}, in {differs or 'nothing listed'}; "
            f"{known['source']}); " + (advice or f"write a GPU .toml from {near.id}'s with its figures and give its path ({HOWTO_NEW_GPU})"))


def get_gpu(name_or_path: str) -> Gpu:
    """A catalog id, a common spelling of it, or a path to the user's own GPU TOML."""
    if isinstance(name_or_path, PurePath):
        name_or_path = str(name_or_path)
    if not isinstance(name_or_path, str):  # a notebook's None or number: one line, not an AttributeError
        raise InputError("gpu", name_or_path, "a GPU id, one of: " + ", ".join(catalog()) + " (or a path to a GPU .toml)")
    if name_or_path.endswith(".toml"):
        p = Path(name_or_path)
        if not p.is_file():
            raise InputError("gpu", name_or_path, "an existing .toml file or one of: " + ", ".join(catalog()))
        try:
            text = p.read_text(encoding="utf-8-sig")
        except UnicodeDecodeError as e:
            raise InputError("gpu", name_or_path, f"a UTF-8 TOML file ({e.reason} at byte {e.start})") from None
        g = gpu_from_toml(text, str(p))
        # a user's file named as a bundled GPU is taken for it wherever a GPU is looked up by id (its price; sweep's
        # workers, which rebuild each task's GPU from its id)
        twin = _alias_table().get(_norm(g.id))
        if twin is not None:
            raise InputError("gpu.id", g.id, f"a name no bundled GPU has ({g.id} is the bundled {catalog()[twin].name}, which answers "
                             f"would take for this file's), e.g. my-{g.id}")
        return g
    gid = _alias_table().get(_norm(name_or_path))
    if gid is None and (known := _not_in_catalog().get(_norm(name_or_path))) is not None:
        raise InputError("gpu", name_or_path, not_in_catalog(known))
    if gid is None:
        near = list(dict.fromkeys(_alias_table()[a] for a in close_matches(_norm(name_or_path), _alias_table(), n=6)))[:2]
        raise InputError("gpu", name_or_path, did_you_mean(near) + "one of: " + ", ".join(catalog())
                         + " (or a path to a GPU .toml)")
    return catalog()[gid]


# what-if key (the page's form, the API's what_if, a GPU file with `base`) -> (GPU TOML field, the key's unit in the
# TOML's, the unit's name). memory_gb is the driver's memory in GB of 1e9 bytes (the TOML's memory_bytes), not the GiB
# `gpus` prints: the H200's 140.4 GiB is memory_gb 150.75 (docs/howto/compare-gpus.md)
WHAT_IF_FIELDS = {
    "hbm_tb_s": ("hbm_bandwidth_bytes_per_s", 1e12, "TB/s"), "memory_gb": ("memory_bytes", 1e9, "GB"),
    "bf16_tflops": ("peak_flops.bf16", 1e12, "TFLOP/s"), "fp8_tflops": ("peak_flops.fp8", 1e12, "TFLOP/s"),
    "fp4_tflops": ("peak_flops.fp4", 1e12, "TFLOP/s"), "scale_up_gb_s": ("scale_up_bandwidth_bytes_per_s", 1e9, "GB/s"),
    "scale_up_domain": ("scale_up_domain", 1, "GPUs"),
}


def what_if_valid(form: str, base=None) -> str:
    """What check_gpu accepts for a what-if key, in the key's unit (its ranges: spec.validation); memory_gb on `base`, whose
    headline capacity follows it at the base's headline/driver ratio and is held to the same range (newc10 #11: 1 GB on
    an H100, 1e9 x 80 / 85.52 = 0.935 GB headline, was refused as "a number from 1 to 1e+06")."""
    from llm_codesign.spec.validation import GPU_NUMBERS, PEAK_FLOPS

    toml, scale, unit = WHAT_IF_FIELDS[form]
    if toml.startswith("peak_flops"):
        lo, hi = PEAK_FLOPS[0] / scale, PEAK_FLOPS[1] / scale
        return (f"dense {unit} from {lo:g} to {hi:g}" + ("" if form == "bf16_tflops" else " (0: the tensor cores lack it)"))
    if form == "scale_up_domain":
        return "a whole number of GPUs from 1 to 1048576"
    if form == "scale_up_gb_s":
        return (f"0 (no scale-up link) or from {GPU_NUMBERS['hbm_bandwidth_bytes_per_s'][0] / scale:g} to "
                f"{GPU_NUMBERS[toml][1] / scale:g} {unit} per GPU, one direction; positive where the domain holds more than one GPU")
    lo, hi, lo_open = GPU_NUMBERS[toml]
    if form == "memory_gb" and base is not None and base.hbm_bytes > 0:  # hbm_bytes = memory x hbm / memory of the base
        r = base.memory_bytes / base.hbm_bytes
        lo, hi = max(lo, GPU_NUMBERS["hbm_bytes"][0] * r), min(hi, GPU_NUMBERS["hbm_bytes"][1] * r)
        return (f"a number from {lo / scale:.4g} to {hi / scale:.4g} {unit} ({base.id}'s driver reports {r:.4g}x its data sheet's "
                f"capacity, which follows memory_gb and is held to {GPU_NUMBERS['hbm_bytes'][0] / scale:g} {unit} or more)")
    return (f"a number more than {lo / scale:g} and at most {hi / scale:g} {unit}" if lo_open
            else f"a number from {lo / scale:g} to {hi / scale:g} {unit}")


def _what_if_figures(base: Gpu, name: str, given: dict) -> dict:
    """The GPU-file dict of a what-if GPU: its base's figures with the given keys' (in the keys' units)."""
    d = {"id": name, "family": base.family, "sms": base.sms, "hbm_bytes": base.hbm_bytes, "memory_bytes": base.memory_bytes,
         "hbm_bandwidth_bytes_per_s": base.hbm_bandwidth_bytes_per_s, "l2_bytes": base.l2_bytes,
         "scale_up_bandwidth_bytes_per_s": base.scale_up_bandwidth_bytes_per_s, "scale_up_domain": base.scale_up_domain,
         "scale_out_bandwidth_bytes_per_s": base.scale_out_bandwidth_bytes_per_s, "tdp_w": base.tdp_w,
         "peak_flops": dict(base.peak_flops), "scale_up_topology": base.scale_up_topology}
    for f, v in given.items():
        toml, scale, _ = WHAT_IF_FIELDS[f]
        if toml.startswith("peak_flops."):
            d["peak_flops"][toml.split(".", 1)[1]] = v * scale
        else:
            d[toml] = v * scale if f != "scale_up_domain" else v
    if "memory_gb" in given and base.memory_bytes > 0:  # the headline capacity keeps its ratio to the driver's
        d["hbm_bytes"] = base.hbm_bytes * d["memory_bytes"] / base.memory_bytes
    return d


def what_if(base: Gpu, name: str, given: dict, field: str = "what_if", how: str = "the page's form") -> Gpu:
    """A what-if GPU (the page's form, the API's `what_if`, a GPU file with `base`): `base`'s figures with the `given`
    what-if keys' (WHAT_IF_FIELDS, in their units), checked as a GPU TOML is; a figure the check refuses is named
    `{field}.{key}` in the key's unit. It keeps the base's family (so its calibration), SMs, tiles, caches, NIC and TDP."""
    from dataclasses import replace

    d = _what_if_figures(base, name, given)
    # a mesh's per-GPU links are its base's own (MI300X: 7 xGMI links to 7 peers, crevA); a domain of another size is no
    # board of those links (one GPU has no peer; larger AMD domains, UALink/Helios, are switched), so it is priced switched
    switched = d["scale_up_domain"] != base.scale_up_domain and base.scale_up_topology != "switch"
    if switched:
        d["scale_up_topology"] = "switch"
    try:
        check_gpu(d, f"what-if GPU {name} (from {base.id})")
    except InputError as e:
        # hbm_bytes follows memory_gb; a domain without a link is the bandwidth's fault, as in a TOML
        form = "memory_gb" if e.field == "gpu.hbm_bytes" else next(
            (f for f, (t, _, _) in WHAT_IF_FIELDS.items() if e.field == f"gpu.{t}"), None)
        if form is None:
            raise
        valid = what_if_valid(form, base)
        if form == "scale_up_gb_s" and not d["scale_up_bandwidth_bytes_per_s"]:
            valid = f"a positive figure: its scale-up domain holds {d['scale_up_domain']} GPUs (or make that 1)"
        raise InputError(f"{field}.{form}", given.get(form, e.value / WHAT_IF_FIELDS[form][1]), valid) from None
    peaks = {k: float(v) for k, v in d["peak_flops"].items() if v > 0}
    fp4 = base.fp4_formats or ("nvfp4", "mxfp4")  # gpu_from_toml's default where a TOML names none
    changed = ", ".join(f"{f} = {v:g}" for f, v in given.items()) or "nothing"
    if switched:
        changed += f" (a scale-up domain other than {base.id}'s {base.scale_up_domain} GPUs is priced switched, not its mesh)"
    return replace(base, id=name, name=f"what-if GPU from {base.name}", aliases=(), hbm_bytes=float(d["hbm_bytes"]),
                   memory_bytes=float(d["memory_bytes"]), hbm_bandwidth_bytes_per_s=float(d["hbm_bandwidth_bytes_per_s"]),
                   scale_up_bandwidth_bytes_per_s=float(d["scale_up_bandwidth_bytes_per_s"]),
                   scale_up_domain=int(d["scale_up_domain"]), scale_up_topology=d["scale_up_topology"], peak_flops=tuple(sorted(peaks.items())),
                   fp4_formats=fp4 if "fp4" in peaks else (), sources=(("what_if", f"{base.id} with {changed} ({how})"),),
                   base_id=base.id)


# the keys a GPU file with `base` takes: what the API's what_if takes (WHAT_IF_FIELDS), its id, its base
_BASE_KEYS = ("base", "id", *WHAT_IF_FIELDS)


def _gpu_from_base(d: dict, origin: str) -> Gpu:
    """A GPU file that names a catalog GPU as its `base` and the what-if keys it changes (hbm_tb_s = 6): the API's what-if
    GPU (what_if), read from a file; its keys and their errors are the API's, named gpu.<key>."""
    for k in d:
        if k not in _BASE_KEYS:
            raise InputError("gpu", k, did_you_mean(close_matches(k, _BASE_KEYS)) + f"a key a GPU file with a base takes ({origin} "
                             f"has it), one of: {', '.join(_BASE_KEYS)} (a file with every figure has no base)")
    base_ref = d["base"]
    if not isinstance(base_ref, str) or base_ref.strip().lower().endswith(".toml"):
        raise InputError("gpu.base", base_ref, "a catalog GPU id, one of: " + ", ".join(catalog()))
    try:
        base = get_gpu(base_ref)
    except InputError as e:
        raise InputError("gpu.base", base_ref, e.valid) from None
    if "id" not in d:
        raise MissingInput("gpu.id", f"{origin} must define id (its name in the answers), e.g. my-{base.id}")
    gid = _check_id(d["id"])
    given = {}
    for k in WHAT_IF_FIELDS:
        if k in d:
            v = d[k]
            whole = k == "scale_up_domain"
            if isinstance(v, bool) or not isinstance(v, int | float) or (whole and not isinstance(v, int)):
                raise InputError(f"gpu.{k}", v, what_if_valid(k, base))
            given[k] = v
    return what_if(base, gid, given, field="gpu", how=f"{origin}'s what-if keys")
