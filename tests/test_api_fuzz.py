"""The page's HTTP API fuzzed from its own OpenAPI schema (schemathesis: bodies that fit the schema and
bodies that break it): no 500, every error in the {error, field} shape, a 200 that fits the schema, and
no request that opens a file outside the package or a socket (issue 36).

The default run is short (15 s on two vCPUs): LLM_CODESIGN_API_FUZZ_N examples per operation (default 15),
derandomized, so the same requests every run. A larger N adds schemathesis's coverage phase (~1,200 boundary
cases): LLM_CODESIGN_API_FUZZ_N=400 pytest tests/test_api_fuzz.py."""
import builtins
import io
import os
import pathlib
import socket
import threading

import pytest

pytest.importorskip("fastapi", reason="the serve extra (fastapi) is not installed: pip install -e '.[serve]'")
schemathesis = pytest.importorskip("schemathesis", reason="the dev extra's schemathesis is not installed")

from fastapi.testclient import TestClient  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from schemathesis.specs.openapi.checks import (  # noqa: E402
    content_type_conformance,
    negative_data_rejection,
    response_schema_conformance,
    status_code_conformance,
)

import llm_codesign  # noqa: E402
import llm_codesign as lc  # noqa: E402
from llm_codesign.spec.hardware import catalog  # noqa: E402
from llm_codesign.spec.registry import entries  # noqa: E402
from llm_codesign.web.app import (  # noqa: E402
    DesignRequest,
    DisaggRequest,
    EstimateRequest,
    LintRequest,
    ParetoRequest,
    PointDeployment,
    create_app,
)

N = int(os.environ.get("LLM_CODESIGN_API_FUZZ_N", "15"))
PACKAGE = os.path.realpath(os.path.dirname(llm_codesign.__file__))
SEEN: list[str] = []  # what the requests reached outside the package


def check(what, path=None):
    """Records (and fails where it happens) a file outside the package, or a connection, reached on a
    thread of the server's: the app runs on schemathesis's event-loop thread and the worker threads it
    starts; the main thread is pytest's and the client's."""
    if threading.current_thread() is threading.main_thread() or isinstance(path, int):  # an open file descriptor
        return
    if path is not None:
        real = os.path.realpath(os.fsdecode(path))
        if os.path.commonpath([real, PACKAGE]) == PACKAGE:
            return
        what = f"{what} {real}"
    SEEN.append(what)
    raise AssertionError(f"a request reached {what}")


@pytest.fixture(scope="module", autouse=True)
def confined():
    """builtins.open, io.open, pathlib's stat (Path.exists, is_file, is_dir: the existence oracle of
    issue 36), socket connections: each call checked while the module's tests run."""
    real_open, real_stat, real_connect, real_create = builtins.open, pathlib.Path.stat, socket.socket.connect, socket.create_connection

    def opened(file, *args, **kwargs):
        check("the file", file)
        return real_open(file, *args, **kwargs)

    def stat(self, *args, **kwargs):
        check("the path", self)
        return real_stat(self, *args, **kwargs)

    def connect(sock, address):
        check(f"a connection to {address}")
        return real_connect(sock, address)

    def create_connection(address, *args, **kwargs):
        check(f"a connection to {address}")
        return real_create(address, *args, **kwargs)

    saved = [(builtins, "open", opened), (io, "open", opened), (pathlib.Path, "stat", stat), (socket.socket, "connect", connect),
             (socket, "create_connection", create_connection)]
    old = [getattr(o, n) for o, n, _ in saved]
    for o, n, new in saved:
        setattr(o, n, new)
    try:
        yield
    finally:
        for (o, n, _), v in zip(saved, old, strict=True):
            setattr(o, n, v)


# a short time budget: a design enumerates its candidate shapes for 2-3 s, then prices them (a 500-candidate one on
# 8 GPUs in about 1 s more, 5,000 on 72 GPUs in 10-20 s): past 4 s it is a 503, and the run stays short
APP = create_app(time_budget_s=4.0)
TestClient(APP).get("/healthz")  # the first lazy imports of the app's, before the checks
schema = schemathesis.openapi.from_asgi("/openapi.json", APP)
# schemathesis's coverage phase adds ~1,200 boundary cases whatever the example count: the long run's only
schema.config.phases.coverage.enabled = N > 15

# names the server knows, which random strings never hit: half the cases get them where the generated value
# was a string or record the schema takes (so a case meant to break the schema still breaks it)
MODELS = [e["name"] for e in entries()] + ["Qwen/Qwen3-8B"]  # and a Hub id the registry lacks: refused, never fetched
GPUS = list(catalog())
RECORDS = [p.record() for p in lc.pareto("qwen3-30b-a3b", "h100", num_gpus=2).points[::5]]


REQUESTS = {"/api/estimate": EstimateRequest, "/api/pareto": ParetoRequest, "/api/lint": LintRequest, "/api/design": DesignRequest,
            "/api/disagg": DisaggRequest}


def _named(body: dict, names: dict, fields) -> dict:
    out = dict(body)
    if "model" in fields and "model" not in out and "config" not in out:  # optional: naming one keeps a case's validity
        out["model"] = names["model"]
    for key, limit in (("model", 300), ("baseline", 300), ("draft_model", 300), ("gpu", 100), ("decode_gpu", 100)):
        if isinstance(out.get(key), str) and len(out[key]) <= limit:
            out[key] = names["gpu" if key.endswith("gpu") else "model"]
    if isinstance(out.get("gpus"), list) and 1 <= len(out["gpus"]) <= 8 and all(isinstance(g, str) and len(g) <= 100 for g in out["gpus"]):
        out["gpus"] = names["gpus"][:len(out["gpus"])]
    if isinstance(out.get("deployment"), dict):
        try:
            PointDeployment.model_validate(out["deployment"])
        except ValueError:
            return out
        out["deployment"] = names["record"]
    return out


@schema.hook
def flatmap_case(context, case):
    if not isinstance(case.body, dict) or case.operation.path not in REQUESTS:
        return st.just(case)
    names = st.fixed_dictionaries({"model": st.sampled_from(MODELS), "gpu": st.sampled_from(GPUS), "record": st.sampled_from(RECORDS),
                                   "gpus": st.lists(st.sampled_from(GPUS), min_size=8, max_size=8)})
    original, fields = case.body, REQUESTS[case.operation.path].model_fields

    def with_body(body):
        case.body = body
        return case

    return st.one_of(st.just(original), names.map(lambda d: _named(original, d, fields))).map(with_body)


@schema.parametrize()
@settings(max_examples=N, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck))
def test_api(case):
    SEEN.clear()
    r = case.call()
    assert SEEN == [], SEEN
    assert r.status_code != 500, r.text
    if r.status_code >= 400:
        body = r.json()
        assert set(body) == {"error", "field"}, body
        assert isinstance(body["error"], str) and body["error"] and "\n" not in body["error"], body
        assert body["field"] is None or isinstance(body["field"], str), body
    case.validate_response(r, checks=[status_code_conformance, content_type_conformance, response_schema_conformance,
                                      negative_data_rejection])
