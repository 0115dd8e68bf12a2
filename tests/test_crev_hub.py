"""Review crev #7 and #11: `serve --hub-cache`'s look-ups (spec/hub.py, local_only) see the operator's downloads and stay
bounded; _quiet restores huggingface_hub's log level exactly whatever the threads' interleaving."""
import json
import logging
import threading
from collections import OrderedDict

import pytest

pytest.importorskip("huggingface_hub")

from llm_codesign.errors import InputError  # noqa: E402
from llm_codesign.spec import hub  # noqa: E402

A, B = "a" * 40, "b" * 40
CFG = {"model_type": "llama", "hidden_size": 2048, "num_hidden_layers": 16, "num_attention_heads": 16, "num_key_value_heads": 8,
       "intermediate_size": 8192, "vocab_size": 32000, "max_position_embeddings": 4096}


def _download(root, repo, commit, cfg):
    """What `hf download REPO config.json` leaves: models--org--name/{refs/main, snapshots/<commit>/config.json}."""
    d = root / ("models--" + repo.replace("/", "--"))
    (d / "snapshots" / commit).mkdir(parents=True)
    (d / "snapshots" / commit / "config.json").write_text(json.dumps(cfg))
    (d / "refs").mkdir(exist_ok=True)
    (d / "refs" / "main").write_text(commit)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(hub, "_LOOKED_UP", OrderedDict())
    return tmp_path


def test_a_local_miss_is_asked_again_and_a_moved_main_is_read_again(cache):
    with pytest.raises(InputError, match="only the cache is read here, and it has no config.json for revision main"):
        hub.get_hub_model("acme/tiny", local_only=True)
    assert len(hub._LOOKED_UP) == 0  # the miss is not kept
    _download(cache, "acme/tiny", A, CFG)  # the operator downloads it; the same server answers
    m = hub.get_hub_model("acme/tiny", local_only=True)
    assert m.hidden == 2048 and any(A in str(n) for n in m.notes)
    assert hub.get_hub_model("acme/tiny", local_only=True) is m  # a hit, kept while the cache resolves to that file
    _download(cache, "acme/tiny", B, {**CFG, "hidden_size": 4096})  # refs/main moves to a new snapshot
    m2 = hub.get_hub_model("acme/tiny", local_only=True)
    assert m2.hidden == 4096 and any(B in str(n) for n in m2.notes)


def test_the_look_ups_kept_are_bounded(cache, monkeypatch):
    monkeypatch.setattr(hub, "LOOKED_UP_MAX", 3)
    for i in range(5):  # misses off the page (not local_only) are kept: an unreachable Hub is asked once
        with pytest.raises(InputError):
            hub.get_hub_model(f"acme/x{i}")
    # the 3 most recent of 5, oldest first (an LRU: 2000 ids kept 2001 entries, 2.7 kB each, before)
    assert [k[0] for k in hub._LOOKED_UP] == ["acme/x2", "acme/x3", "acme/x4"]
    with pytest.raises(InputError):
        hub.get_hub_model("acme/x2")  # a hit moves to the end; the next new id evicts x3
    with pytest.raises(InputError):
        hub.get_hub_model("acme/x5")
    assert [k[0] for k in hub._LOOKED_UP] == ["acme/x4", "acme/x2", "acme/x5"]


def test_quiet_restores_the_level_whatever_the_interleaving(monkeypatch):
    log = logging.getLogger("huggingface_hub")
    monkeypatch.setattr(log, "level", logging.WARNING)
    seen = {}
    a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()

    def first():
        with hub._quiet():
            a_in.set()
            b_in.wait(5)
        a_out.set()

    def second():
        a_in.wait(5)
        with hub._quiet():
            b_in.set()
            a_out.wait(5)
            seen["during"] = log.level  # the first has left: the second is still quiet
    threads = [threading.Thread(target=f) for f in (first, second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    # A enters, B enters, A leaves, B leaves: ERROR + 1 = 41 while either runs, WARNING (30) after (41 for good before)
    assert seen["during"] == logging.ERROR + 1 == 41
    assert log.level == logging.WARNING


@pytest.mark.parametrize("local_only", [True, False])
def test_the_cache_is_asked_for_the_config_once_a_look_up(cache, monkeypatch, local_only):
    # leftB: the cached config.json was looked up twice (the stamp, then _read; or _read, then _download)
    import huggingface_hub

    asked, real = [], huggingface_hub.try_to_load_from_cache

    def counted(repo, filename, **kw):
        asked.append(filename)
        return real(repo, filename, **kw)

    monkeypatch.setattr(huggingface_hub, "try_to_load_from_cache", counted)
    _download(cache, "acme/tiny", A, CFG)
    assert hub.get_hub_model(f"acme/tiny@{A}", local_only=local_only).hidden == 2048
    assert asked.count("config.json") == 1
