"""The page's design view says what `design` prints of the baseline (branch pageD): POST /api/design carries the CLI's
own lines (render.design_lines.baseline_lines and versus_line), so the page and the CLI say the same figures."""
import pytest
from conftest import cli

pytest.importorskip("fastapi")
pytest.importorskip("httpx")

from fastapi.testclient import TestClient  # noqa: E402

from llm_codesign.web.app import create_app  # noqa: E402

# gpt-oss-20b as the baseline of a dense 21B search on one H200 (16 shapes, 2-3 s): MoE with sliding-window layers, so
# every baseline line is said: none beats it, its traits outside the grid, its own row, and the MoE hint
BODY = {"params": 21e9, "gpu": "h200", "num_gpus": 1, "max_candidates": 16, "top": 5, "baseline": "gpt-oss-20b"}
ARGS = ("design", "--params", "21e9", "--gpu", "h200", "--gpus", "1", "--max-candidates", "16", "--top", "5")


@pytest.fixture(scope="module")
def client():
    return TestClient(create_app())


def test_the_api_carries_the_clis_baseline_lines(client):
    r = client.post("/api/design", json=BODY)
    assert r.status_code == 200, r.text
    got = r.json()
    code, out, err = cli(*ARGS, "--baseline", "gpt-oss-20b")  # 2,000 columns: no line folded
    assert code == 0, err
    lines = got["baseline_lines"]
    assert out.splitlines()[:len(lines)] == lines  # the CLI's first lines, word for word
    b = got["baseline"]
    assert lines[0].startswith("no design beats gpt-oss-20b at equal quality proxy: the best is ")
    assert lines[1] == "gpt-oss-20b's sliding-window attention layers are outside the shape grid (full GQA attention in every layer)"
    # the baseline's row from the answer's own figures: 20,907,786,240 params (the bundled gpt-oss-20b) -> 20.9B
    assert b["total_params"] == 20_907_786_240
    assert lines[2] == (f"baseline gpt-oss-20b: 20.9B params, quality proxy {b['quality_proxy']:.4f} nats/token, "
                        f"tok/s/GPU {b['objective']:.1f} ({b['deployment']['plan']}, batch {b['deployment']['concurrency_per_instance']}, "
                        # the capture it was priced with (leftS2): TensorRT-LLM's unpadded default, so its batch a rank
                        f"graphs ≤{b['deployment']['concurrency_per_instance'] // b['deployment']['attention_dp']})")
    assert lines[3] == b["hint"] == "the baseline is MoE: --moe --active-params 3.6e9 searches MoE shapes"  # 3.61B active
    # design 1 against the baseline: the CLI's line beneath its table
    assert got["versus_line"].startswith("design 1 vs gpt-oss-20b: loss ") and got["versus_line"] in out.splitlines()
    assert {"baseline_lines", "versus_line"} <= set(client.get("/openapi.json").json()["components"]["schemas"]["DesignResponse"]["properties"])


def test_without_a_baseline_the_reference_is_said(client):
    got = client.post("/api/design", json={k: v for k, v in BODY.items() if k != "baseline"} | {"params": 8e9}).json()
    code, out, err = cli(*ARGS[:2], "8e9", *ARGS[3:])
    assert code == 0, err
    # llama-3.1-8b: 8,030,261,248 params -> 8.0B; no row is slower than it, so its line alone
    assert got["baseline_lines"] == [f"reference llama-3.1-8b (no baseline: the nearest published dense model): 8.0B params, "
                                     f"quality proxy {got['reference']['quality_proxy']:.4f} nats/token"]
    assert out.splitlines()[0] == got["baseline_lines"][0]
    assert got["versus_line"].startswith("design 1 vs llama-3.1-8b: ") and got["versus_line"] in out.splitlines()
