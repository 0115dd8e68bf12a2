"""`bench` measures kernels in the kernel tables' columns; here on the CPU, which checks the whole path:
shapes, timing, the CSV, and `validate --kernels` on it. The tests that measure are marked `torch`: they
need the measure extra and skip without it (.ci/run installs it and runs them with `pytest -m torch`)."""
import csv
import json
import sys

import pytest
from conftest import run

from llm_codesign.errors import InputError
from llm_codesign.measure.bench import DECODE_COLUMNS, GEMM_COLUMNS, bench_decode, bench_gemm, linear_shapes, system_for
from llm_codesign.measure.kernel_tables import detect
from llm_codesign.spec.registry import get_model


def test_system_from_cuda_device_names():
    assert system_for("NVIDIA H100 80GB HBM3", None) == "h100"
    assert system_for("NVIDIA H200", None) == "h200"
    assert system_for("NVIDIA B200", None) == "b200"
    assert system_for("NVIDIA GB200", None) == "gb200"
    assert system_for("anything", "h100_sxm") == "h100"
    # boards the catalog does not hold are not guessed from a sibling's specs
    for name in ("NVIDIA H100 PCIe", "NVIDIA H100 NVL", "Tesla T4"):
        with pytest.raises(InputError, match="--system"):
            system_for(name, None)
    with pytest.raises(InputError, match="system"):
        system_for(None, None)  # the CPU


def test_linear_shapes_of_a_model_at_tp():
    # Llama-3.1-8B at TP2: QKV (4096 + 2 x 1024) / 2, O 4096 <- 2048, gate_up 2 x 14336 / 2, down
    # 4096 <- 7168, LM head 128256 / 2
    assert linear_shapes(get_model("llama-3.1-8b"), 2) == sorted(
        {(3072, 4096), (4096, 2048), (14336, 4096), (4096, 7168), (64128, 4096)})


@pytest.mark.torch
def test_bench_gemm_round_trips_through_validate(tmp_path):
    out = tmp_path / "gemm.csv"
    r = run("bench", "gemm", "-o", str(out), "--system", "h100", "--device", "cpu", "--m", "1,16", "--nk", "128x256", "--repeat", "2")
    assert r.returncode == 0, r.stderr
    rows = list(csv.DictReader(out.open()))
    assert tuple(rows[0]) == GEMM_COLUMNS and detect(rows[0]) == "gemm"
    assert [(int(x["m"]), int(x["n"]), int(x["k"])) for x in rows] == [(1, 128, 256), (16, 128, 256)]
    assert all(float(x["latency_ms"]) > 0 and x["system"] == "h100" for x in rows)
    v = json.loads(run("validate", "--kernels", str(out), "--json").stdout)
    assert v["kind"] == "gemm" and v["modeled"] == 2


@pytest.mark.torch
def test_bench_decode_from_a_model(tmp_path):
    out = tmp_path / "decode.csv"
    r = run("bench", "decode", "-o", str(out), "--system", "b200", "--device", "cpu", "--model", "llama-3.1-8b", "--tp", "4",
            "--batch", "2", "--context", "64,128", "--repeat", "2")
    assert r.returncode == 0, r.stderr
    rows = list(csv.DictReader(out.open()))
    assert tuple(rows[0]) == DECODE_COLUMNS and detect(rows[0]) == "decode_attention"
    # 32 query and 8 KV heads of 128 split over TP4
    assert {(x["num_heads"], x["num_key_value_heads"], x["head_dim"]) for x in rows} == {("8", "2", "128")}
    assert [int(x["isl"]) for x in rows] == [64, 128]


@pytest.mark.parametrize("args,needle", [
    (("bench", "gemm", "--device", "cpu", "--m", "1", "--nk", "64x64"), "system"),
    (("bench", "gemm", "--device", "cpu", "--system", "h100", "--dtype", "fp8", "--m", "16", "--nk", "64x64"), "dtype"),
    (("bench", "gemm", "--device", "cpu", "--system", "h100", "--nk", "64x"), "nk"),
    (("bench", "gemm", "--device", "cpu", "--system", "h100", "--m", "0"), "m"),
    (("bench", "decode", "--device", "cpu", "--system", "h100", "--heads", "8", "--kv-heads", "3"), "kv_heads"),
    (("bench", "attention", "--system", "h100"), "kind"),
    (("bench", "gemm", "--device", "tpu", "--system", "h100"), "device"),
])
def test_bench_bad_input_is_one_line_and_writes_nothing(tmp_path, args, needle):
    out = tmp_path / "x.csv"
    r = run(*args, "-o", str(out))
    lines = [x for x in r.stderr.splitlines() if x.strip()]
    assert r.returncode == 2 and len(lines) == 1 and needle in lines[0] and "Traceback" not in r.stderr
    assert not out.exists() and not list(tmp_path.iterdir())


def test_bench_checks_the_output_folder_before_measuring():
    # a missing folder is created when the rows are written (outputs.write_all); one no process may create is refused first
    r = run("bench", "gemm", "--device", "cpu", "--system", "h100", "--m", "1", "--nk", "64x64", "-o", "/proc/no/x.csv")
    assert r.returncode == 2 and r.stderr.strip() == ("error: out: '/proc/no/x.csv' is not valid; a path in a folder this process may "
                                                      "write (No such file or directory)")


@pytest.mark.parametrize("call,field", [
    (lambda: bench_gemm([1], [(64, 64)], "bfloat16", "cpu", None), "system"),
    (lambda: bench_gemm([16], [(64, 64)], "fp8", "cpu", "h100"), "dtype"),
    (lambda: bench_gemm([1], [(64, 64)], "bfloat16", "tpu", "h100"), "device"),
    (lambda: bench_gemm([10**6], [(10**6, 10**6)], "bfloat16", "cpu", "h100"), "nk"),  # 4 TB
    (lambda: bench_decode([10**6], [10**6], 32, kv_heads=8, head_dim=128, device="cpu", system="h100"), "batch"),
], ids=["cpu without --system", "fp8 on the cpu", "no such device", "gemm too large", "decode too large"])
def test_bad_input_on_the_cpu_is_refused_without_torch(monkeypatch, call, field):
    # the measure extra absent (None in sys.modules makes `import torch` fail): the input's own error, not "install torch"
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(InputError) as e:
        call()
    assert e.value.field == field
