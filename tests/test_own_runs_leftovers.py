"""The first hour's leftovers (n7b): compare's --kv-dtype, as pareto's and estimate's."""
import json

from conftest import cli


def test_compare_takes_a_kv_dtype_for_every_row():
    # `compare ... --kv-dtype fp8` was refused ("No such option"); the BF16 checkpoint's row kept its BF16 KV cache
    code, out, _ = cli("compare", "llama-3.3-70b", "--gpu", "h200", "--kv-dtype", "fp8", "--json")
    assert code == 0
    rows = json.loads(out)["rows"]
    assert [(r["precision"], r["best"]["deployment"]["kv_dtype"]) for r in rows] == [
        ("W:bf16 A:bf16 KV:fp8", "fp8"), ("W:fp8 A:fp8 KV:fp8", "fp8")]


def test_compare_refuses_a_kv_dtype_it_does_not_know_in_one_line():
    code, out, err = cli("compare", "llama-3.3-70b", "--gpu", "h200", "--kv-dtype", "fp3")
    assert code == 2 and out == ""
    assert err == "error: kv_dtype: 'fp3' is not valid; one of: bf16, fp16, fp8, fp8_block, nvfp4, mxfp4, int4\n"
