"""The page's server against hostile or careless requests (issue 36): no file and no network reached by
a request, every error in the {error, field} shape on a connection that stays open, searches bounded in
number and time and stopped when their client leaves. A real uvicorn server on loopback where the
connection itself is what is tested."""
import http.client
import json
import socket
import threading
import time
from contextlib import contextmanager

import pytest

pytest.importorskip("fastapi", reason="the serve extra (fastapi) is not installed: pip install -e '.[serve]'")
pytest.importorskip("httpx", reason="FastAPI's TestClient needs httpx (in the dev extra)")

from fastapi.testclient import TestClient  # noqa: E402

import llm_codesign as lc  # noqa: E402
from llm_codesign.spec.registry import _data, entries  # noqa: E402
from llm_codesign.web import app as web  # noqa: E402

REGISTRY = "a bundled model (" + ", ".join(e["name"] for e in entries()) + ") or one of their Hugging Face ids"


@pytest.fixture(scope="module")
def client():
    return TestClient(web.create_app())


@pytest.fixture(scope="module")
def point():
    rec = lc.pareto("llama-3.1-8b", "h200", num_gpus=1).points[3].record()
    assert rec["tp"] == 1 and rec["concurrency_per_instance"] > 1
    return rec


@pytest.fixture
def no_network(monkeypatch):
    """Every outbound connection fails the test (the Hub's client reaches it through these)."""
    tried = []

    def refuse(*args, **kwargs):
        tried.append(args)
        raise AssertionError(f"a request opened a connection: {args}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    return tried


@contextmanager
def uvicorn_server(app):
    """The app on a real uvicorn server on a free loopback port, in a thread."""
    import uvicorn

    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="critical", lifespan="off"))
    t = threading.Thread(target=server.run, daemon=True)
    t.start()
    for _ in range(1000):
        if server.started:
            break
        time.sleep(0.01)
    try:
        yield server.servers[0].sockets[0].getsockname()[1]
    finally:
        server.should_exit = True
        t.join(10)


def _post(conn, path, body, headers=None):
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    conn.request("POST", path, data, {"Content-Type": "application/json", **(headers or {})})
    r = conn.getresponse()
    return r.status, r.getheaders(), json.loads(r.read())


# ---- 1. a model is the registry's, a pasted config's, or (--hub-cache) the local cache's: never a path, never the network
@pytest.mark.parametrize("value", ["/etc/passwd", "/nonexistent/x", "org/name", "draft.json", "meta-llama/Llama-3.1-8B@../../../../etc"])
def test_a_draft_model_is_the_registrys_only(client, point, no_network, value, tmp_path):
    if value == "draft.json":  # a readable config.json on the server's disk is no draft either
        value = str(tmp_path / "config.json")
        (tmp_path / "config.json").write_text(_data().joinpath("meta-llama--Meta-Llama-3.1-8B_config.json").read_text())
    dep = {**point, "spec": "draft", "draft_len": 2, "acceptance": 2.0, "draft_model": value}
    r = client.post("/api/estimate", json={"model": "llama-3.1-70b", "gpu": "h200", "deployment": dep})
    # one answer whether the path exists or not: no file-existence oracle, nothing of a file's echoed
    assert r.status_code == 422 and r.json() == {"error": f"deployment.draft_model: {value!r} is not valid; {REGISTRY}",
                                                 "field": "deployment.draft_model"}
    assert no_network == []


def test_a_bundled_draft_prices(client, point):
    dep = {**point, "spec": "draft", "draft_len": 2, "acceptance": 2.0, "draft_model": "Llama-3.1-8B"}
    r = client.post("/api/estimate", json={"model": "llama-3.1-70b", "gpu": "h200", "deployment": dep})
    assert r.status_code == 200, r.text
    assert r.json()["export"]["text"] is not None


@pytest.mark.parametrize("route,body,field", [
    ("/api/lint", {"model": "meta-llama/Llama-9-1B", "gpu": "h200"}, "model"),
    ("/api/design", {"params": 8e9, "baseline": "meta-llama/Llama-9-1B"}, "baseline"),
])
def test_a_hub_id_is_no_download(client, no_network, route, body, field):
    r = client.post(route, json=body)
    value = body.get("model") or body.get("baseline")
    assert r.status_code == 422
    assert r.json() == {"error": f"{field}: {value!r} is not valid; {REGISTRY}, or a pasted config.json", "field": field}
    assert no_network == []


def test_a_path_is_not_read_and_the_line_says_where_the_content_goes(client, no_network):
    """A path (newc6 #22): the server reads no file; the line names the field that takes the file's content."""
    r = client.post("/api/design", json={"params": 8e9, "baseline": "/etc/hostname"})
    assert r.status_code == 422 and r.json() == {"error": "baseline: '/etc/hostname' is not valid; a path is not read by the server; "
                                                 "send the config.json's content as `baseline` (an object)", "field": "baseline"}
    assert no_network == []


@pytest.mark.parametrize("baseline, line", [
    # before: `baseline.constrained-str` (pydantic's Union member tag) and `config.hidden_size` (the loader's name)
    ("x" * 301, f"baseline: {chr(39) + 'x' * 79}... is not valid; String should have at most 300 characters"),
    (5, "baseline: 5 is not valid; a registry name (a string) or a pasted config.json (an object)"),
    (["a"], 'baseline: ["a"] is not valid; a registry name (a string) or a pasted config.json (an object)'),  # review rev12c #4
    ({"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": "big"},
     "baseline.hidden_size: 'big' is not valid; an integer from 1 to 1,048,576"),
])
def test_a_bad_design_baseline_names_baseline(client, baseline, line):
    r = client.post("/api/design", json={"params": 8e9, "baseline": baseline})
    assert r.status_code == 422 and r.json() == {"error": line, "field": line.split(":")[0]}


def test_a_pasted_model_config_still_names_config(client):
    r = client.post("/api/lint", json={"config": {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": "big"},
                                       "gpu": "h200"})
    assert r.status_code == 422 and r.json()["field"] == "config.hidden_size"


def test_hub_cache_reads_the_local_cache_alone(tmp_path, monkeypatch, no_network):
    pytest.importorskip("huggingface_hub")
    commit = "0123456789abcdef0123456789abcdef01234567"
    snap = tmp_path / "models--someorg--tiny-llama" / "snapshots" / commit
    snap.mkdir(parents=True)
    (snap / "config.json").write_text(_data().joinpath("meta-llama--Meta-Llama-3.1-8B_config.json").read_text())
    (tmp_path / "models--someorg--tiny-llama" / "refs").mkdir()
    (tmp_path / "models--someorg--tiny-llama" / "refs" / "main").write_text(commit)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)  # online, yet no request reaches the network
    c = TestClient(web.create_app(hub_cache=True))
    r = c.post("/api/lint", json={"model": "someorg/tiny-llama", "gpu": "h200"})
    assert r.status_code == 200 and r.json()["model"] == "tiny-llama"
    assert r.json()["findings"] == c.post("/api/lint", json={"model": "llama-3.1-8b", "gpu": "h200"}).json()["findings"]
    r = c.post("/api/lint", json={"model": "someorg/not-cached", "gpu": "h200"})
    assert r.status_code == 422 and r.json() == {
        "error": f"model: 'someorg/not-cached' is not valid; a model in the local Hugging Face cache ({tmp_path}): only the cache is "
                 "read here, and it has no config.json for revision main", "field": "model"}
    for bad in ("someorg/tiny-llama@../../x", "/etc/passwd", "someorg/a..b"):  # a revision or id that would step out of the cache
        r = c.post("/api/lint", json={"model": bad, "gpu": "h200"})
        assert r.status_code == 422 and r.json()["field"] == "model", r.text
        # a path is named as one (newc6 #22); an id that is no cache id, by what the cache takes
        want = "a path is not read by the server" if bad.startswith("/") else "Hugging Face id in this machine's cache"
        assert want in r.json()["error"]
    # without --hub-cache the cached id is refused
    assert TestClient(web.create_app()).post("/api/lint", json={"model": "someorg/tiny-llama", "gpu": "h200"}).status_code == 422
    assert no_network == []


# ---- 2. a Host allow-list whatever the bound address
def test_serve_keeps_a_host_allow_list_off_loopback(monkeypatch):
    import uvicorn
    from typer.testing import CliRunner

    from llm_codesign.cli import app as cli
    from llm_codesign.cli import serve

    apps = []
    monkeypatch.setattr(serve, "_check_bind", lambda host, port: None)
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: apps.append(app))
    r = CliRunner().invoke(cli, ["serve", "--host", "192.0.2.7", "--allowed-host", "box.lan"])
    assert r.exit_code == 0, r.output
    for base, status in (("http://192.0.2.7:8000", 200), ("http://box.lan:8000", 200), ("http://evil.example", 400),
                         ("http://localhost:8000", 400)):
        assert TestClient(apps[0], base_url=base).get("/healthz").status_code == status, base
    refused = TestClient(apps[0], base_url="http://evil.example").get("/healthz").json()
    assert refused == {"error": "host: 'evil.example' is not valid; one of: 192.0.2.7, box.lan (serve --allowed-host adds a name)",
                       "field": "host"}
    assert serve.allowed_hosts("0.0.0.0", []) == ["0.0.0.0", "127.0.0.1", "localhost", "::1"]  # loopback reaches a wildcard bind
    assert serve.allowed_hosts("127.0.0.1", ["*"])[-1] == "*"
    CliRunner().invoke(cli, ["serve", "--host", "::1", "--allowed-host", "*"])
    assert TestClient(apps[1], base_url="http://evil.example").get("/healthz").status_code == 200
    assert TestClient(apps[1], base_url="http://[::1]:8000").get("/healthz").status_code == 200


def test_serves_defaults_are_the_apps():
    import inspect

    from llm_codesign.cli.serve import serve

    p = inspect.signature(serve).parameters
    assert (p["max_busy"].default.default, p["time_budget"].default.default) == (web.MAX_BUSY, web.TIME_BUDGET_S)


# ---- 3. no 500, and a refused request keeps its connection
@pytest.mark.parametrize("change,field,line", [
    # a record's draft length without its method was priced with no speculation (a 200)
    ({"draft_len": 3}, "deployment.spec", "None is not valid; mtp, eagle3, draft, ngram with draft_len 3 (none with draft_len 0)"),
    ({"spec": "eagle3"}, "deployment.draft_len", "0 is not valid; an integer from 1 to 16"),
])
def test_a_points_bad_field_is_named_by_its_path(client, point, change, field, line):
    r = client.post("/api/estimate", json={"model": "llama-3.1-8b", "gpu": "h200", "deployment": {**point, **change}})
    assert (r.status_code, r.json()) == (422, {"error": f"{field}: {line}", "field": field})


def test_a_point_without_its_batch_is_a_422_on_a_connection_that_stays(point):
    dep = {k: v for k, v in point.items() if k != "concurrency_per_instance"}
    with uvicorn_server(web.create_app()) as port:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        status, _, body = _post(conn, "/api/estimate", {"model": "llama-3.1-8b", "gpu": "h200", "deployment": dep})
        assert status == 422 and body == {
            "error": "deployment.concurrency_per_instance: None is not valid; the point's requests in flight per instance, "
                     "as a frontier point's record carries (or `concurrency`)", "field": "deployment.concurrency_per_instance"}
        for bad in (b"{", b"[" * 5000, json.dumps({"model": "llama-3.1-8b", "gpu": "h200", "deployment": {**point, "num_gpus": "x"}}).encode()):
            assert _post(conn, "/api/estimate", bad)[0] == 422
        # the same connection answers the next request: the request's batch stands in for the point's
        status, _, body = _post(conn, "/api/estimate", {"model": "llama-3.1-8b", "gpu": "h200", "deployment": dep, "concurrency": 7})
        assert status == 200 and body["concurrency"] == 7
        conn.close()


# ---- 4. every error in the {error, field} shape, the field a JSON path
@pytest.mark.parametrize("method,path,data,status,want", [
    ("POST", "/api/estimate", b'{"model": "llama-3.1-8b",\n "gpu": }', 422,
     {"error": "body: not valid JSON: Expecting value at line 2, column 9", "field": "body"}),
    ("POST", "/api/estimate", b"[" * 5000 + b"]" * 5000, 422, {"error": "body: not valid JSON: nested deeper than the parser reads", "field": "body"}),
    ("POST", "/api/estimate", b'{"model": "x"} trailing', 422, {"error": "body: not valid JSON: Extra data at line 1, column 16", "field": "body"}),
    # json.loads refuses an integer of over 4,300 digits with a ValueError: the line said only "ValueError"
    ("POST", "/api/estimate", b'{"isl": 1' + b"0" * 5000 + b"}", 422,
     {"error": "body: not valid JSON: a number of more than 4,300 digits", "field": "body"}),
    ("POST", "/api/estimate", b" " * (web.MAX_BODY + 1), 413,
     {"error": "body: over 1,048,576 bytes is not valid; a request of the page's (a pasted config.json is kilobytes)", "field": "body"}),
    ("GET", "/api/nothing", None, 404, {"error": "path: '/api/nothing' is not valid; one of the API's (GET /openapi.json lists them)", "field": None}),
    ("PUT", "/api/pareto", b"{}", 405, {"error": "method: 'PUT' is not valid for /api/pareto; POST", "field": None}),
])
def test_errors_have_one_shape(client, method, path, data, status, want):
    r = client.request(method, path, content=data, headers={"Content-Type": "application/json"})
    assert (r.status_code, r.json()) == (status, want)


def test_a_body_of_another_type_is_named(client):
    r = client.post("/api/lint", content=b'{"model": "llama-3.1-8b", "gpu": "h200"}', headers={"Content-Type": "text/plain"})
    assert (r.status_code, r.json()) == (422, {"error": "body: not valid; a JSON object sent as Content-Type: application/json", "field": "body"})


# ---- 5. true/false are no numbers; searches bounded in number, in time, and stopped when their client leaves
@pytest.mark.parametrize("route,body,field,value", [
    ("/api/estimate", {"model": "llama-3.1-8b", "gpu": "h200", "num_gpus": True}, "num_gpus", True),
    ("/api/pareto", {"model": "llama-3.1-8b", "gpus": ["h200"], "min_tps_user": False}, "min_tps_user", False),
    ("/api/design", {"params": 8e9, "max_candidates": True}, "max_candidates", True),
    ("/api/pareto", {"model": "llama-3.1-8b", "gpus": ["h200"], "what_if": {"scale_up_domain": True}}, "what_if.scale_up_domain", True),
])
def test_true_is_not_one(client, route, body, field, value):
    r = client.post(route, json=body)
    assert (r.status_code, r.json()) == (422, {"error": f"{field}: {value!r} is not valid; Input should be a number, not true or false",
                                               "field": field})


@pytest.mark.parametrize("body,field", [({"breakdown": 1}, "breakdown"), ({"breakdown": "yes"}, "breakdown")])
def test_a_boolean_is_true_or_false(client, body, field):
    r = client.post("/api/estimate", json={"model": "llama-3.1-8b", "gpu": "h200", **body})
    assert r.status_code == 422 and r.json()["field"] == field and "Input should be a valid boolean" in r.json()["error"]


def test_a_search_past_max_busy_is_a_429_with_retry_after(monkeypatch):
    started, release = threading.Event(), threading.Event()

    def slow(req, job, **kw):
        started.set()
        release.wait(30)
        return {"series": []}

    monkeypatch.setattr(web, "_pareto", slow)
    body = {"model": "llama-3.1-8b", "gpus": ["h200"], "num_gpus": 1}
    with uvicorn_server(web.create_app(max_busy=1)) as port:
        first = []
        t = threading.Thread(target=lambda: first.append(_post(http.client.HTTPConnection("127.0.0.1", port, timeout=60), "/api/pareto", body)))
        t.start()
        assert started.wait(30)
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        for path, req in (("/api/pareto", body), ("/api/design", {"params": 8e9, "num_gpus": 1, "max_candidates": 10}),
                          ("/api/estimate", {"model": "llama-3.1-8b", "gpu": "h200"})):
            status, headers, got = _post(conn, path, req)
            assert (status, dict(headers)["retry-after"]) == (429, "5")
            assert got == {"error": "busy: this server runs 1 searches at once, all under way (serve --max-busy); retry in 5 s", "field": None}
        assert _post(conn, "/api/lint", {"model": "llama-3.1-8b", "gpu": "h200"})[0] == 200  # lint is no search: answered meanwhile
        release.set()
        t.join(30)
        assert first[0][0] == 200
        assert _post(conn, "/api/estimate", {"model": "llama-3.1-8b", "gpu": "h200"})[0] == 200  # the slot is free again


# 25 chunks of 16 shapes: the 391 inside the dense models' envelope (500 when MoE models set its aspect and depth bounds)
DESIGN = {"params": 70e9, "gpu": "h200", "num_gpus": 8, "max_candidates": 500, "top": 3}


@pytest.fixture
def chunks(monkeypatch):
    """Counts the design's chunks priced, and says when its search has ended."""
    from llm_codesign.explore import design

    count, ended = [0], threading.Event()
    price, run = design._price_chunk, web._design

    def counted(*a, **kw):
        count[0] += 1
        return price(*a, **kw)

    def ends(*a, **kw):
        try:
            return run(*a, **kw)
        finally:
            ended.set()

    monkeypatch.setattr(design, "_price_chunk", counted)
    monkeypatch.setattr(web, "_design", ends)
    return count, ended


def test_a_search_past_its_time_budget_stops_with_one_line(chunks):
    count, ended = chunks
    c = TestClient(web.create_app(time_budget_s=1e-9))
    line = "max_candidates: a search this large ran past this server's time budget of 1e-09 s and was stopped; a smaller max_candidates " \
           "(or serve --time-budget)"
    r = c.post("/api/design", json=DESIGN)
    assert (r.status_code, r.json()) == (503, {"error": line, "field": "max_candidates"})
    assert count[0] == 1  # stopped at its first progress call
    r = c.post("/api/design", json=DESIGN, headers={"Accept": web.NDJSON})
    assert r.status_code == 200 and json.loads(r.text.splitlines()[-1]) == {"error": line, "field": "max_candidates"}
    r = c.post("/api/pareto", json={"model": "llama-3.1-8b", "gpus": ["h200"], "num_gpus": 1})
    assert r.status_code == 503 and r.json()["field"] == "num_gpus"


@pytest.mark.parametrize("stream", [False, True])
def test_a_search_stops_when_its_client_leaves(chunks, stream):
    count, ended = chunks
    with uvicorn_server(web.create_app()) as port:
        s = socket.create_connection(("127.0.0.1", port))
        body = json.dumps(DESIGN).encode()
        accept = f"Accept: {web.NDJSON}\r\n" if stream else ""
        s.sendall(f"POST /api/design HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n{accept}"
                  f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
        if stream:  # the search is under way: its first chunk is priced (16 of the 295 shapes admitted since branch falcon's
            # six dense trunks near 70B, aspect 53.3-204.8 and layers 45-118.75: docs/modelling-notes.md#falcon-configs; 253
            # under envb's 53.3-153.6 and 48-118.75, 303 under fixdes2's 53.3-195 and 27-157.5, 391 before it; 378 since fixE:
            # shapes with more query heads over llama-3.1-70b's 8 KV heads no longer pay the KV term)
            got = b""
            while b"progress" not in got:
                got += s.recv(4096)
            assert b'{"progress": [16, 378]}' in got
        s.close()
        assert ended.wait(60)
    assert count[0] <= 5, count[0]  # of 19 (295 / 16; 16 under envb, 19 under fixdes2, 25 before it): the chunks in hand when the client left (1-2 here), stopped at the next progress call
