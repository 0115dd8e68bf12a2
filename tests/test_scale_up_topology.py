"""AMD's 8-GPU xGMI boards as the full mesh they are (Gpu.scale_up_topology), a GPU with no scale-up link at all, and
GQA's K/V projection replicated where TP exceeds the KV heads (docs/modelling-notes.md#creva-xgmi-mesh)."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from typer.testing import CliRunner

import llm_codesign as lc
from llm_codesign.cli import app
from llm_codesign.cost import memory
from llm_codesign.cost.calibration import calibration_for
from llm_codesign.cost.kernels import _custom_all_reduce, collective_time
from llm_codesign.errors import InputError
from llm_codesign.serve.disagg import kv_hand_off
from llm_codesign.spec.hardware import get_gpu, gpu_from_toml
from llm_codesign.spec.plan import Plan

DATA = lc.__path__[0] + "/data/gpus/"


@pytest.fixture(scope="module")
def mi355x():
    g = get_gpu("mi355x")
    return g, calibration_for(g)


def test_the_amd_boards_are_meshes_and_the_nvidia_ones_switches():
    for gid in ("mi300x", "mi325x", "mi355x"):
        g = get_gpu(gid)
        assert (g.scale_up_topology, g.scale_up_domain) == ("mesh", 8), gid
        assert "src/graph/topo.cc:590-593" in open(DATA + f"{gid}.toml").read(), gid  # its scale_up_source cites RCCL
    for gid in ("h100", "b200", "gb200", "l40s"):
        assert get_gpu(gid).scale_up_topology == "switch", gid
    # MI300X: 7 links x 64 GB/s = 448 GB/s each way; a GPU reaches k peers over k of them
    g = get_gpu("mi300x")
    assert [float(g.scale_up_link_bytes_per_s(k)) for k in (1, 3, 7, 9)] == [64e9, 192e9, 448e9, 448e9]
    # a switch gives any peer count the whole figure
    assert float(get_gpu("h100").scale_up_link_bytes_per_s(1)) == 450e9


def test_a_mesh_all_reduce_by_hand(mi355x):
    g, c = mi355x
    # default.toml's comm figures for cdna4 (not fitted): LL 8 us + 1 us a GPU past two, (moved + 256 kB) at 0.75 of the
    # link; Simple 50 us + moved at 0.80; the faster wins. 64 MB, MI355X 76.8 GB/s a link:
    assert (c.comm_latency_s, c.comm_latency_slope_s, c.comm_bw_half_bytes, c.comm_bw_eff, c.comm_large_latency_s,
            c.comm_large_bw_eff) == (8e-6, 1e-6, 256e3, 0.75, 50e-6, 0.8)
    # n=2: moved 64e6 over 1 link: Simple 50e-6 + 64e6 / (76.8e9 x 0.8) = 1.0917 ms (LL 1.1236 ms); was 0.167 ms on 7 links
    assert float(collective_time("all_reduce", 64e6, 2, g, c)) == pytest.approx(50e-6 + 64e6 / 61.44e9, rel=1e-12)
    # n=4: moved 2 x 3/4 x 64e6 = 96e6 over 3 links (230.4 GB/s): LL 10e-6 + 96.256e6 / 172.8e9 = 567.04 us (Simple 570.83 us)
    assert float(collective_time("all_reduce", 64e6, 4, g, c)) == pytest.approx(10e-6 + 96.256e6 / 172.8e9, rel=1e-12)
    # n=8: all 7 links, as the switch figure prices it: LL 14e-6 + 112.256e6 / 403.2e9 = 292.41 us
    t8 = float(collective_time("all_reduce", 64e6, 8, g, c))
    assert t8 == pytest.approx(14e-6 + 112.256e6 / 403.2e9, rel=1e-12)
    assert t8 == pytest.approx(float(collective_time("all_reduce", 64e6, 8, replace(g, scale_up_topology="switch"), c)), rel=1e-12)
    # an EP all-to-all among 4 and a 2-GPU send likewise ride 3 links and 1
    switch = replace(g, scale_up_topology="switch")
    assert float(collective_time("all_to_all", 64e6, 4, g, c)) > 2 * float(collective_time("all_to_all", 64e6, 4, switch, c))
    assert float(collective_time("p2p", 64e6, 2, g, c)) == pytest.approx(50e-6 + 64e6 / 61.44e9, rel=1e-12)


def test_the_engines_own_all_reduce_on_a_mesh_by_hand(mi355x):
    g, c = mi355x
    # one-shot: each GPU reads its n - 1 peers' buffers, each over its own 76.8 GB/s link at custom_ar_bw_eff 0.7, in
    # parallel: 5 us + 1 MB / 53.76 GB/s = 23.60 us at 2 GPUs (the two-shot 8 + 18.60 = 26.60 us is slower); on a switch
    # at 537.6 GB/s it was 5 + 2.66 = 7.66 us
    assert float(_custom_all_reduce(1e6, 2.0, g, c)) == pytest.approx(5e-6 + 1e6 / 53.76e9, rel=1e-12)
    # 8 GPUs: two-shot 8 + 6 x 0.1 us + 2/8 x 7 x 1 MB / (537.6 GB/s x 0.7) = 13.25 us, as before
    assert float(_custom_all_reduce(1e6, 8.0, g, c)) == pytest.approx(8.6e-6 + 0.25 * 7e6 / 376.32e9, rel=1e-12)


def test_a_same_box_kv_hand_off_rides_the_links_to_its_counterparts(mi355x):
    g, c = mi355x
    m, p = lc.get_model("llama-3.1-70b"), lc.Precision.of("fp8")  # BF16 cache
    # prefill TP4 -> decode TP4 in one 8-GPU box: each decode GPU holds 2 KV heads, 80 x 2 x 256 x 2 B = 81,920 B a
    # token, 335.5 MB at 4,096 tokens, from its one counterpart over one link: Simple 50e-6 + 335.54e6 / 61.44e9 = 5.511 ms
    # (on all 7 links it was 0.440 ms)
    assert float(memory.kv_bytes_per_token(m, p, Plan(tp=4))) == 81920.0
    t = float(kv_hand_off(m, g, c, p, 4096.0, prefill_gpus=4, total_gpus=8, decode_plan=Plan(tp=4)))
    assert t == pytest.approx(50e-6 + 81920 * 4096 / 61.44e9, rel=1e-12)
    # decode TP2: each receiver takes 671 MB from 2 senders over 2 links, the same rate
    t2 = float(kv_hand_off(m, g, c, p, 4096.0, prefill_gpus=4, total_gpus=8, decode_plan=Plan(tp=2)))
    assert t2 == pytest.approx(50e-6 + 2 * 81920 * 4096 / 122.88e9, rel=1e-12)


def test_a_mesh_needs_a_domain_and_a_topology_it_knows():
    text = open(DATA + "mi300x.toml").read()
    with pytest.raises(InputError) as e:
        gpu_from_toml(text.replace('scale_up_topology = "mesh"', 'scale_up_topology = "torus"'), "x.toml")
    assert (e.value.field, e.value.value) == ("gpu.scale_up_topology", "torus") and "switch, mesh" in str(e.value)
    one = text.replace("scale_up_domain = 8", "scale_up_domain = 1").replace("scale_up_bandwidth_bytes_per_s = 4.48e+11", "scale_up_bandwidth_bytes_per_s = 0")
    with pytest.raises(InputError) as e:
        gpu_from_toml(one, "x.toml")
    assert e.value.field == "gpu.scale_up_topology" and "x.toml has 1" in str(e.value)


def _pcie1(tmp_path):
    # a box of PCIe cards without peer-to-peer: domain 1, no scale-up link (check_gpu accepts it)
    text = open(DATA + "h100.toml").read()
    lines = [ln for ln in text.splitlines() if not ln.startswith("aliases")]
    text = "\n".join("scale_up_domain = 1" if ln.startswith("scale_up_domain") else "scale_up_bandwidth_bytes_per_s = 0"
                     if ln.startswith("scale_up_bandwidth") else 'id = "pcie1"' if ln.startswith("id =") else ln for ln in lines)
    p = tmp_path / "pcie1.toml"
    p.write_text(text + "\n")
    return p


def test_no_scale_up_link_prices_what_needs_none_and_refuses_what_does(tmp_path):
    p = _pcie1(tmp_path)
    g = gpu_from_toml(p.read_text(), "pcie1.toml")
    c = calibration_for(g)
    # a 2-stage pipeline's send crosses the NIC alone (50 GB/s), no scale-up level priced (it divided by 0): Hopper's
    # fitted Simple 25.7 us + 64e6 / (50e9 x 0.689) = 1.884 ms beats LL (64.18e6 / (50e9 x 0.308) = 4.17 ms)
    t = float(collective_time("p2p", 64e6, 2, g, c))
    simple = c.comm_large_latency_s + 64e6 / (50e9 * c.comm_large_bw_eff)
    ll = c.scale_out_latency_s + (64e6 + c.comm_bw_half_bytes) / (50e9 * c.comm_bw_eff)
    assert t == pytest.approx(min(simple, ll), rel=1e-12) and t == pytest.approx(1.884e-3, rel=1e-3)
    args = ["--isl", "1024", "--osl", "256"]
    for cmd in (["estimate", "llama-3.1-8b", "--gpu", str(p), "--pp", "2", "--concurrency", "8", *args, "--json"],
                ["disagg", "llama-3.1-8b", "--gpu", str(p), "--prefill", "tp=1", "--decode", "tp=1", *args, "--json"],
                ["pareto", "llama-3.1-8b", "--gpu", str(p), "--gpus", "2", *args, "--json"]):
        r = CliRunner().invoke(app, cmd, env={"COLUMNS": "2000"})
        assert r.exit_code == 0, (cmd[0], r.output[-400:])
        assert "internal error" not in r.output and "nan" not in r.output.lower().replace("nano", "")
    r = CliRunner().invoke(app, ["estimate", "llama-3.1-8b", "--gpu", str(p), "--tp", "2", "--concurrency", "8", *args],
                           env={"COLUMNS": "2000"})
    assert r.exit_code == 2 and "Traceback" not in r.output
    assert len(r.output.strip().splitlines()) == 1 and "scale-up domain" in r.output


def test_no_scale_up_link_through_the_api_what_if():
    pytest.importorskip("httpx")
    from fastapi.testclient import TestClient

    from llm_codesign.web.app import create_app

    c = TestClient(create_app(), raise_server_exceptions=False)
    wi = {"base": "h100", "id": "pcie-box", "scale_up_gb_s": 0, "scale_up_domain": 1}
    base = {"model": "llama-3.1-8b", "isl": 1024, "osl": 256, "what_if": wi}
    r = c.post("/api/estimate", json={**base, "gpu": "pcie-box", "pp": 2, "concurrency": 8})
    assert r.status_code == 200 and np.isfinite(r.json()["ttft_ms"]) and r.json()["plan"] == "TP1 PP2"
    r = c.post("/api/pareto", json={**base, "gpus": ["pcie-box"], "num_gpus": 2})
    assert r.status_code == 200 and r.json()["series"][0]["frontier"]
    r = c.post("/api/estimate", json={**base, "gpu": "pcie-box", "tp": 2, "concurrency": 8})
    assert r.status_code == 422 and "scale-up domain" in r.json()["error"]
    # an AMD base keeps its mesh; made one GPU a domain, it has none to link
    wi_amd = {"base": "mi300x", "id": "amd-one", "scale_up_gb_s": 0, "scale_up_domain": 1}
    r = c.post("/api/estimate", json={"model": "llama-3.1-8b", "isl": 1024, "osl": 256, "what_if": wi_amd, "gpu": "amd-one",
                                      "pp": 2, "concurrency": 8})
    assert r.status_code == 200, r.json()


def test_gqa_kv_projection_replicated_past_the_kv_heads():
    m = lc.get_model("llama-3.1-70b")
    a, h = m.groups[0][0].attn, m.hidden
    assert (a.heads, a.kv_heads, a.head_dim, h) == (64, 8, 128, 8192)
    # TP8 divides the 8 KV heads: 151.0 MB / 8 a layer at 1 B a weight, as before
    assert float(a.weight_bytes_per_gpu(h, 1.0, 8, 1)) == a.params(h) / 8 == 18_874_368
    # TP16: Q 8192 x 64 x 128 / 16 = 4,194,304, O the same, K and V one whole head each (the engines' replica):
    # 8192 x 1 x (128 + 128) = 2,097,152 -> 10,485,760 B a layer (params / 16 was 9,437,184: 1,048,576 short)
    assert float(a.weight_bytes_per_gpu(h, 1.0, 16, 1)) == 4_194_304 * 2 + 2_097_152
    # TP64: 1,048,576 x 2 + 2,097,152 = 4,194,304 (was 2,359,296, -44%)
    assert float(a.weight_bytes_per_gpu(h, 1.0, 64, 1)) == 4_194_304
    # the whole model at FP8 on TP16 holds 80 layers x 1,048,576 B more than half its TP8 weights: everything else halves
    p = lc.Precision.of("fp8")
    w16, w8 = (float(memory.weight_bytes_per_gpu(m, p, Plan(tp=t))) for t in (16, 8))
    assert w16 - w8 / 2 == 80 * 1_048_576
