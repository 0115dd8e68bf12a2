"""A frontier over a range of GPUs (newc6 #20): `pareto --gpus 8-16` was titled "on 16x H200" while its points take 10, 12
or 16 GPUs; the title names the range, a GPUs column gives each point's, and --json says max_gpus (and min_gpus)."""
from __future__ import annotations

import json
import re

from conftest import cli

ARGS = ["pareto", "llama-3.1-70b", "--gpu", "h200", "--weight-dtype", "fp8", "--kv-dtype", "fp8", "--isl", "8192", "--osl", "1024",
        "--min-tps-user", "30"]


def test_a_range_titles_the_range_and_gives_each_points_gpus():
    code, out, err = cli(*ARGS, "--gpus", "8-16")
    assert code == 0, err
    assert "Pareto frontier: llama-3.1-70b on 8-16x H200 SXM, trtllm" in out
    assert re.search(r"plan +GPUs +x +batch", out)
    # TP2 PP5 is one instance of 2 x 5 = 10 GPUs (16 is no multiple of 10: x1); TP4 PP2 is 8 GPUs, x2 = 16
    assert re.search(r"TP2 PP5 +10 +1 ", out) and re.search(r"TP4 PP2 +16 +2 ", out)
    r = json.loads(cli(*ARGS, "--gpus", "8-16", "--json")[1])
    assert (r["num_gpus"], r["max_gpus"], r["min_gpus"]) == (16, 16, 8)
    got = {(p["deployment"]["plan"], p["deployment"]["instance_gpus"] * p["deployment"]["replicas"]) for p in r["frontier"]}
    assert ("TP2 PP5", 10) in got and ("TP4 PP2", 16) in got
    assert all(8 <= n <= 16 for _, n in got)


def test_one_count_keeps_its_title_and_no_gpus_column():
    code, out, err = cli(*ARGS, "--gpus", "8")
    assert code == 0, err
    assert "on 8x H200 SXM, trtllm" in out and not re.search(r"plan +GPUs", out)
    r = json.loads(cli(*ARGS, "--gpus", "8", "--json")[1])
    assert (r["num_gpus"], r["max_gpus"]) == (8, 8) and "min_gpus" not in r
