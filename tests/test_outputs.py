"""outputs.py and every command that writes files: each output whole or not at all under an error,
Ctrl-C, SIGTERM or SIGHUP; no temporary file left by a clean exit of any kind, and the ones a SIGKILL
leaves removed by the next write; an output that is an input or another output refused; `-` as
standard output; missing folders created (issue 36 items 7-8, issue 41)."""
from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest
from conftest import ENV
from typer.testing import CliRunner

from llm_codesign.cli import app

SERVING = ("source,model,gpu,num_gpus,backend,weight_dtype,kv_dtype,isl,osl,concurrency,tp,pp,ep,moe_tp,attention_dp,"
           "spec_method,spec_draft_len,spec_acceptance,ttft_ms,tpot_ms,output_tok_s_per_gpu,output_tok_s_per_user\n"
           "a,llama-3.1-8b,h100,1,vllm,bf16,bf16,1024,1024,8,1,1,1,1,1,,,,50,8,,\n")
PARETO = ["pareto", "llama-3.1-8b", "--gpu", "h100", "--gpus", "1"]

# the CLI as its console script runs it, but with pareto's CSV writer held after it has written its
# temporary file: a signal then reaches the command mid-write, every time
SLOW_WRITE = """
import sys, time
from llm_codesign.render import report
real = report.write_csv
def held(results, path):
    real(results, path)
    time.sleep(120)
report.write_csv = held
from llm_codesign.cli import main
sys.argv = ["llm-codesign", *sys.argv[1:]]
main()
"""


def cli(*args: str, input: str | None = None):
    r = CliRunner().invoke(app, list(args), env={"COLUMNS": "2000"}, input=input)
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        raise AssertionError(f"uncaught {type(r.exception).__name__}: {r.exception}") from r.exception
    return r.exit_code, r.stdout, r.stderr


def one_line(args, expected: str) -> None:
    code, out, err = cli(*args)
    assert (code, err.strip()) == (2, expected), (code, out[-300:], err)


def _held_in_the_write(tmp_path: Path, *args: str) -> tuple[subprocess.Popen, Path]:
    """pareto started with SLOW_WRITE, returned once its CSV's temporary file (a hidden file) exists."""
    proc = subprocess.Popen([sys.executable, "-c", SLOW_WRITE, *PARETO, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=ENV)
    deadline = time.monotonic() + 60
    while True:
        tmps = list(tmp_path.rglob(".*csv"))
        if tmps:
            return proc, tmps[0]
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise AssertionError(f"no temporary file appeared: {proc.communicate()}")
        time.sleep(0.02)


@pytest.mark.parametrize("sig,code,line", [(signal.SIGTERM, 143, "error: terminated; nothing was written"),
                                           (signal.SIGHUP, 129, "error: hung up; nothing was written")], ids=["SIGTERM", "SIGHUP"])
def test_a_signal_mid_write_leaves_nothing(tmp_path, sig, code, line):
    # before: SIGTERM killed the process where it stood, leaving .frontier.<random>.tmp.csv/.png behind
    proc, _ = _held_in_the_write(tmp_path, "--out", str(tmp_path / "ds"))
    proc.send_signal(sig)
    stdout, stderr = proc.communicate(timeout=60)
    assert (proc.returncode, stderr.strip(), stdout) == (code, line, "")
    assert list(tmp_path.rglob("*")) == []  # the folder it made for the files went with them


def test_a_sigkill_leaves_a_temporary_file_the_next_write_removes(tmp_path):
    # SIGKILL cannot be caught: its temporary file names its process, and the next run writing to that
    # folder removes it once the process is gone (a figure-less run: no orphaned drawing process)
    csv, html = tmp_path / "f.csv", tmp_path / "r.html"
    proc, tmp = _held_in_the_write(tmp_path, "--csv", str(csv), "--html", str(html))
    proc.kill()
    proc.communicate(timeout=60)
    assert sorted(p.name for p in tmp_path.iterdir()) == [tmp.name] == [f".f.{proc.pid}.llmcs-tmp.csv"]
    r = subprocess.run([sys.executable, "-m", "llm_codesign.cli", *PARETO, "--csv", str(csv), "--html", str(html)],
                       capture_output=True, text=True, env=ENV, timeout=300)
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.csv", "r.html"]


def test_stale_files_of_live_processes_and_other_files_are_kept(tmp_path):
    from llm_codesign import outputs

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True).stdout.strip()
    names = {f".a.{dead}.llmcs-tmp.csv": False, f".b.{os.getppid()}.llmcs-tmp.png": True, f".c.{os.getpid()}.llmcs-tmp": True,
             f".d.{dead}.tmp.csv": True, f"e.{dead}.llmcs-tmp.csv": True}  # name: kept
    for n in names:
        (tmp_path / n).write_text("x")
    (tmp_path / f".f.{dead}.llmcs-tmp.d").mkdir()  # a folder of that name is not ours
    assert outputs.remove_stale(tmp_path) == [tmp_path / f".a.{dead}.llmcs-tmp.csv"]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([n for n, kept in names.items() if kept] + [f".f.{dead}.llmcs-tmp.d"])


def test_a_failed_write_removes_the_folders_it_made(tmp_path):
    from llm_codesign import outputs

    def fails(tmp):
        tmp.write_text("half")
        raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.raises(OSError) as e:
        outputs.write_all([(lambda t: t.write_text("a"), tmp_path / "a" / "b" / "x.csv"), (fails, tmp_path / "a" / "y.csv")])
    assert (e.value.filename, e.value.strerror) == (str(tmp_path / "a" / "y.csv"), "No space left on device")
    assert list(tmp_path.iterdir()) == []


def test_a_signal_after_the_renames_names_what_was_written(tmp_path, monkeypatch):
    from llm_codesign.cli import common

    out = tmp_path / "v.yaml"

    def terminated(**kw):
        raise common.Terminated(signal.SIGTERM)

    monkeypatch.setattr("llm_codesign.cli.export._console", terminated)
    code, _, err = cli("export", "llama-3.1-8b", "--gpu", "h100", "--engine", "vllm", "-o", str(out))
    assert (code, err.strip()) == (143, f"error: terminated after writing {out}") and out.is_file()


# ---- outputs that are inputs or one another: refused before any work, naming both flags

def test_an_output_that_is_an_input_is_refused(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("in.csv").write_text(SERVING)
    Path("link.csv").symlink_to("in.csv")
    os.link("in.csv", "hard.csv")
    # before: calibrate overwrote its own measurements with the profile
    one_line(["calibrate", "--serving", "in.csv", "-o", "./in.csv"],
             "error: output: './in.csv' is not valid; a path other than the --serving input (in.csv), which --output would overwrite")
    one_line(["validate", "--serving", "in.csv", "--out", "link.csv"],
             "error: out: 'link.csv' is not valid; a path other than the --serving input (in.csv), which --out would overwrite")
    one_line(["validate", "--serving", "hard.csv", "--out", "in.csv"],
             "error: out: 'in.csv' is not valid; a path other than the --serving input (hard.csv), which --out would overwrite")
    assert Path("in.csv").read_text() == SERVING
    Path("f.json").write_text(json.dumps({"frontier": []}))
    one_line(["export-point", "f.json", "--index", "0", "-o", "f.json"],
             "error: out: 'f.json' is not valid; a path other than the PATH input (f.json), which --out would overwrite")


def test_two_outputs_on_one_path_are_refused(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    # before: pareto wrote the CSV, then the HTML over it
    one_line([*PARETO, "--csv", "same", "--html", "./same"],
             "error: html: './same' is not valid; a path no other output takes (--csv writes same too)")
    one_line([*PARETO, "--out", "o", "--html", "o/frontier.csv"],
             "error: html: 'o/frontier.csv' is not valid; a path no other output takes (--out writes o/frontier.csv too)")
    assert list(tmp_path.iterdir()) == []


# ---- `-` is standard output where a command writes one text file; errors name the user's path

def test_export_to_standard_output_is_the_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    args = ["export", "llama-3.1-8b", "--gpu", "h100", "--engine", "vllm"]
    code, _, err = cli(*args, "-o", "config.yaml")
    assert code == 0, err
    code, out, err = cli(*args, "-o", "-")
    # before: a file named '-'; now the file's text on stdout, the summary on stderr
    assert (code, out) == (0, Path("config.yaml").read_text()) and "wrote vllm" in err and "standard output" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.yaml"]
    one_line([*args, "-o", "-", "--json"], "error: out: '-' is not valid; a file path with --json (standard output carries the JSON)")


def test_calibrate_and_validate_to_standard_output(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rows = [f"h100_sxm,x,bfloat16,{m},{n},4096,{2 * m * n * 4096 / 600e12 * 1e3:.6f}" for m in (256, 1024, 4096) for n in (4096, 14336)]
    Path("g.csv").write_text("\n".join(["system,trtllm_version,gemm_dtype,m,n,k,latency_ms", *rows]) + "\n")
    code, _, err = cli("calibrate", "--kernels", "g.csv", "-o", "p.toml", "--force")
    assert code == 0, err
    code, out, err = cli("calibrate", "--kernels", "g.csv", "-o", "-", "--force")
    # the profile on stdout, the fit's report on stderr
    assert (code, out) == (0, Path("p.toml").read_text()) and "hopper" in tomllib.loads(out), err
    assert err.splitlines()[0].split() == ["hopper", "gemm", "6", "rows", "median", "APE", "1.7%", "p90", "3.6%"]
    assert err.splitlines()[1] == "wrote standard output"
    Path("s.csv").write_text(SERVING)
    code, out, err = cli("validate", "--serving", "s.csv", "--out", "-")
    lines = out.splitlines()
    # each prediction with its 80% (_lo, _hi) and 95% (_lo95, _hi95, newc11 #13) interval beside it (measure.intervals)
    bounded = ",".join(f"predicted_{m},predicted_{m}_hi,predicted_{m}_hi95,predicted_{m}_lo,predicted_{m}_lo95"
                       for m in ("output_tok_s_per_gpu", "output_tok_s_per_user", "tpot_ms"))
    assert code == 0 and lines[0] == SERVING.splitlines()[0] + ",predicted_fits," + bounded + \
        ",predicted_ttft_ms,predicted_ttft_ms_hi,predicted_ttft_ms_hi95,predicted_ttft_ms_lo,predicted_ttft_ms_lo95" and len(lines) == 2, err
    assert "serving validation" in err and sorted(p.name for p in tmp_path.iterdir()) == ["g.csv", "p.toml", "s.csv"]


def test_design_exports_its_config_to_standard_output(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    args = ["design", "--params", "8e9", "--gpu", "h100", "--gpus", "1", "--max-candidates", "20", "--top", "1"]
    one_line([*args, "--export", "d.png", "--plot", "./d.png"],
             "error: plot: './d.png' is not valid; a path no other output takes (--export writes d.png too)")
    code, out, err = cli(*args, "--export", "-")
    cfg = json.loads(out)  # the config alone on stdout, the designs' table on stderr
    assert code == 0 and cfg["model_type"] == "llama" and err.splitlines()[-1] == "wrote standard output", err
    assert list(tmp_path.iterdir()) == []


def test_binary_and_many_file_outputs_refuse_standard_output():
    line = "is not valid; a file path ('-', standard output, is taken where a command writes one text file)"
    one_line([*PARETO, "--csv", "-"], f"error: csv: '-' {line}")
    one_line(["sweep", "--models", "llama-3.1-8b", "--gpu", "h100", "--gpus", "1", "--out", "-"], f"error: out: '-' {line}")


def test_an_output_that_is_no_regular_file_is_refused_and_a_link_is_kept(tmp_path, monkeypatch):
    # the rename put a regular file in the place of what the path named: as root, `--csv /dev/null` replaced
    # /dev/null itself; a FIFO, or a link to a device, went the same way. A link to a file is followed: its target is
    # written and the link kept (the rename replaced the link)
    monkeypatch.chdir(tmp_path)
    os.mkfifo("fifo")
    Path("null").symlink_to(os.devnull)
    for name in ("fifo", "null"):
        one_line([*PARETO, "--csv", name], f"error: csv: '{name}' is not valid; a regular file's path, not a device, FIFO or socket")
        one_line(["export", "llama-3.1-8b", "--gpu", "h100", "--engine", "vllm", "-o", name],
                 f"error: out: '{name}' is not valid; a regular file's path, not a device, FIFO or socket; '-' is standard output")
    assert Path("null").is_symlink() and not Path("fifo").is_file()
    Path("old.csv").write_text("x\n")
    Path("link.csv").symlink_to("old.csv")
    code, out, err = cli(*PARETO, "--csv", "link.csv")
    assert code == 0 and Path("link.csv").is_symlink() and Path("old.csv").read_text().startswith("model,gpu,")


def test_a_failed_write_names_the_users_path(tmp_path, monkeypatch):
    # before: `/proc/.x.yaml.z6nczm83: No such file or directory`, the hidden temporary file's name
    one_line(["export", "llama-3.1-8b", "--gpu", "h100", "--engine", "vllm", "-o", "/proc/x.yaml"],
             "error: out: '/proc/x.yaml' is not valid; a path in a folder this process may write (No such file or directory)")
    out = tmp_path / "x.yaml"

    def refused(src, dst):  # the rename itself fails (a folder on another file system would)
        raise OSError(errno.EXDEV, "Invalid cross-device link", str(src), str(dst))

    monkeypatch.setattr(os, "replace", refused)
    code, _, err = cli("export", "llama-3.1-8b", "--gpu", "h100", "--engine", "vllm", "-o", str(out))
    assert (code, err.strip()) == (2, f"error: {out}: Invalid cross-device link") and list(tmp_path.iterdir()) == []


# ---- missing folders are created for outputs, only once there is something to write

def test_missing_folders_are_created_for_outputs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    # before: the README's own `pareto --out out/ds` failed in a fresh folder
    code, out, err = cli(*PARETO, "--out", "out/ds", "--json")
    assert code == 0, err
    # frontier.json: --json's answer, which export-point reads (newc10 #12)
    assert sorted(p.name for p in (tmp_path / "out" / "ds").iterdir()) == ["frontier.csv", "frontier.json", "frontier.png", "report.html"]
    assert json.loads((tmp_path / "out" / "ds" / "frontier.json").read_text()) == json.loads(out)
    code, _, err = cli("export", "llama-3.1-8b", "--gpu", "h100", "--engine", "sglang", "-o", "a/b/run.sh")
    assert code == 0 and os.access("a/b/run.sh", os.X_OK), err
    Path("f").write_text("")  # a file where a folder would go: refused, nothing made
    one_line(["export", "llama-3.1-8b", "--gpu", "h100", "--engine", "vllm", "-o", "f/c/x.yaml"],
             f"error: out: 'f/c/x.yaml' is not valid; a path whose folders can be created ({tmp_path / 'f'} is a file)")
