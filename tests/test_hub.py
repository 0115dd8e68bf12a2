"""Models from the Hugging Face Hub through a prepared local cache (spec/hub.py): no network is used."""
import subprocess
import sys

import pytest

pytest.importorskip("huggingface_hub")

from llm_codesign.errors import InputError  # noqa: E402
from llm_codesign.spec.registry import _data, get_model  # noqa: E402

COMMIT = "0123456789abcdef0123456789abcdef01234567"


def cache_with(root, repo, files: dict[str, str], commit=COMMIT):
    """A folder laid out like the Hugging Face cache: models--org--name/{refs/main, snapshots/<commit>/...}."""
    d = root / ("models--" + repo.replace("/", "--"))
    (d / "refs").mkdir(parents=True)
    (d / "refs" / "main").write_text(commit)
    snap = d / "snapshots" / commit
    snap.mkdir(parents=True)
    for name, text in files.items():
        (snap / name).write_text(text)
    return root


def bundled(name):
    return _data().joinpath(name).read_text()


@pytest.fixture
def hub_cache(tmp_path, monkeypatch):
    cache_with(tmp_path, "someorg/tiny-llama", {"config.json": bundled("meta-llama--Meta-Llama-3.1-8B_config.json"),
                                                # remote code a config may point at: never imported
                                                "modeling_evil.py": "raise SystemExit('remote code ran')"})
    cache_with(tmp_path, "someorg/qwen-nvfp4", {"config.json": bundled("nvidia--Qwen3-235B-A22B-NVFP4_config.json"),
                                                "hf_quant_config.json": bundled("nvidia--Qwen3-235B-A22B-NVFP4_hf_quant_config.json")})
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return tmp_path


def test_offline_cache_hit_is_the_same_shape_as_the_bundled_config(hub_cache):
    m, ref = get_model("someorg/tiny-llama"), get_model("llama-3.1-8b")
    assert (m.total_params, m.active_params, m.num_layers) == (ref.total_params, ref.active_params, ref.num_layers)
    assert m.hf_ids == ("someorg/tiny-llama",)
    assert any(f"someorg/tiny-llama@{COMMIT}" in n for n in m.notes)  # the revision read is pinned


def test_quantization_file_and_pinned_revision_without_network(hub_cache, monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE")
    # a commit hash found in the cache needs no network call, even online
    m = get_model(f"someorg/qwen-nvfp4@{COMMIT}")
    assert m.default_precision.weight.name == "nvfp4"
    assert m.default_precision == get_model("qwen3-235b-a22b-nvfp4").default_precision


def test_auto_map_is_ignored(hub_cache, tmp_path):
    import json

    cfg = json.loads(bundled("meta-llama--Meta-Llama-3.1-8B_config.json"))
    cfg["auto_map"] = {"AutoModelForCausalLM": "modeling_evil.EvilForCausalLM"}
    cache_with(tmp_path, "someorg/remote-code", {"config.json": json.dumps(cfg), "modeling_evil.py": "raise SystemExit(1)"})
    assert get_model("someorg/remote-code").total_params == get_model("llama-3.1-8b").total_params


def test_offline_cache_miss_is_one_line(hub_cache):
    with pytest.raises(InputError, match=r"HF_HUB_OFFLINE=1 forbids downloading it") as e:
        get_model("someorg/not-cached")
    assert str(hub_cache) in str(e.value) and "\n" not in str(e.value)


def test_cli_offline_miss_exits_2(tmp_path):
    import os

    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(tmp_path)}
    r = subprocess.run([sys.executable, "-m", "llm_codesign.cli", "estimate", "someorg/not-cached", "--gpu", "h100"],
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 2 and r.stdout == ""
    assert len(r.stderr.strip().splitlines()) == 1 and "HF_HUB_OFFLINE=1" in r.stderr


def test_without_the_extra_the_message_names_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "huggingface_hub", None)
    with pytest.raises(InputError, match=r"llm-codesign\[hub\]"):
        get_model("someorg/anything")


@pytest.fixture
def online(tmp_path, monkeypatch):
    """Network allowed, an empty cache in tmp_path."""
    from huggingface_hub import constants

    # read once, when huggingface_hub.constants is first imported: maybe under an earlier test's HF_HUB_OFFLINE=1
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    # huggingface_hub 2.x fetches a registry of agent harnesses for its user-agent once a process (one try,
    # 3 s, utils/_detect_agent.py): its telemetry, on whichever request comes first, not the look-up's
    monkeypatch.setattr(constants, "HF_HUB_DISABLE_TELEMETRY", True)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("HF_HUB_ETAG_TIMEOUT", raising=False)


@pytest.fixture
def no_network(online, monkeypatch):
    """A machine with no network: every socket connect fails at once (counted, with the timeout it was
    given). The endpoint is a loopback address so that no name look-up comes first."""
    import errno
    import socket

    tries = []

    def connect(self, address):
        tries.append((address, self.gettimeout()))
        raise OSError(errno.ENETUNREACH, "Network is unreachable")

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")
    return tries


@pytest.fixture
def fake_hub(online, monkeypatch):
    """A Hub on a loopback port holding someorg/m at commit COMMIT2 with a config.json and no
    hf_quant_config.json (a 404 with the Hub's EntryNotFound code); yields the requests it answers."""
    import http.server
    import threading

    body = bundled("meta-llama--Meta-Llama-3.1-8B_config.json").encode()
    seen = []

    class Hub(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_HEAD(self, send=False):
            seen.append((self.command, self.path))
            found = self.path == "/someorg/m/resolve/main/config.json"
            self.send_response(200 if found else 404)
            self.send_header("X-Repo-Commit", COMMIT2)
            if found:
                self.send_header("ETag", '"config-etag"')
            else:
                self.send_header("X-Error-Code", "EntryNotFound")
            self.send_header("Content-Length", str(len(body) if found else 0))
            self.end_headers()
            if found and send:
                self.wfile.write(body)

        def do_GET(self):
            self.do_HEAD(send=True)

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hub)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{srv.server_port}")
    yield seen
    srv.shutdown()
    srv.server_close()


COMMIT2 = "ab" * 20


def test_a_hub_that_answers_is_read_once_and_pinned(fake_hub):
    m = get_model("someorg/m")
    assert (m.num_layers, m.notes[-1]) == (32, f"config.json from the Hugging Face Hub: someorg/m@{COMMIT2}")
    assert m.default_precision.weight.name == "bf16"  # no quantization file: the checkpoint's dtype
    # our one HEAD, then hf_hub_download's HEAD and GET; the quantization file's HEAD answers that it has none
    assert fake_hub == [("HEAD", "/someorg/m/resolve/main/config.json"), ("HEAD", "/someorg/m/resolve/main/config.json"),
                        ("GET", "/someorg/m/resolve/main/config.json"), ("HEAD", "/someorg/m/resolve/main/hf_quant_config.json")]
    assert get_model("someorg/m") is m and len(fake_hub) == 4  # kept for the process: the same revision, no request


UNREACHABLE = ("model: 'someorg/not-cached' is not valid; a model in the local Hugging Face cache ({cache}) or on a Hub that "
               "answers (http://127.0.0.1:9 did not: ConnectError); pass a config.json path instead, or fill the cache where the "
               "Hub can be reached (hf download someorg/not-cached config.json) and set HF_HUB_OFFLINE=1 to read the cache only")


def test_an_unreachable_hub_is_one_try_one_line_and_asked_once(no_network, tmp_path, caplog):
    """Before: six connection attempts 1+2+4+8+8 s apart (24 s), each logged, then a message with no way out."""
    from llm_codesign.spec.hub import TIMEOUT_S

    caplog.set_level("DEBUG")
    for _ in range(2):  # the second look-up (validate's next row) makes no attempt and says the same
        with pytest.raises(InputError) as e:
            get_model("someorg/not-cached")
        assert str(e.value) == UNREACHABLE.format(cache=tmp_path)
        assert no_network == [(("127.0.0.1", 9), TIMEOUT_S)]
    assert [r.getMessage() for r in caplog.records if r.name.startswith("huggingface_hub")] == []


def test_an_unreachable_hub_still_reads_the_cache(no_network, tmp_path):
    cache_with(tmp_path, "someorg/tiny-llama", {"config.json": bundled("meta-llama--Meta-Llama-3.1-8B_config.json")})
    assert get_model("someorg/tiny-llama").num_layers == 32
    assert len(no_network) == 1  # one try for config.json; hf_quant_config.json then from the same cached snapshot


def test_hf_hub_etag_timeout_sets_the_wait(no_network, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_ETAG_TIMEOUT", "2")
    with pytest.raises(InputError):
        get_model("someorg/other-repo")
    assert no_network == [(("127.0.0.1", 9), 2.0)]


def test_validate_asks_an_unreachable_hub_once_and_keeps_its_reason_whole(no_network, tmp_path):
    """Five rows naming the model: one connection attempt (before: 5 x 24 s), and the reason whole
    (before: cut at 160 characters, mid-word)."""
    from typer.testing import CliRunner

    from llm_codesign.cli import app

    header = ("source,model,gpu,num_gpus,backend,weight_dtype,kv_dtype,isl,osl,concurrency,tp,pp,ep,moe_tp,attention_dp,"
              "spec_method,spec_draft_len,spec_acceptance,ttft_ms,tpot_ms,output_tok_s_per_gpu,output_tok_s_per_user")
    rows = [f"r{i},someorg/not-cached,h100,1,vllm,bf16,bf16,1024,1024,{2 ** i},1,1,1,1,1,,,,50,8,," for i in range(5)]
    p = tmp_path / "serving.csv"
    p.write_text("\n".join([header, *rows]) + "\n")
    r = CliRunner().invoke(app, ["validate", "--serving", str(p)], env={"COLUMNS": "2000"})
    assert r.exit_code == 2 and r.stdout == ""
    assert r.stderr == (f"error: serving: {str(p)!r} is not valid; a file with at least one row the model can price; none of "
                        f"its 5 rows is ({UNREACHABLE.format(cache=tmp_path)})\n")
    assert len(no_network) == 1


def test_cli_unreachable_hub_is_one_line_exit_2(tmp_path):
    import os

    # port 9 (discard) on loopback: nothing listens, the connection is refused at once
    env = {**os.environ, "HF_ENDPOINT": "http://127.0.0.1:9", "HF_HUB_CACHE": str(tmp_path)}
    env.pop("HF_HUB_OFFLINE", None)
    r = subprocess.run([sys.executable, "-m", "llm_codesign.cli", "estimate", "someorg/not-cached", "--gpu", "h100"],
                       capture_output=True, text=True, env=env, timeout=120)
    assert (r.returncode, r.stdout) == (2, "")
    assert r.stderr == "error: " + UNREACHABLE.format(cache=tmp_path) + "\n"
