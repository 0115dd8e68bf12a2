"""Every reader of a user's file (issue 36 item 10): a UTF-8 byte-order mark is read as nothing (Excel's
"CSV UTF-8" and Windows editors write one), and lists and tables nested deeper than MAX_NESTING levels
are one line naming the file and the limit, exit 2 (a 100,000-level config.json was an internal
RecursionError, exit 1; a BOM was refused in a kernels CSV, a config.json, a GPU TOML, ...)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

import llm_codesign
from llm_codesign.cli import app
from llm_codesign.errors import MAX_NESTING

DATA = Path(llm_codesign.__file__).parent / "data"
BOM = "\ufeff"
DEEP = 100_000  # past any parser's recursion
LIMIT_LINE = f"is not valid; a file whose arrays and tables nest at most {MAX_NESTING} levels deep"
SERVING = ("source,model,gpu,num_gpus,backend,weight_dtype,kv_dtype,isl,osl,concurrency,tp,pp,ep,moe_tp,attention_dp,"
           "spec_method,spec_draft_len,spec_acceptance,ttft_ms,tpot_ms,output_tok_s_per_gpu,output_tok_s_per_user\n"
           "a,llama-3.1-8b,h100,1,vllm,bf16,bf16,1024,1024,8,1,1,1,1,1,,,,50,8,,\n")


def cli(*args: str, env: dict | None = None):
    r = CliRunner().invoke(app, list(args), env={"COLUMNS": "2000", **(env or {})})
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        raise AssertionError(f"uncaught {type(r.exception).__name__}: {r.exception}") from r.exception
    return r.exit_code, r.stdout, r.stderr


def _export(tmp_path: Path, engine: str, name: str) -> str:
    out = tmp_path / name
    code, _, err = cli("export", "llama-3.1-8b", "--gpu", "h100", "--engine", engine, "-o", str(out))
    assert code == 0, err
    return out.read_text()


def _pareto(tmp_path: Path) -> str:
    code, out, err = cli("pareto", "llama-3.1-8b", "--gpu", "h100", "--gpus", "1", "--json")
    assert code == 0, err
    return out


def deep_json(text: str, n: int) -> str:
    """The JSON object `text` with a key holding n nested arrays."""
    return text.rstrip()[:-1] + ', "deep": ' + "[" * n + "]" * n + "}"


def deep_toml(text: str, n: int) -> str:
    return "deep = " + "[" * n + "]" * n + "\n" + text


def deep_yaml(text: str, n: int) -> str:
    return text + "deep: " + "[" * n + "]" * n + "\n"


def deep_header(text: str, n: int) -> str:
    """An export whose header line's JSON nests n levels."""
    head, _, rest = text.partition("\n")
    return deep_json(head, n) + "\n" + rest


def deep_flag(text: str, n: int) -> str:
    """An SGLang export whose last flag's value is n nested JSON arrays."""
    return text.rstrip() + " \\\n  --json-model-override-args '" + "[" * n + "]" * n + "'\n"


# reader -> (file name, its valid text (from tmp_path), the command reading it, a way to nest it too deep);
# {p} is the file's path, {d} its folder
READERS = {
    "config.json": ("config.json", lambda t: (DATA / "models" / "meta-llama--Meta-Llama-3.1-8B_config.json").read_text(),
                    ["estimate", "{p}", "--gpu", "h100", "--json"], deep_json),
    "hub config.json": ("models--someorg--m/snapshots/" + "0" * 40 + "/config.json",
                        lambda t: (DATA / "models" / "meta-llama--Meta-Llama-3.1-8B_config.json").read_text(),
                        ["estimate", "someorg/m", "--gpu", "h100", "--json"], deep_json),
    "hub hf_quant_config.json": ("models--someorg--m/snapshots/" + "0" * 40 + "/hf_quant_config.json",
                                 lambda t: (DATA / "models" / "nvidia--Qwen3-235B-A22B-NVFP4_hf_quant_config.json").read_text(),
                                 ["estimate", "someorg/m", "--gpu", "b200", "--json"], deep_json),
    # a user's file takes an id of its own (a bundled GPU's id is refused: spec.hardware)
    "GPU TOML": ("gpu.toml", lambda t: (DATA / "gpus" / "h100.toml").read_text().replace('id = "h100"', 'id = "my-h100"', 1),
                 ["estimate", "llama-3.1-8b", "--gpu", "{p}", "--json"], deep_toml),
    "calibration TOML": ("cal.toml", lambda t: "[hopper]\ngemm_eff_bf16 = 0.5\n",
                         ["estimate", "llama-3.1-8b", "--gpu", "h100", "--calibration", "{p}", "--json"], deep_toml),
    "price TOML": ("prices.toml", lambda t: (DATA / "prices.toml").read_text(),
                   ["estimate", "llama-3.1-8b", "--gpu", "h100", "--gpu-hour-price", "{p}", "--json"], deep_toml),
    "kernels CSV": ("gemm.csv", lambda t: "system,trtllm_version,gemm_dtype,m,n,k,latency_ms\nh100_sxm,x,bfloat16,4096,4096,4096,0.2\n",
                    ["validate", "--kernels", "{p}", "--json"], None),
    "serving CSV": ("serving.csv", lambda t: SERVING, ["validate", "--serving", "{p}", "--json"], None),
    "lengths CSV": ("lengths.csv", lambda t: "isl,osl,count\n1024,128,3\n2048,256,1\n",
                    ["mix", "llama-3.1-8b", "--gpu", "h100", "--lengths", "{p}", "--json"], None),
    "vLLM export": ("e.yaml", lambda t: _export(t, "vllm", "made.yaml"), ["import", "{p}", "--json"], deep_yaml),
    "export header": ("e.yaml", lambda t: _export(t, "vllm", "made.yaml"), ["import", "{p}", "--json"], deep_header),
    "SGLang export": ("e.sh", lambda t: _export(t, "sglang", "made.sh"), ["import", "{p}", "--json"], deep_flag),
    "pareto JSON": ("p.json", _pareto, ["export-point", "{p}", "--index", "0", "-o", "{d}/point.yaml"], deep_json),
}


def _run(tmp_path: Path, reader: str, text: str, sub: str):
    """The reader's command on `text`, in a folder of its own (a Hub look-up is kept per cache folder)."""
    name, _, args, _ = READERS[reader]
    d = tmp_path / sub
    p = d / name
    p.parent.mkdir(parents=True)
    if reader.startswith("hub"):
        (d / "models--someorg--m" / "refs").mkdir()
        (d / "models--someorg--m" / "refs" / "main").write_text("0" * 40)
        snap = p.parent
        if reader == "hub config.json":
            p.write_text(text, encoding="utf-8")
        else:  # an NVFP4 checkpoint: its config, and the quantization file under test
            (snap / "config.json").write_text((DATA / "models" / "nvidia--Qwen3-235B-A22B-NVFP4_config.json").read_text())
            p.write_text(text, encoding="utf-8")
    else:
        p.write_text(text, encoding="utf-8")
    env = {"HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(d)}
    return cli(*(a.format(p=p, d=d) for a in args), env=env), p


@pytest.mark.parametrize("reader", [r for r in READERS if r != "export header"])  # the same file as the vLLM export
def test_a_byte_order_mark_reads_as_the_same_file(tmp_path, reader):
    text = READERS[reader][1](tmp_path)
    (code, plain, err), _ = _run(tmp_path, reader, text, "plain")
    assert code == 0, err
    (code, marked, err), _ = _run(tmp_path, reader, BOM + text, "bom")
    assert (code, err) == (0, "")
    # the paths differ, and a config.json's model is named by its folder (plain, bom) wherever the answer names it
    assert marked == re.sub(r"\bplain\b", "bom", plain)


def test_a_byte_order_mark_keeps_the_first_column_of_a_serving_csv(tmp_path):
    """Accepted before, but read into the first column's name: every row's `source` was lost."""
    from llm_codesign.measure.validate import read_rows

    p = tmp_path / "s.csv"
    p.write_text(BOM + SERVING, encoding="utf-8")
    assert read_rows(p)[0]["source"] == "a"


@pytest.mark.parametrize("reader", [r for r in READERS if READERS[r][3]])
def test_nesting_past_the_limit_is_one_line_naming_the_file(tmp_path, reader):
    text = READERS[reader][1](tmp_path)
    for depth in (MAX_NESTING + 1, DEEP):  # past the limit; past the parsers' recursion (RecursionError before)
        (code, out, err), p = _run(tmp_path, reader, READERS[reader][3](text, depth), f"d{depth}")
        lines = err.strip().splitlines()
        assert code == 2 and out == "" and len(lines) == 1, (code, err[-300:])
        named = "someorg/m: " + p.name if reader.startswith("hub") else str(p)
        assert lines[0].startswith("error: ") and f"{named!r} {LIMIT_LINE}" in lines[0], lines[0]


def test_nesting_at_the_limit_is_read(tmp_path):
    """Depth counts each array or table: a config.json is level 1, so its key can hold MAX_NESTING - 1 arrays."""
    text = READERS["config.json"][1](tmp_path)
    (code, _, err), _ = _run(tmp_path, "config.json", deep_json(text, MAX_NESTING - 1), "at")
    assert code == 0, err
