"""What a user's own config launches and is priced as (newcomer review newc4, findings 5 and 12): export names the
checkpoint folder the config was read from, else a marked placeholder, in every engine and Dynamo, and import reads it
back; MTP on a model that ships no MTP module is refused; an unknown model_type is said; a pasted config is named by its
_name_or_path."""
import json
import shlex

import pytest
import yaml
from typer.testing import CliRunner

import llm_codesign as lc
from llm_codesign.cli import app
from llm_codesign.errors import InputError
from llm_codesign.explore.export import export_config, export_dynamo, read_dynamo, read_export
from llm_codesign.explore.export_engines.base import CHECKPOINT_PLACEHOLDER
from llm_codesign.explore.search import SearchSpace
from llm_codesign.spec.hardware import get_gpu
from llm_codesign.spec.plan import Deployment, Plan, SpecDecoding
from llm_codesign.spec.registry import get_model

# the newcomer's my-30b (/tmp/newc4/my-30b.json): llama, h6144, L64, GQA 48/8
CFG = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 6144, "intermediate_size": 20480,
       "num_hidden_layers": 64, "num_attention_heads": 48, "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 151936,
       "tie_word_embeddings": False, "max_position_embeddings": 131072, "torch_dtype": "bfloat16"}
NOTE = "model_type foo_bar_lm is not one the loader knows; read as a standard decoder from its fields"


@pytest.fixture
def ckpt(tmp_path):
    """ckpt/my-30b/config.json and a bare my-30b.json beside it, the two ways the newcomer gave the model."""
    folder = tmp_path / "ckpt" / "my-30b"
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps(CFG))
    (tmp_path / "my-30b.json").write_text(json.dumps(CFG))
    return tmp_path


def _dep(engine):
    return Deployment(gpu=get_gpu("h200"), num_gpus=4, plan=Plan(4, 1, 1, 1, 1, 1), backend=engine, max_num_tokens=8192)


def _model_option(engine, text):
    """The model a launch file names: vLLM's YAML `model`, SGLang's --model-path, trtllm-serve's first argument."""
    if engine == "vllm":
        return yaml.safe_load(text)["model"]
    words = shlex.split(text.replace("\\\n", " "), comments=True)
    return words[words.index("--model-path") + 1] if engine == "sglang" else words[words.index("trtllm-serve") + 1]


@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm"])
def test_folder_is_the_model_path(ckpt, engine, monkeypatch):
    # the folder resolved to an absolute path, whether named by the folder or its config.json, relative or not: before,
    # the path as given (ckpt/my-30b), which an import from another directory could not find (review rvb #3)
    monkeypatch.chdir(ckpt)
    folder = str((ckpt / "ckpt" / "my-30b").resolve())
    for ref in ("ckpt/my-30b", "ckpt/my-30b/config.json", "./ckpt/../ckpt/my-30b", folder):
        m = get_model(ref)
        assert (m.name, m.hf_ids) == ("my-30b", (folder,))
        text = export_config(m, _dep(engine), engine=engine, concurrency=32, file_name="f")
        assert (f"# model: {folder} is the checkpoint folder my-30b's config.json was read from, as an absolute path: the launch "
                "and its import work from any directory") in text.splitlines()
        if engine == "trtllm":  # the model is on the launch line in the header
            text = next(line[len("# launch: "):] for line in text.splitlines() if line.startswith("# launch: "))
        assert _model_option(engine, text) == folder
        assert CHECKPOINT_PLACEHOLDER not in text
    if engine != "trtllm":  # the way back reads the folder (trtllm's YAML names no model), from another directory too
        text = export_config(get_model("ckpt/my-30b"), _dep(engine), engine=engine, concurrency=32)
        other = ckpt / "elsewhere"
        other.mkdir()
        monkeypatch.chdir(other)
        back = read_export(text, "f")
        assert (back.model.name, back.model.hf_ids, back.deployment.plan.label()) == ("my-30b", (folder,), "TP4")


def test_cli_import_from_another_directory(ckpt, monkeypatch):
    """export in one directory, import in another: the launch file names the folder absolutely."""
    monkeypatch.chdir(ckpt)
    r = CliRunner().invoke(app, ["export", "ckpt/my-30b", "--gpu", "h200", "--gpus", "4", "--backend", "vllm", "-o", "v.yaml"])
    assert r.exit_code == 0, r.output
    (ckpt / "other").mkdir()
    monkeypatch.chdir(ckpt / "other")
    r = CliRunner().invoke(app, ["import", "../v.yaml"])
    assert r.exit_code == 0, r.output


@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm"])
def test_bare_json_gets_a_marked_placeholder(ckpt, engine):
    m = get_model(str(ckpt / "my-30b.json"))
    assert (m.name, m.hf_ids) == ("my-30b", ())
    text = export_config(m, _dep(engine), engine=engine, concurrency=32, file_name="f")
    line = ("# model: <your checkpoint dir> is a placeholder: my-30b's config names no checkpoint folder; put the folder "
            "holding its config.json and weights there")
    assert line in text.splitlines()
    launch = next(x[len("# launch: "):] for x in text.splitlines() if x.startswith("# launch: ")) if engine == "trtllm" else text
    assert _model_option(engine, launch) == "<your checkpoint dir>"
    if engine != "trtllm":
        with pytest.raises(InputError) as e:
            read_export(text, "f")
        assert (e.value.field, str(e.value)) == ("model", "model: missing; f names no checkpoint (<your checkpoint dir>): give "
                                                 "--model, the config.json my-30b was exported from, or put its checkpoint "
                                                 "folder in the file")
        assert read_export(text, "f", model=m).model == m


def test_dynamo_names_the_folder_or_the_placeholder(ckpt, monkeypatch):
    monkeypatch.chdir(ckpt)
    dep = _dep("vllm")
    for ref, want in (("ckpt/my-30b", str((ckpt / "ckpt" / "my-30b").resolve())), ("my-30b.json", "<your checkpoint dir>")):
        m = get_model(ref)
        text = export_dynamo(m, prefill=dep, decode=dep, prefill_instances=1, decode_instances=1, concurrency=16)
        comps = {c["type"]: c for c in yaml.safe_load(text)["spec"]["components"]}
        for kind in ("prefill", "decode"):
            args = comps[kind]["podTemplate"]["spec"]["containers"][0]["args"]
            assert args[args.index("--model") + 1] == want
        assert read_dynamo(text, "d", model=m)["decode"]["model"] == m
    with pytest.raises(InputError, match="^model: missing; d names no checkpoint"):
        read_dynamo(text, "d")


def test_cli_export_and_import_of_a_bare_json(ckpt, monkeypatch):
    monkeypatch.chdir(ckpt)
    r = CliRunner().invoke(app, ["export", "my-30b.json", "--gpu", "h200", "--gpus", "8", "--backend", "sglang", "-o", "s.sh"])
    assert r.exit_code == 0, r.output
    assert "--model-path '<your checkpoint dir>'" in (ckpt / "s.sh").read_text()
    r = CliRunner().invoke(app, ["import", "s.sh"])
    assert r.exit_code == 2 and r.stderr.strip().startswith("error: model: missing; s.sh names no checkpoint")
    assert len(r.stderr.strip().splitlines()) == 1
    assert CliRunner().invoke(app, ["import", "s.sh", "--model", "my-30b.json"]).exit_code == 0


def test_mtp_layers_read_from_the_config():
    # num_nextn_predict_layers 1 (DeepSeek-R1), num_mtp_modules 3 (MiniMax-M2.5), mtp_num_hidden_layers 1 (Qwen3.5),
    # num_nextn_predict_layers 0 (Kimi-K2), none (Llama-3.1-8B): the bundled configs
    got = {n: get_model(n).mtp_layers for n in ("deepseek-r1", "minimax-m2.5", "qwen3.5-397b", "kimi-k2", "llama-3.1-8b")}
    assert got == {"deepseek-r1": 1, "minimax-m2.5": 3, "qwen3.5-397b": 1, "kimi-k2": 0, "llama-3.1-8b": 0}
    with pytest.raises(InputError) as e:
        get_model({**CFG, "num_nextn_predict_layers": "one"})
    assert e.value.field == "config.num_nextn_predict_layers"


def test_mtp_refused_on_a_model_without_mtp_layers():
    want = ("spec: 'mtp' is not valid; eagle3 or draft for custom: its config ships no MTP module (it sets none of "
            "num_nextn_predict_layers, mtp_num_hidden_layers, num_mtp_modules); mtp is for a model that does (")
    with pytest.raises(InputError) as e:
        lc.deployment(CFG, gpu="h200", num_gpus=8, spec="mtp", acceptance=2)
    assert str(e.value).startswith(want) and "deepseek-r1" in str(e.value) and "llama" not in str(e.value)
    with pytest.raises(InputError, match="^spec: 'mtp' is not valid; eagle3 or draft for custom"):
        SearchSpace.build(get_model(CFG), get_gpu("h200"), num_gpus=8, spec=SpecDecoding("mtp", 3, 2.0))
    # the model that ships one, and the other methods on this one, are priced
    assert lc.deployment("deepseek-r1", gpu="b200", num_gpus=8, spec="mtp", acceptance=2).spec.method == "mtp"
    assert lc.deployment(CFG, gpu="h200", num_gpus=8, spec="eagle3", acceptance=2).spec.method == "eagle3"


def test_cli_mtp_refusal_is_one_line(ckpt):
    r = CliRunner().invoke(app, ["estimate", str(ckpt / "my-30b.json"), "--gpu", "h200", "--gpus", "8", "--spec", "mtp",
                                 "--acceptance", "2"])
    assert r.exit_code == 2 and len(r.stderr.strip().splitlines()) == 1
    assert r.stderr.startswith("error: spec: 'mtp' is not valid; eagle3 or draft for my-30b")


def test_unknown_model_type_is_said(ckpt):
    foo = ckpt / "foo.json"
    foo.write_text(json.dumps({**CFG, "model_type": "foo_bar_lm"}))
    m, llama = get_model(str(foo)), get_model(CFG)
    assert m.notes == (NOTE,) and llama.notes == () and m.notes[0].kind == "loader"
    assert m.total_params == llama.total_params  # read as the standard decoder its fields describe
    r = CliRunner().invoke(app, ["estimate", str(foo), "--gpu", "h200", "--gpus", "8", "--json"])
    assert r.exit_code == 0 and r.stderr == f"note: {NOTE}\n"
    assert json.loads(r.stdout)["model"] == "foo"
    r = CliRunner().invoke(app, ["estimate", str(ckpt / "my-30b.json"), "--gpu", "h200", "--gpus", "8", "--json"])
    assert r.exit_code == 0 and r.stderr == ""


@pytest.mark.parametrize("given,name", [("/home/me/ckpt/my-30b/", "my-30b"), ("org/My-30B", "My-30B"), ("", "custom"),
                                        (None, "custom")])
def test_pasted_config_named_by_name_or_path(given, name):
    cfg = CFG if given is None else {**CFG, "_name_or_path": given}
    assert get_model(cfg).name == name


def test_a_name_or_path_that_is_no_string_is_refused_by_name():
    # a field the loader reads is validated (spec.validation.CONFIG_FIELDS): one line naming it, as every other field
    with pytest.raises(InputError, match=r"^config\._name_or_path: 7 is not valid; a string"):
        get_model({**CFG, "_name_or_path": 7})


def test_the_pages_pasted_config_is_named_and_launched_from_a_placeholder():
    pytest.importorskip("httpx", reason="FastAPI's TestClient needs httpx (in the dev extra)")
    from fastapi.testclient import TestClient

    from llm_codesign.web.app import create_app

    body = {"config": {**CFG, "_name_or_path": "me/my-30b"}, "gpu": "h200", "num_gpus": 8, "concurrency": 8,
            "engine": "sglang", "export": True}
    r = TestClient(create_app()).post("/api/estimate", json=body)
    assert r.status_code == 200, r.text
    got = r.json()
    assert got["model"] == "my-30b"
    text = got["export"]["text"]
    assert '"model": "my-30b"' in text and "--model-path '<your checkpoint dir>'" in text and "custom" not in text


def test_the_cli_says_the_loaders_notes_by_their_tag(monkeypatch, capsys):
    """cli.common._model says a note tagged "loader" on stderr, whatever its words; a "source" note (spec.hub's) is not
    said there, even one that starts as a loader note did ("model_type "); a Note pickles with its tag."""
    import pickle
    from dataclasses import replace

    from llm_codesign.cli import common
    from llm_codesign.spec import registry
    from llm_codesign.spec.model import Note

    m = replace(get_model(CFG), notes=(Note("read as X", kind="loader"), Note("model_type y from the Hub", kind="source")))
    assert [n.kind for n in pickle.loads(pickle.dumps(m)).notes] == ["loader", "source"]
    monkeypatch.setattr(registry, "get_model", lambda ref: m)
    assert common._model("x") is m
    assert capsys.readouterr().err == "note: read as X\n"
