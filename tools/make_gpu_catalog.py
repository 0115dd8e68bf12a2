"""Regenerate src/llm_codesign/data/gpus/*.toml from a GPU reference file of published specifications:

    python tools/make_gpu_catalog.py gpu-reference.yaml

(per-GPU entries with a `sources:` block, as each TOML's [sources] records them).

Run once by hand when the reference changes; the TOML files are the package's data (committed),
so the package itself never needs PyYAML. Assumed values that are not in the reference (NIC per
GPU, GEMM tile shapes) are written with their own source line.
"""
from __future__ import annotations

import sys
from pathlib import Path

import yaml

MISSING = "named in gpu-reference.yaml without a sources entry"
ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "src" / "llm_codesign" / "data" / "gpus"

# id, yaml key, family, aliases (with the names nvidia-smi / amd-smi print for it), NIC Gb/s per GPU (assumption, see nic_source), tile family
ENTRIES = [
    ("a100", "A100_SXM_80GB", "ampere", ["a100_sxm", "a100-sxm", "a100-80gb", "a100_sxm_80gb", "a100-sxm4-80gb", "NVIDIA A100-SXM4-80GB"], 200, "ampere"),
    ("h100", "H100_SXM", "hopper", ["h100_sxm", "h100-sxm", "h100-sxm5", "h100_sxm5", "h800", "H100-SXM5-80GB", "NVIDIA H100 80GB HBM3"], 400, "hopper"),
    ("h200", "H200_SXM", "hopper", ["h200_sxm", "h200-sxm", "h200-141gb", "NVIDIA H200"], 400, "hopper"),
    ("b200", "B200", "blackwell", ["b200_sxm", "b200-sxm", "b200-180gb", "dgx-b200", "NVIDIA B200"], 400, "blackwell"),
    ("gb200", "GB200_per_GPU", "blackwell", ["gb200_nvl72", "gb200-nvl72", "gb200_per_gpu"], 400, "blackwell"),
    ("b300", "B300", "blackwell", ["b300_sxm", "b300-sxm", "blackwell-ultra"], 800, "blackwell"),
    ("gb300", "GB300_per_GPU", "blackwell", ["gb300_nvl72", "gb300-nvl72", "gb300_per_gpu"], 800, "blackwell"),
    ("l40s", "L40S", "ada", ["l40s_pcie", "l40s-48gb", "NVIDIA L40S"], 200, "ampere"),
    ("rtx-pro-6000", "RTX_PRO_6000_Blackwell_Server", "blackwell_sm120", ["rtx_pro_6000", "rtxpro6000", "rtx-pro-6000-blackwell", "rtx_pro_6000_blackwell_server"], 400, "ampere"),
    ("mi300x", "MI300X", "cdna3", ["mi300", "mi300x_oam", "AMD Instinct MI300X"], 400, "cdna3"),
    ("mi325x", "MI325X", "cdna3", ["mi325", "AMD Instinct MI325X"], 400, "cdna3"),
    ("mi355x", "MI355X", "cdna4", ["mi355", "AMD Instinct MI355X"], 400, "cdna4"),
]

# the scale-out NIC per GPU where a vendor page or the runs' own scripts name it; elsewhere the Gb/s of ENTRIES is assumed
NIC_SOURCE = {
    "h100": 'NVIDIA DGX BasePOD reference architecture, Core Components (docs.nvidia.com/dgx-basepod/reference-architecture-infrastructure-foundation-enterprise-ai/latest/core-components.html): DGX H100/H200, four OSFP ports serving eight single-port ConnectX-7 VPI, up to 400 Gb/s InfiniBand/Ethernet; NVIDIA DGX H100 User Guide 1.2.3 Network Modules, Table 6: each of the 8 GPUs has its own ConnectX-7 (mlx5_0..11)',
    "b200": 'NVIDIA DGX BasePOD reference architecture, Core Components (docs.nvidia.com/dgx-basepod/reference-architecture-infrastructure-foundation-enterprise-ai/latest/core-components.html): DGX B200, four OSFP ports serving eight single-port ConnectX-7 VPI, up to 400 Gb/s InfiniBand/Ethernet, one per GPU (the compute fabric)',
    "mi355x": "AMD Pensando Pollara 400 AI NIC, up to 400 Gb/s Ethernet (amd.com/en/products/network-interface-cards/pensando.html); the NICs of InferenceX's MI355X disaggregated runs (SemiAnalysisAI/InferenceX@843c6254 benchmarks/multi_node/amd_utils/helpers/rdma_check.sh:19-22, ionic devices); one per GPU assumed (the count is not in the source)",
}
NIC_SOURCE["h200"] = NIC_SOURCE["h100"]
# AMD's 8-GPU boards are a full xGMI mesh, one link to each of the 7 peers (Gpu.scale_up_topology), not a switch
_XGMI_MESH = ("AMD Instinct {gpu} platform: 8 GPUs fully connected by 7 AMD Infinity Fabric (xGMI) links each, {bidi} GB/s "
              "bidirectional ({uni} GB/s each way) a link, {agg} GB/s each way a GPU (AMD Instinct {gpu} data sheet, "
              "amd.com/en/products/accelerators/instinct; {doc}). RCCL models each peer's xGMI as its own link (ROCm/rccl@0cbce2a src/graph/topo.cc:590-593, "
              "ncclTopoAddXGMI: count x per-link speed to that one GPU) and builds its rings over the 8-GPU all-to-all "
              "connMatrix (src/graph/rome_models.cc:549-559, rome_model_79, nLinks = 7)")
_MI300_DOC = "ROCm docs 'AMD Instinct MI300 Series microarchitecture', node-level topology"
MESH_SOURCE = {"mi300x": _XGMI_MESH.format(gpu="MI300X", bidi=128, uni=64, agg=448, doc=_MI300_DOC),
               "mi325x": _XGMI_MESH.format(gpu="MI325X", bidi=128, uni=64, agg=448, doc=_MI300_DOC),
               "mi355x": _XGMI_MESH.format(gpu="MI355X", bidi=153.6, uni=76.8, agg=537.6,
                                           doc="AMD CDNA 4 architecture white paper, 8-GPU platform")}
_NIC_ASSUMED = "assumption: one {} Gb/s NIC per GPU (ConnectX-7 400G on HGX H100/H200/B200 and GB200, ConnectX-8 800G on B300/GB300; 200G on PCIe/Ampere systems)"

# Memory the driver reports (nvidia-smi "Total", rocm-smi "VRAM Total Memory"): engines size their KV
# caches from it (torch.cuda.mem_get_info), and it is not the headline figure in decimal GB. NVIDIA and
# AMD quote binary gigabytes, less what ECC/firmware reserve. MiB as printed by nvidia-smi in public
# logs of idle GPUs; rocm-smi prints bytes.
_SMI = "nvidia-smi on an idle GPU, 'Memory-Usage' total, as printed in many public logs (e.g. GitHub search '0MiB / {v}MiB')"
REPORTED = {
    "a100": (81920 * 2**20, _SMI.format(v=81920) + " for A100-SXM4-80GB"),
    "h100": (81559 * 2**20, _SMI.format(v=81559) + " for H100 80GB HBM3"),
    "h200": (143771 * 2**20, _SMI.format(v=143771) + " for H200 (and H200 NVL)"),
    "b200": (183359 * 2**20, _SMI.format(v=183359) + " for B200"),
    "gb200": (189471 * 2**20, _SMI.format(v=189471) + " for GB200"),
    "b300": (275040 * 2**20, _SMI.format(v=275040) + " for 'NVIDIA B300 SXM6 AC'; aiconfigurator's b300_sxm.yaml system file carries the same mem_capacity 288400343040 (275040MiB)"),
    "gb300": (284208 * 2**20, _SMI.format(v=284208) + " for GB300"),
    "l40s": (46068 * 2**20, _SMI.format(v=46068) + " for L40S (ECC on)"),
    "rtx-pro-6000": (97887 * 2**20, _SMI.format(v=97887) + " for RTX PRO 6000 Blackwell Server Edition"),
    "mi300x": (206158430208, "rocm-smi --showmeminfo vram 'VRAM Total Memory (B): 206158430208' (192 GiB) on MI300X, public logs"),
    "mi325x": (256 * 2**30, "assumption: 256 GiB, AMD's binary-GB convention as on MI300X (rocm-smi 192 GiB for '192 GB'); no public rocm-smi log found"),
    "mi355x": (288 * 2**30, "assumption: 288 GiB, AMD's binary-GB convention as on MI300X (rocm-smi 192 GiB for '192 GB'); no public rocm-smi log found"),
}

# PCIe-only cards: the GPUs of one server reach each other by PCIe peer-to-peer without a NIC, so the
# server is their scale-up domain, at PCIe bandwidth. The TensorRT-LLM perf overview runs TP8 in one
# trtllm-bench process on 8 L40S (v0.17 tables) and on 8 RTX PRO 6000 Server Edition (v1.0 tables).
PCIE_SERVER_GPUS = 8
PCIE_SOURCE = ("PCIe peer-to-peer inside one server: NVIDIA/TensorRT-LLM docs/source/performance/perf-overview.md runs TP8 "
               "on 8 L40S (v0.17) and on 8 RTX PRO 6000 Blackwell Server Edition (v1.0) in one trtllm-bench process")

TILES = {
    # (m, n, ctas per tile): Hopper wgmma CTA tiles 64xN/128xN (ptx_isa_wgmma, typical_cta_tiles)
    "hopper": [(64, 64, 1), (64, 128, 1), (128, 64, 1), (128, 128, 1), (128, 256, 1)],
    # Blackwell tcgen05: cta_group::1 M=128, cta_group::2 M=256 over a CTA pair (ptx_isa_tcgen05)
    "blackwell": [(128, 64, 1), (128, 128, 1), (128, 256, 1), (256, 128, 2), (256, 256, 2)],
    # mma.sync class (Ampere/Ada/sm_120): CUTLASS default 128x128, 128x256, 64x128
    "ampere": [(64, 64, 1), (64, 128, 1), (128, 64, 1), (128, 128, 1), (128, 256, 1)],
    # AMD MFMA: hipBLASLt macro tiles 128x128/256x256 (rocm_gpu_specs)
    "cdna": [(64, 128, 1), (128, 128, 1), (256, 256, 1)],
    # gfx942 (MI300X/MI325X): the tiles AITER's tuned kernels pick there, 16-64 rows for few tokens (block-scale
    # GEMM 16x64 to 128x128, fused MoE stage 1 16x128 to 64x256), and hipBLASLt's 256x256
    "cdna3": [(16, 64, 1), (32, 64, 1), (64, 64, 1), (16, 128, 1), (32, 128, 1), (64, 128, 1), (128, 128, 1), (32, 256, 1),
              (64, 256, 1), (256, 256, 1)],
}
# gfx950 (MI355X): AITER's kernels tuned there pick the same CK block-scale tiles from 16 rows (16x64 at M = 1-32 in 158 of
# its 207 rows, 64x64 / 128x128 from a few hundred tokens), so the same list (TILE_SOURCE's cdna4 names the rows)
TILES["cdna4"] = TILES["cdna3"]
# Shared-memory bytes the tensor cores can read per dense BF16 FLOP of an SM, where a measurement shows
# it binds: 128 B/clk against tcgen05's 8,192 BF16 FLOP/clk/SM on B200 (SemiAnalysis, "Dissecting Nvidia
# Blackwell", 2026-03-31: SS-mode UMMA with N < 128 is shared-memory bound at ~128 B/cycle). Other
# families' tensor cores run at half the rate or less against the same 128 B/clk: no bound written.
SMEM_FEED = {"blackwell": (128 / 8192, "SemiAnalysis, Dissecting Nvidia Blackwell (2026-03-31): SS-mode tcgen05 MMA with N < 128 is "
                           "shared-memory bound at ~128 B/cycle per SM; 8,192 dense BF16 FLOP/clk per SM (B200: 2.25 PFLOPS over 148 SMs at ~1.86 GHz)")}
# block-scaled FP8 on Hopper runs at a share of its kernel's rate (Gpu.block_scale_rate; spec/hardware.py)
BLOCK_SCALE = {"hopper": (0.8, (
    'block-scaled FP8 on Hopper: WGMMA accumulates each 128-deep K block, then CUDA cores scale and add '
    'it to the FP32 accumulators (DeepSeek-V3 technical report sec. 3.3.2): per K block a tm x tn tile '
    'costs 2 tm tn 128 FLOPs of MMA at 8,192 dense FP8 FLOP/clk per SM and tm tn FMAs at 128 FP32 lanes '
    "per SM, 1/(1 + 8192 / (2 x 128 x 128)) = 0.8 where the two do not overlap (TensorRT-LLM's block-"
    "scale GEMM: 0.79-0.82 of its per-tensor FP8 GEMM's rate in the H100 tables; DeepGEMM overlaps them: "
    'its own family)'))}
TILE_SOURCE = {
    "hopper": "gemm_tile_facts.hopper_sm90 (PTX ISA wgmma m64nNk16, N = 8..256; typical CTA tiles 128x128, 128x256, 64xN; 64/128 x 64 for narrow N)",
    "blackwell": "gemm_tile_facts.blackwell_sm100 (PTX ISA tcgen05 cta_group::1 M=128, cta_group::2 M=256 over two SMs, N<=256)",
    "ampere": "CUTLASS mma.sync threadblock tiles 128x128, 128x256, 64x128, 128x64, 64x64 (no TMEM/2-CTA, gemm_tile_facts.sm120_note)",
    "cdna": "gemm_tile_facts.amd_cdna (MFMA per wavefront; hipBLASLt macro tiles 64x128..256x256)",
    "cdna3": ("ROCm/aiter@e4048607 aiter/configs/model_configs: the tiles of the kernels tuned on gfx942 (304 CUs), "
              "a8w8_blockscale_tuned_gemm_ds_v3.csv (a8w8_blockscale_1x128x128_256x{M}x{N}x..: 16x64, 32x64, 64x64, 16x128, "
              "32x128, 64x128, 128x128) and a8w8_blockscale_tuned_fmoe_ds_v3.csv (fmoe_stage1_..._g1u1_{M}x{N}: 16x128, 16x256, "
              "32x256, 64x256); hipBLASLt macro tiles up to 256x256 (gemm_tile_facts.amd_cdna)"),
    "cdna4": ("ROCm/aiter@e4048607 aiter/configs/model_configs: the tiles of the kernels tuned on gfx950 (256 CUs), "
              "a8w8_blockscale_tuned_gemm_ds_v3.csv:39-7210 (7,172 gfx950 rows, a8w8_blockscale_1x128x128_256x{M}x{N}x..: 16x64 "
              "at M 1-32 in 158 of 207 rows (:40), 32x64 (:39), 64x64 (:167), 16x128 (:53), 32x128 (:241), 64x128 (:311), 128x128 "
              "(:380), 32x256 (:245), 64x256 (:313)) and a8w8_blockscale_tuned_fmoe_ds_v3.csv:352-381 (cu_num 256: "
              "fmoe_bf16_blockscaleFp8_g1u1_..._16x128, 32x256, 64x256; moe_ck2stages 256x16x128, 256x32x128); hipBLASLt macro "
              "tiles up to 256x256 (gemm_tile_facts.amd_cdna)"),
}


def q(s: str) -> str:
    return '"' + str(s).replace("\\", "\\\\").replace('"', '\\"') + '"'


def main(ref_path: Path) -> int:
    ref = yaml.safe_load(ref_path.read_text())
    gpus, sources = ref["gpus"], ref["sources"]
    OUT.mkdir(parents=True, exist_ok=True)
    for gid, key, family, aliases, nic_gbps, tiles in ENTRIES:
        g = gpus[key]
        tf = g["tflops_dense"]
        fp4 = tf.get("fp4")
        vendor = g["vendor"]
        # FP4 formats the tensor cores run: NVIDIA Blackwell runs NVFP4 and MXFP4 (tcgen05 kind::mxf4nvf4),
        # AMD CDNA4 runs MXFP4 only (fp4_note of MI355X).
        fp4_formats = [] if not fp4 else (["mxfp4"] if vendor == "amd" else ["nvfp4", "mxfp4"])
        fp8 = tf.get("fp8")
        link = g.get("nvlink") or g.get("xgmi")
        uni = (link or {}).get("uni_gbs", 0) or 0
        if not link:
            # PCIe-only cards: PCIe Gen4 x16 ~32 GB/s (L40S), Gen5 x16 ~64 GB/s (RTX PRO 6000), per direction
            uni = 32 if gid == "l40s" else 64
        lines = [
            f"# {gid}: generated by tools/make_gpu_catalog.py from {ref_path.name} ({key})",
            f"id = {q(gid)}",
            f"name = {q(key.replace('_', ' '))}",
            f"vendor = {q(vendor)}",
            f"arch = {q(g['arch'])}",
            f"family = {q(family)}",
            f"aliases = [{', '.join(q(a) for a in aliases)}]",
            f"sms = {g.get('sms') or g.get('cus')}",
            f"hbm_bytes = {float(g['hbm_gb']) * 1e9:.6g}  # vendor's headline figure",
            f"memory_bytes = {REPORTED[gid][0]}  # what the driver reports, see memory_source",
            f"memory_source = {q(REPORTED[gid][1])}",
            f"hbm_bandwidth_bytes_per_s = {float(g['hbm_bw_tbs']) * 1e12:.6g}",
            f"l2_bytes = {float(g.get('l2_mb') or 0) * 1e6:.6g}",
            f"scale_up_bandwidth_bytes_per_s = {float(uni) * 1e9:.6g}  # one direction, per GPU",
            f"scale_up_domain = {g['scale_up_domain'] if link else PCIE_SERVER_GPUS}",
            *([] if link else [f"scale_up_source = {q(PCIE_SOURCE)}"]),
            *(['scale_up_topology = "mesh"', f"scale_up_source = {q(MESH_SOURCE[gid])}"] if gid in MESH_SOURCE else []),
            f"scale_out_bandwidth_bytes_per_s = {nic_gbps * 1e9 / 8:.6g}  # {'NIC per GPU' if gid in NIC_SOURCE else 'assumed NIC'}, see nic_source",
            f"nic_source = {q(NIC_SOURCE.get(gid, _NIC_ASSUMED.format(nic_gbps)))}",
            f"tdp_w = {g['tdp_w']}",
            f"fp4_formats = [{', '.join(q(f) for f in fp4_formats)}]",
            f"confidence = {q(g.get('confidence', 'medium'))}",
            "",
            "[peak_flops]  # dense FLOP/s per math precision (no 2:4 sparsity)",
            f"bf16 = {float(tf['bf16']) * 1e12:.6g}",
        ]
        if fp8:
            lines.append(f"fp8 = {float(fp8) * 1e12:.6g}")
        if fp4:
            lines.append(f"fp4 = {float(fp4) * 1e12:.6g}")
        # dense INT8 tensor-core OPS (the reference's int8, from the same vendor tables as the other rates; B300/GB300's
        # int8_note: Blackwell Ultra cut it): what an INT8 (W8A8) GEMM runs at (spec.precision.gemm_math)
        if tf.get("int8"):
            lines.append(f"int8 = {float(tf['int8']) * 1e12:.6g}")
        lines += ["", "[tiles]", f"shapes = [{', '.join(f'[{m}, {n}, {c}]' for m, n, c in TILES[tiles])}]  # [M, N, SMs per tile]",
                  f"source = {q(TILE_SOURCE[tiles])}"]
        if tiles in SMEM_FEED:
            lines += [f"smem_bytes_per_bf16_flop = {SMEM_FEED[tiles][0]:.6g}", f"smem_source = {q(SMEM_FEED[tiles][1])}"]
        if tiles in BLOCK_SCALE:
            lines += [f"block_scale_rate = {BLOCK_SCALE[tiles][0]:.6g}", f"block_scale_source = {q(BLOCK_SCALE[tiles][1])}"]
        lines += ["", "[sources]"]
        for s in g["sources"]:
            lines.append(f"{s} = {q(sources.get(s, MISSING))}")
        for note in ("nvfp4_note", "fp4_note", "int8_note", "tflops_note", "xgmi_note"):
            if note in g:
                lines.append(f"# {note}: {g[note]}")
        (OUT / f"{gid}.toml").write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2 or not Path(sys.argv[1]).is_file():
        sys.exit("usage: python tools/make_gpu_catalog.py GPU_REFERENCE_YAML")
    sys.exit(main(Path(sys.argv[1])))
