import csv
import json
import re

import pytest

from llm_codesign.cost.calibration import calibration_for
from llm_codesign.explore.search import SearchSpace, point_breakdown, search
from llm_codesign.render.report import write_csv, write_html, write_plot
from llm_codesign.spec.hardware import get_gpu
from llm_codesign.spec.registry import get_model


@pytest.fixture(scope="module")
def result():
    m, g = get_model("llama-3.1-8b"), get_gpu("h100")
    cal = calibration_for(g)
    r = search(m, g, cal, SearchSpace(4), 512, 256)
    bd = {f"0:{j}": point_breakdown(m, cal, p["deployment"], 512, 256, gpu=g) for j, p in enumerate(r["frontier"])}
    return r, bd


def test_csv_round_trip(result, tmp_path):
    r, _ = result
    p = tmp_path / "f.csv"
    write_csv([r], p)
    rows = list(csv.DictReader(p.open()))
    assert len(rows) == len(r["frontier"])
    assert float(rows[0]["tok_s_per_user"]) == pytest.approx(r["frontier"][0]["tok_s_per_user"])


def test_png_and_svg(result, tmp_path):
    r, _ = result
    png, svg = tmp_path / "f.png", tmp_path / "f.svg"
    write_plot([r], png)
    write_plot([r], svg)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    text = svg.read_text()
    assert "<svg" in text and "tokens/s per user" in text


def test_html_self_contained_with_data(result, tmp_path):
    r, bd = result
    p = tmp_path / "r.html"
    write_html([r], bd, p, {"h100": ["3 vLLM runs at 5-32 requests on B200: TTFT 10% median / 18% p90 <x>"]})
    text = p.read_text()
    assert "<li>3 vLLM runs at 5-32 requests on B200: TTFT 10% median / 18% p90 &lt;x&gt;</li>" in text  # escaped
    assert not re.search(r"<script[^>]+src=[\"']https?:", text)  # plotly.js inlined, nothing fetched
    assert "Plotly.newPlot" in text or "newPlot" in text
    blob = re.search(r'<script type="application/json" id="frontier-data">(.*?)</script>', text, re.S).group(1)
    data = json.loads(blob.replace("<\\/", "</"))
    fr = data["results"][0]["frontier"]
    assert len(fr) == len(r["frontier"]) and fr[-1]["tok_s_per_user"] == pytest.approx(r["frontier"][-1]["tok_s_per_user"])
    assert data["breakdowns"]["0:0"][0]["time_ms"] > 0
