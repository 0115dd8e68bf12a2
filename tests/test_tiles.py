"""GEMM tile choice as the hardware runs it: shared-memory operand feed per tile (Blackwell) and TMA's
16-byte row alignment; values derived by hand from cost.kernels' formulas."""
import pytest

from llm_codesign.cost import gemm
from llm_codesign.cost.calibration import calibration_for
from llm_codesign.spec.hardware import get_gpu


def test_tile_feed_by_hand(b200, h100):
    # B200: 128 B/clk of shared memory against 8,192 BF16 FLOP/clk per SM = 1/64 byte per FLOP
    assert b200.smem_bytes_per_bf16_flop == pytest.approx(1 / 64)
    # 128x64 BF16 tile: (128*2 + 64*2) / (2*128*64) = 3/128 byte per FLOP -> 2/3 of the rate
    assert gemm.tile_feed(128, 64, b200, math="bf16", a_bytes=2.0, w_bytes=2.0) == pytest.approx(2 / 3)
    # 128x128: 1/64, exactly what shared memory feeds (N >= 128 is not bound)
    assert gemm.tile_feed(128, 128, b200, math="bf16", a_bytes=2.0, w_bytes=2.0) == pytest.approx(1.0)
    # a swap-AB tile with 16 tokens: (16*2 + 256*2) / (2*16*256) = 0.06641 -> 0.2353
    assert gemm.tile_feed(16, 256, b200, math="bf16", a_bytes=2.0, w_bytes=2.0) == pytest.approx((1 / 64) / (544 / 8192))
    # FP8 doubles the rate and halves the bytes: the same share
    assert gemm.tile_feed(128, 64, b200, math="fp8", a_bytes=1.0, w_bytes=1.0) == pytest.approx(2 / 3)
    # a GPU file that states no feed bound prices every tile at the full rate (H100: no measurement says
    # its tiles are bound; its tensor cores run at half Blackwell's rate per SM)
    assert gemm.tile_feed(128, 64, h100, math="bf16", a_bytes=2.0, w_bytes=2.0) == 1.0


def test_two_cta_tiles_win_where_feed_binds():
    # B300 FP4 runs 6x BF16 (13.5 vs 2.25 PFLOPS): 1/384 byte per FP4 FLOP. A 1-CTA 128x256 tile needs
    # (128*0.5 + 256*0.5) / (2*128*256) = 1/341.3, a 2-CTA 256x256 tile 1/512 (each SM holds half of each operand)
    b300 = get_gpu("b300")
    assert gemm.tile_feed(128, 256, b300, math="fp4", a_bytes=0.5, w_bytes=0.5) == pytest.approx(65536 / 192 / 384)
    assert gemm.tile_feed(256, 256, b300, math="fp4", a_bytes=0.5, w_bytes=0.5) == 1.0


def test_narrow_dims_cost_on_blackwell(b200):
    # a compute-bound GEMM whose N divides by 64 only: 2880 = 22.5 x 128 runs as 23 tiles of 128 (the
    # 2,944 columns' time, +2.2% per column) because 45 tiles of 64 run at 2/3 of the rate; without the
    # shared-memory bound the 64-wide tiles would price 2880 as if it were aligned
    from dataclasses import replace

    cal = calibration_for(b200)
    unbound = replace(b200, smem_bytes_per_bf16_flop=0.0)
    def t(gpu, n):
        return float(gemm.gemm_time(65536, n, 8192, gpu, cal, math="bf16", a_bytes=2.0, w_bytes=2.0)[1])
    assert t(b200, 2880) == pytest.approx(t(b200, 2944), rel=1e-6)
    assert t(unbound, 2880) < 0.99 * t(unbound, 2944)


def test_tma_pads_rows_to_16_bytes():
    assert float(gemm.tma_padded(11000, 2.0, 2.0)) == 11000  # 22,000 bytes: aligned in BF16
    assert float(gemm.tma_padded(11000, 1.0, 1.0)) == 11008  # 11,000 bytes: FP8 pads to 11,008
    assert float(gemm.tma_padded(2880, 0.5625, 0.5625)) == 2880  # NVFP4 (scales aside: 0.5 B) pads to 32 values
    assert float(gemm.tma_padded(11000, 0.5625, 0.5625)) == 11008
    assert float(gemm.tma_padded(7168, 1.03125, 0.5)) == 7168  # block-scaled FP8 x FP4: elements of 1 and 0.5 B


def test_misaligned_k_pays_the_padded_copy(h100, cal_h100):
    m, n = 4096, 4096
    kw = dict(math="fp8", a_bytes=1.0, w_bytes=1.0)
    t_mis = float(gemm.gemm_time(m, n, 11000, h100, cal_h100, **kw)[0])
    t_pad = float(gemm.gemm_time(m, n, 11008, h100, cal_h100, **kw)[0])
    copy = m * 11008 * 2.0 / (h100.hbm_bandwidth_bytes_per_s * cal_h100.bw_eff) + cal_h100.kernel_overhead_s
    assert t_mis - t_pad == pytest.approx(copy, rel=1e-4)
    # BF16 rows of 11,000 values are 16-byte aligned: no copy, and K is priced as it is
    bf = dict(math="bf16", a_bytes=2.0, w_bytes=2.0)
    assert float(gemm.gemm_time(m, n, 11000, h100, cal_h100, **bf)[0]) < float(gemm.gemm_time(m, n, 11008, h100, cal_h100, **bf)[0])


def test_gpu_file_smem_feed_is_checked():
    from importlib import resources

    from llm_codesign.errors import InputError
    from llm_codesign.spec.hardware import gpu_from_toml

    text = resources.files("llm_codesign").joinpath("data/gpus/b200.toml").read_text()
    with pytest.raises(InputError, match="smem_bytes_per_bf16_flop"):
        gpu_from_toml(text.replace("smem_bytes_per_bf16_flop = 0.015625", "smem_bytes_per_bf16_flop = -1"), "x.toml")
    assert gpu_from_toml(text, "b200.toml").smem_bytes_per_bf16_flop == pytest.approx(1 / 64)
    assert gpu_from_toml(text.replace("smem_bytes_per_bf16_flop = 0.015625\n", ""), "b.toml").smem_bytes_per_bf16_flop == 0.0  # no bound


def test_gemm_time_takes_the_2cta_tile_where_it_is_fed_faster():
    # B300 NVFP4, a large GEMM: 1-CTA 128x256 is fed at 0.79 of the FP4 rate (0.5625 B per value with
    # its scales), the 2-CTA 256x256 at 1, so the GEMM runs at the 2-CTA tile's rate; offered 1-CTA tiles
    # only, it is slower by that feed
    from dataclasses import replace

    b300 = get_gpu("b300")
    cal = calibration_for(b300)
    kw = dict(math="fp4", a_bytes=0.5625, w_bytes=0.5625)
    one = replace(b300, tiles=tuple(t for t in b300.tiles if t[2] == 1))
    t2, t1 = (float(gemm.gemm_time(16384, 16384, 16384, g, cal, **kw)[1]) for g in (b300, one))
    f128x256 = gemm.tile_feed(128, 256, b300, **kw)
    assert f128x256 < 0.8 and gemm.tile_feed(256, 256, b300, **kw) == 1.0
    assert t1 / t2 == pytest.approx(1.0 / f128x256, rel=0.02)


def test_block_scaled_fp8_keeps_four_fifths_of_its_rate_where_cuda_cores_scale_its_k_blocks(h100, b200):
    """Hopper scales each 128-deep K block of a block-scaled FP8 GEMM on its CUDA cores (tm tn FMAs at 128 FP32
    lanes per SM against 2 tm tn 128 FLOPs of MMA at 8,192 FP8 FLOP/clk): 1 / (1 + 8192 / 32768) = 0.8 of the
    kernel's rate; Blackwell's tcgen05 MMA applies the scales. The kernel tables' block-scale GEMM only: DeepGEMM's
    overlaps the promotion (its own family) and per-tensor FP8 has no K-block scales."""
    from dataclasses import replace

    assert gemm.main_loop_rate("fp8_block", h100) == pytest.approx(1 / (1 + 8192 / (2 * 128 * 128)))
    assert gemm.main_loop_rate("fp8_block", get_gpu("h200")) == 0.8
    assert gemm.main_loop_rate("fp8_block", b200) == 1.0
    assert gemm.main_loop_rate("fp8", h100) == gemm.main_loop_rate("fp8_deepgemm", h100) == 1.0
    cal = calibration_for(h100)
    kw = dict(math="fp8", a_bytes=1.0, w_bytes=1.0, kernel="fp8_block")
    scaled = float(gemm.gemm_time(4096, 8192, 8192, h100, cal, **kw)[1])  # compute time
    free = float(gemm.gemm_time(4096, 8192, 8192, replace(h100, block_scale_rate=1.0), cal, **kw)[1])
    assert scaled == pytest.approx(1.25 * free, rel=1e-5)


def test_gpu_file_block_scale_rate_is_checked():
    from importlib import resources

    from llm_codesign.errors import InputError
    from llm_codesign.spec.hardware import gpu_from_toml

    text = resources.files("llm_codesign").joinpath("data/gpus/h100.toml").read_text()
    for bad in ("0", "1.5", "true"):
        with pytest.raises(InputError, match="block_scale_rate"):
            gpu_from_toml(text.replace("block_scale_rate = 0.8", f"block_scale_rate = {bad}"), "x.toml")
    # a Hopper file that does not say takes its family's 0.8 ([hopper] gemm_eff_fp8_block is the scale-free rate);
    # another family's, 1 (its tensor cores apply the scales)
    assert gpu_from_toml(text.replace("block_scale_rate = 0.8\n", ""), "h.toml").block_scale_rate == 0.8
    other = text.replace("block_scale_rate = 0.8\n", "").replace('family = "hopper"', 'family = "blackwell"')
    assert 'family = "blackwell"' in other and gpu_from_toml(other, "b.toml").block_scale_rate == 1.0
