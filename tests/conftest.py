import json
import os
import subprocess
import sys

import pytest
from hypothesis import settings

from llm_codesign.cost.calibration import calibration_for
from llm_codesign.spec.hardware import get_gpu
from llm_codesign.spec.registry import get_model

# the property tests run a fixed sequence of examples (the same pass or fail every run, in CI and in the
# README's test command); LLM_CODESIGN_HYPOTHESIS_EXPLORE=1 explores new ones
settings.register_profile("fixed", derandomize=True, database=None)
if not os.environ.get("LLM_CODESIGN_HYPOTHESIS_EXPLORE"):
    settings.load_profile("fixed")


def pytest_runtest_setup(item):
    # torch (754 MB) is the measure extra, not the dev one: the tests that measure with it skip without it;
    # .ci/run installs it and runs them (`pytest -m torch`)
    if item.get_closest_marker("torch"):
        pytest.importorskip("torch", reason="the measure extra (torch) is not installed: pip install -e '.[measure]'")


@pytest.fixture(scope="session")
def h100():
    return get_gpu("h100")


@pytest.fixture(scope="session")
def h200():
    return get_gpu("h200")


@pytest.fixture(scope="session")
def b200():
    return get_gpu("b200")


@pytest.fixture(scope="session")
def llama8b():
    return get_model("llama-3.1-8b")


@pytest.fixture(scope="session")
def llama70b():
    return get_model("llama-3.1-70b")


@pytest.fixture(scope="session")
def cal_h100(h100):
    return calibration_for(h100)


ENV = {**os.environ, "COLUMNS": "160"}


def run(*args):
    """The CLI as a user runs it, in a subprocess (exit code, stdout, stderr)."""
    return subprocess.run([sys.executable, "-m", "llm_codesign.cli", *args], capture_output=True, text=True, env=ENV, timeout=300)


def cli(*args: str, columns: int = 2000):
    """The CLI in process, as typer's runner gives it at `columns` (exit code, stdout, stderr); an exception other than
    the exit's is a failure, not an exit code."""
    from typer.testing import CliRunner

    from llm_codesign.cli import app

    r = CliRunner().invoke(app, list(args), env={"COLUMNS": str(columns)})
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        raise AssertionError(f"uncaught {type(r.exception).__name__}: {r.exception}") from r.exception
    return r.exit_code, r.stdout, r.stderr


def cli_ok(*args) -> str:
    """The CLI in process (typer's runner, its own terminal width), arguments as text; its stdout, exit 0 asserted."""
    from typer.testing import CliRunner

    from llm_codesign.cli import app

    r = CliRunner().invoke(app, [str(a) for a in args])
    assert r.exit_code == 0, r.output
    return r.stdout


def plain(x):
    """`x` as JSON reads it back (tuples as lists, other objects as text): what `--json` prints, to compare with."""
    return json.loads(json.dumps(x, default=str))


def disagg_pair(gpu, prec, prefill_plan, decode_plan, *, decode_gpu=None, backend="trtllm", spec=None, max_num_tokens=None):
    """One prefill and one decode instance as serve.disagg.evaluate_disagg takes them (decode on
    `decode_gpu` where given), both with the same precision, engine and step budget."""
    from llm_codesign.spec.plan import Deployment

    one = dict(precision=prec, backend=backend, spec=spec, max_num_tokens=max_num_tokens)
    return (Deployment(gpu=gpu, num_gpus=int(prefill_plan.gpus), plan=prefill_plan, **one),
            Deployment(gpu=decode_gpu or gpu, num_gpus=int(decode_plan.gpus), plan=decode_plan, **one))


def hf_config(tmp_path, name, **shape):
    """A Hugging Face config.json of the shape (llama's fields; qwen3_moe's where experts are given)."""
    cfg = {"model_type": "qwen3_moe" if "num_experts" in shape else "llama", "hidden_size": 4096, "intermediate_size": 14336,
           "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 128256,
           "max_position_embeddings": 131072, "torch_dtype": "bfloat16", **shape}
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(cfg))
    return str(path)
