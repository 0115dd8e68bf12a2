"""`llm-codesign serve`'s page in a real browser: Playwright for Python driving Debian's `chromium`
(headless, through executable_path; no `playwright install`) against uvicorn on a free loopback port.

Skipped when chromium, playwright or the serve extra is missing; LLM_CODESIGN_BROWSER_TESTS=1 (set by
.ci/run, which installs them) turns the skip into a failure."""
import os
import re
import shutil
import socket
import threading
import time
from urllib.parse import parse_qs, urlparse

import pytest

REQUIRED = os.environ.get("LLM_CODESIGN_BROWSER_TESTS") == "1"
CHROMIUM = os.environ.get("LLM_CODESIGN_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")


def _missing() -> str | None:
    if not CHROMIUM:
        return "no chromium on PATH (apt-get install -y chromium)"
    for mod, what in (("playwright.sync_api", "pip install playwright"), ("fastapi", "pip install -e '.[serve]'"),
                      ("uvicorn", "pip install -e '.[serve]'")):
        try:
            __import__(mod)
        except ImportError:
            return f"{mod.split('.')[0]} is not installed ({what})"
    return None


@pytest.fixture(scope="module")
def server():
    why = _missing()
    if why:
        (pytest.fail if REQUIRED else pytest.skip)(f"browser tests need chromium, playwright and the serve extra: {why}")
    import uvicorn

    from llm_codesign.web.app import create_app

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    srv = uvicorn.Server(uvicorn.Config(create_app(allowed_hosts=["127.0.0.1"]), host="127.0.0.1", port=port, log_level="warning"))
    t = threading.Thread(target=srv.run, daemon=True)
    t.start()
    deadline = time.time() + 20
    while not srv.started:
        assert time.time() < deadline and t.is_alive(), "uvicorn did not start"
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    srv.should_exit = True
    t.join(10)


@pytest.fixture(scope="module")
def browser(server):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        # --no-sandbox: CI runs as root, where chromium's sandbox refuses to start
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        yield b
        b.close()


@pytest.fixture
def page(browser, server):
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
    pg = ctx.new_page()
    pg.set_default_timeout(30_000)
    pg.errors, pg.hosts = [], set()
    pg.on("pageerror", lambda e: pg.errors.append(str(e)))
    pg.on("request", lambda r: pg.hosts.add(urlparse(r.url).netloc))
    yield pg
    ctx.close()


def _ready(pg):
    pg.wait_for_selector("body[data-ready='1']")


def _run_frontier(pg, gpus=("h200",), num_gpus="1"):
    pg.select_option("#model", "llama-3.1-8b")
    for box in pg.query_selector_all("#gpus input"):
        box.set_checked(box.get_attribute("value") in gpus)
    pg.fill("#num_gpus", num_gpus)
    pg.click("#run")
    pg.wait_for_function(f"document.querySelectorAll('#plot .scatterlayer .trace').length === {len(gpus)}")
    pg.wait_for_selector("#frontier-table")


def _click_point(pg, trace: int, k: int):
    """A real mouse click on a plotted point (plotly hit-tests the mouse position on its drag layer)."""
    pts = pg.query_selector_all(f"#plot .scatterlayer .trace:nth-of-type({trace + 1}) path.point")
    pts[k].scroll_into_view_if_needed()
    box = pts[k].bounding_box()
    pg.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    pg.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    pg.wait_for_selector("#breakdown-table")


def _fragment(pg) -> dict:
    return {k: v[0] for k, v in parse_qs(urlparse(pg.url).fragment).items()}


def test_page_loads_models_and_gpus_from_this_server_only(page, server):
    page.goto(server + "/")
    _ready(page)
    names = page.eval_on_selector_all("#model option", "os => os.map(o => o.value)")
    assert "llama-3.1-8b" in names and "deepseek-r1" in names and len(names) >= 30
    gpus = page.eval_on_selector_all("#gpus input", "xs => xs.map(x => x.value)")
    assert {"h100", "h200", "b200", "mi300x"} <= set(gpus)
    assert page.evaluate("typeof Plotly") == "object"  # plotly.js from /static, not a CDN
    assert page.hosts == {urlparse(server).netloc}
    assert not page.errors


def test_frontier_then_a_clicked_point_shows_its_breakdown(page, server):
    import llm_codesign as lc
    from llm_codesign.cost.calibration import calibration_for
    from llm_codesign.explore.search import point_breakdown

    page.goto(server + "/")
    _ready(page)
    _run_frontier(page, gpus=("h100", "h200"))
    legend = page.eval_on_selector_all("#plot .legendtext", "xs => xs.map(x => x.textContent)")
    assert legend == ["llama-3.1-8b on 1x h100", "llama-3.1-8b on 1x h200"]
    colours = page.eval_on_selector_all("#plot .scatterlayer .trace path.js-line", "xs => xs.map(x => x.style.stroke)")
    assert len(set(colours)) == 2  # one colour per series
    want = lc.pareto("llama-3.1-8b", "h200", num_gpus=1)
    n_rows = page.eval_on_selector_all("#frontier-table tbody tr", "rs => rs.length")
    assert n_rows == len(want.points) + len(lc.pareto("llama-3.1-8b", "h100", num_gpus=1).points)
    assert page.text_content("#lint-table")  # the findings for the first GPU
    k = len(want.points) // 3
    _click_point(page, 1, k)
    assert _fragment(page)["sel"] == f"1:{k}"
    point = want.points[k]
    p = point.to_dict()
    g = lc.get_gpu("h200")
    ops = point_breakdown(lc.get_model("llama-3.1-8b"), calibration_for(g, None), point.deployment, point.concurrency, isl=1024, osl=1024)
    rows = page.eval_on_selector_all("#breakdown-table tbody tr", "rs => rs.map(r => [...r.cells].map(c => c.textContent))")
    assert [r[0] for r in rows] == [o["name"] for o in ops]
    assert [r[2] for r in rows] == [f"{o['time_ms']:.3f}" for o in ops]
    est = dict(page.eval_on_selector_all("#estimate-table tbody tr", "rs => rs.map(r => [...r.cells].map(c => c.textContent))"))
    assert est["tokens/s per user"] == f"{p['tok_s_per_user']:.1f}"
    assert est["output tokens/s per GPU"] == f"{p['output_tok_s_per_gpu']:.1f}"
    # its intervals (issue 40): the point priced again at its batch, so the frontier point's own band
    g_ = p["intervals"]["output_tok_s_per_gpu"]
    assert est["output tokens/s per GPU: 80% / 95% interval"] == f"{g_['lo80']:.0f}-{g_['hi80']:.0f} / {g_['lo95']:.0f}-{g_['hi95']:.0f}"
    assert est["beyond the runs"].startswith("no serving run on any Hopper GPU")
    # the frontier's band: one shaded path per series, beneath the traces
    assert page.eval_on_selector_all("#plot .shapelayer path", "xs => xs.length") == 2
    assert "80% interval on tok/s/GPU" in page.text_content("#band-note")
    # its launch configuration, the file `export-point` writes (trtllm: the extra_llm_api_options YAML)
    assert page.get_attribute("#export-download", "download") == "extra_llm_api_options.yaml"
    assert f'"concurrency": {p["deployment"]["concurrency_per_instance"]}' in page.text_content("#export-text")
    assert not page.errors


def test_a_bad_value_is_one_line_naming_the_field(page, server):
    page.goto(server + "/")
    _ready(page)
    _run_frontier(page)
    page.fill("#isl", "abc")
    page.click("#run")
    page.wait_for_function("document.getElementById('error').textContent !== ''")
    msg = page.text_content("#error")
    assert msg == "isl: 'abc' is not valid; Input should be a valid integer, unable to parse string as an integer"
    page.fill("#isl", "1024")
    page.fill("#config", '{"model_type": "llama", "hidden_size": -5}')
    page.click("#run")
    page.wait_for_function("document.getElementById('error').textContent.startsWith('config.hidden_size')")
    assert "\n" not in page.text_content("#error")
    # a name from the data is text, never markup: a crafted fragment shows, and runs nothing
    page.fill("#config", "")
    evil = "<img src=x onerror=window.__xss=1>"
    page.evaluate(f"location.hash = 'model=llama-3.1-8b&gpus=h200&num_gpus=1&isl=' + encodeURIComponent('{evil}')")
    page.wait_for_function("document.getElementById('error').textContent.startsWith('isl: \\'<img')")
    assert page.text_content("#error").startswith(f"isl: '{evil}' is not valid")
    assert page.evaluate("window.__xss") is None and not page.query_selector("img")
    assert not page.errors


def test_a_permalink_reproduces_the_view(page, browser, server):
    page.goto(server + "/")
    _ready(page)
    page.select_option("#engine", "vllm")
    page.fill("#osl", "256")
    _run_frontier(page, gpus=("h200",))
    _click_point(page, 0, 2)
    link = page.url
    assert _fragment(page)["engine"] == "vllm" and _fragment(page)["sel"] == "0:2"
    table = page.text_content("#breakdown-table")
    frontier = page.text_content("#frontier-table")
    other = browser.new_page()
    try:
        other.goto(link)
        _ready(other)
        other.wait_for_selector("#breakdown-table")
        assert other.input_value("#engine") == "vllm" and other.input_value("#osl") == "256" and other.input_value("#num_gpus") == "1"
        assert other.eval_on_selector_all("#gpus input:checked", "xs => xs.map(x => x.value)") == ["h200"]
        assert other.text_content("#frontier-table") == frontier
        assert other.text_content("#breakdown-table") == table
    finally:
        other.close()


def test_design_reports_progress_then_its_table(page, server):
    page.goto(server + "/")
    _ready(page)
    for box in page.query_selector_all("#gpus input"):
        box.set_checked(box.get_attribute("value") == "h200")
    page.fill("#num_gpus", "1")
    page.fill("#max_candidates", "32")
    page.evaluate("""() => { window.__status = [];
        new MutationObserver(() => window.__status.push(document.getElementById('status').textContent))
            .observe(document.getElementById('status'), {childList: true, characterData: true, subtree: true}); }""")
    page.click("#run-design")
    page.wait_for_selector("#design-table", timeout=120_000)
    shown = page.evaluate("window.__status")
    assert "searching shapes: 32 of 32 priced" in shown, shown  # the streamed progress reached the page
    heading = page.text_content("#design h2")
    assert heading.startswith("Designs (32 shapes,")
    rows = page.eval_on_selector_all("#design-table tbody tr", "rs => rs.map(r => [...r.cells].map(c => c.textContent))")
    assert 1 <= len(rows) <= 5 and all(r[1].startswith("h") and r[2].endswith("B") for r in rows)
    assert all(7.2 <= float(r[2][:-1]) <= 8.8 for r in rows)  # the 8e9 budget within its 10% tolerance
    assert page.text_content("#error") == "" and not page.errors


def test_the_static_report_draws_its_frontier_and_breakdowns_offline(page, tmp_path):
    """The HTML report (render.report.write_html) in chromium from file://: its own SVG plot with one
    point per frontier deployment of each series, a hover, and a clicked row's per-operator breakdown."""
    import llm_codesign as lc
    from llm_codesign.cost.calibration import calibration_for
    from llm_codesign.explore.search import point_breakdown
    from llm_codesign.render.report import write_html

    m = lc.get_model("qwen3-30b-a3b")
    results, bd = [], {}
    for i, gid in enumerate(("h100", "h200")):
        g = lc.get_gpu(gid)
        res = lc.pareto(m, g, num_gpus=1)
        results.append(res)
        bd.update({f"{i}:{j}": point_breakdown(m, calibration_for(g, None), p.deployment, p.concurrency, isl=1024, osl=1024)
                   for j, p in enumerate(res.points)})
    path = tmp_path / "report.html"
    write_html(results, bd, path)
    page.goto(path.as_uri())
    page.wait_for_selector("#frontier-table")
    counts = [page.eval_on_selector_all(f"circle.pt[data-i='{i}']", "xs => xs.length") for i in range(2)]
    assert counts == [len(r.points) for r in results]
    fills = page.eval_on_selector_all("polyline.frontier", "xs => xs.map(x => x.getAttribute('stroke'))")
    dashes = page.eval_on_selector_all("polyline.bound", "xs => xs.map(x => x.getAttribute('stroke-dasharray'))")
    assert len(set(fills)) == 2 and len(set(dashes)) == 2  # one colour and one dash per series
    legend = page.text_content("#legend")
    assert "qwen3-30b-a3b on h100 (" in legend and "ideal bound (h200; peaks at" in legend
    # the band about each frontier (issue 40): one shaded polygon per series, with the sentence that says what it is
    assert page.eval_on_selector_all("polygon.band", "xs => xs.length") == 2
    assert "qwen3-30b-a3b on h200: 80% interval of tok/s/GPU" in legend and page.is_visible("#band-note")
    # hover: the point's deployment in the tooltip
    p = results[1].points[5].to_dict()
    box = page.query_selector("circle.pt[data-i='1'][data-j='5']").bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    assert page.is_visible("#tip")
    assert f"TTFT {p['ttft_ms']:.0f} ms, TPOT {p['tpot_ms']:.2f} ms" in page.text_content("#tip")
    b = p["intervals"]["output_tok_s_per_gpu"]
    assert f"tok/s/GPU {b['lo80']:.0f}-{b['hi80']:.0f} ({b['lo95']:.0f}-{b['hi95']:.0f})" in page.text_content("#tip")
    # a clicked row: that point's operators, as point_breakdown prices them
    n0 = len(results[0].points)
    page.click(f"#frontier-table tbody tr:nth-child({n0 + 6})")
    rows = page.eval_on_selector_all("#breakdown-table tbody tr", "rs => rs.map(r => [...r.cells].map(c => c.textContent))")
    assert [r[0] for r in rows] == [o["name"] for o in bd["1:5"]]
    assert [r[2] for r in rows] == [f"{o['time_ms']:.4f}" for o in bd["1:5"]]
    assert page.get_attribute("circle.pt[data-i='1'][data-j='5']", "r") == "7"  # the chosen point stands out
    cells = page.eval_on_selector_all(f"#frontier-table tbody tr:nth-child({n0 + 6}) td", "cs => cs.map(c => c.textContent)")
    assert cells[:6] == ["qwen3-30b-a3b", "h200", f"{p['tok_s_per_user']:.1f}", f"{p['output_tok_s_per_gpu']:.0f}",
                         f"{p['ttft_ms']:.0f}", f"{p['tpot_ms']:.2f}"]
    assert page.hosts <= {""} and not page.errors  # nothing fetched from any host


def test_a_what_if_gpu_joins_the_frontier_and_a_bad_figure_is_one_line(page, server):
    import llm_codesign as lc

    page.goto(server + "/")
    _ready(page)
    # the form starts from the base's catalog figures
    h100 = lc.get_gpu("h100")
    page.click("#what-if summary")
    page.select_option("#wi_base", "h100")
    assert float(page.input_value("#wi_hbm_tb_s")) == pytest.approx(h100.hbm_bandwidth_bytes_per_s / 1e12, rel=1e-3)
    assert float(page.input_value("#wi_bf16_tflops")) == pytest.approx(h100.peak("bf16") / 1e12, rel=1e-3)
    page.select_option("#wi_base", "h200")
    page.check("#wi_on")
    page.fill("#wi_id", "fast")
    page.fill("#wi_hbm_tb_s", "9.6")
    page.select_option("#model", "llama-3.1-8b")
    for box in page.query_selector_all("#gpus input"):
        box.set_checked(box.get_attribute("value") == "h200")
    page.fill("#num_gpus", "1")
    page.click("#run")
    page.wait_for_function("document.querySelectorAll('#plot .scatterlayer .trace').length === 2")
    page.wait_for_selector("#frontier-table")
    legend = page.eval_on_selector_all("#plot .legendtext", "xs => xs.map(x => x.textContent)")
    assert legend == ["llama-3.1-8b on 1x h200", "llama-3.1-8b on 1x fast"]
    rows = page.eval_on_selector_all("#frontier-table tbody tr", "rs => rs.map(r => [...r.cells].map(c => c.textContent))")
    fast = [float(r[1]) for r in rows if r[0] == "fast"]
    base = [float(r[1]) for r in rows if r[0] == "h200"]
    assert 1.3 < max(fast) / max(base) < 2.0  # twice the bandwidth: decode at one request speeds up, by under 2x
    assert _fragment(page)["wi_hbm_tb_s"] == "9.6" and _fragment(page)["wi_on"] == "1"
    # a point of the what-if series is priced on it
    _click_point(page, 1, 2)
    assert "x fast per instance" in page.text_content("#estimate-table")
    page.fill("#wi_hbm_tb_s", "-1")
    page.click("#run")
    page.wait_for_function("document.getElementById('error').textContent !== ''")
    assert page.text_content("#error") == "what_if.hbm_tb_s: -1.0 is not valid; a number from 0.001 to 1000 TB/s"
    assert not page.errors


def test_the_page_shows_the_validation_report(page, server):
    from llm_codesign.measure.accuracy import bundled

    page.goto(server + "/")
    _ready(page)
    page.wait_for_selector("#validation-serving")
    t = bundled()
    rows = page.eval_on_selector_all("#validation-serving tbody tr", "rs => rs.map(r => [...r.cells].map(c => c.textContent))")
    assert len(rows) == sum(len(b) for b in t["serving"].values())
    c = t["serving"]["vllm"]["5-32"]
    cell = lambda m: f"{m['median']:.1f}% / {m['p90']:.1f}% ({m['signed']:+.1f})"  # noqa: E731
    want = ["vllm", "5-32", cell(c["ttft_ms"]), cell(c["tpot_ms"]), str(c["ttft_ms"]["n"])]
    assert want in rows
    assert all(len(r) == 5 and re.fullmatch(r"\d+\.\d% / \d+\.\d% \([+-]\d+\.\d\)", r[2]) for r in rows), rows
    offline = dict(page.eval_on_selector_all("#validation-offline tbody tr", "rs => rs.map(r => [r.cells[0].textContent, r.cells[2].textContent])"))
    assert offline["hopper"] == str(t["offline"]["hopper"]["output_tok_s_per_gpu"]["n"])
    assert "models" in t and page.eval_on_selector_all("#validation-models tbody tr", "rs => rs.length") == len(t["models"])
    assert not page.errors


def test_a_crafted_name_in_the_static_report_is_text(page, tmp_path):
    """A config named like `<img src=x onerror=...>.json` shows as text in the header, legend, table
    and hover of the report, and runs nothing."""
    import llm_codesign as lc
    from llm_codesign.render.report import write_html

    evil = "<img src=x onerror=window.__xss=1>"
    from dataclasses import replace

    res = lc.pareto("llama-3.1-8b", "h100", num_gpus=1)
    res = replace(res, model=evil, gpu=replace(res.gpu, id=evil + "</script>"))
    path = tmp_path / "evil.html"
    write_html([res, replace(res, gpu=replace(res.gpu, id="h200"))], {}, path, {evil: [evil]})
    page.goto(path.as_uri())
    page.wait_for_selector("#frontier-table")
    assert page.text_content("h1") == f"Pareto report: {evil} on {evil}</script>, {evil} on h200"
    assert page.text_content("#frontier-table tbody tr td") == evil
    assert f"{evil} on h200 (" in page.text_content("#legend")
    page.click("#frontier-table tbody tr")
    assert page.text_content("#breakdown").startswith(f"{evil} on {evil}</script>, point 1: ")
    assert page.evaluate("window.__xss") is None and not page.query_selector("img") and not page.errors
