"""The README and docs say what the code does: the CLI reference is generated from the app, the README's
example output is the CLI's, its test command is the one CI runs, and nothing refers outside the repository."""
import json
import re
import subprocess
import sys
from pathlib import Path

from conftest import run

from llm_codesign import __version__

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def test_cli_reference_is_current():
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "gen_cli_docs.py"), "--check"], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr + " (regenerate: python tools/gen_cli_docs.py)"


def test_readme_is_a_short_guide_with_the_ci_test_command():
    lines = README.splitlines()
    assert len(lines) <= 150
    assert "## Python API" in lines
    # CI runs exactly the README's test command, and pytest -q (no second -q in addopts) prints its summary line
    test_cmd = next(line for line in lines if "pytest" in line and line.startswith("python3 -m venv"))
    assert test_cmd in (ROOT / ".ci" / "run").read_text().splitlines()
    assert "addopts" not in (ROOT / "pyproject.toml").read_text()


def test_readme_estimate_output_is_the_clis():
    block = README.split("```console\n$ ", 1)[1].split("```", 1)[0]
    cmd, shown = block.split("\n", 1)
    args = cmd.split()[1:]
    assert args[0] == "estimate"
    d = json.loads(run(*args, "--json").stdout)

    def shown_value(label):
        m = re.search(rf"│ {re.escape(label)}\s+│\s+([\d.]+)", shown)
        assert m, label
        return m[1]

    assert shown_value("TTFT") == f"{d['ttft_ms']:.1f}"
    assert shown_value("TPOT") == f"{d['tpot_ms']:.2f}"
    assert shown_value("output tokens/s per GPU") == f"{d['output_tok_s_per_gpu']:.1f}"


def test_api_reference_lists_every_module():
    # docs/api.md renders each module's docstrings (mkdocstrings); the CLI has its own reference
    tracked = subprocess.run(["git", "ls-files", "src/llm_codesign/*.py"], capture_output=True, text=True, cwd=ROOT, check=True).stdout.split()
    modules = {p[len("src/"):-len(".py")].replace("/", ".") for p in tracked if not p.endswith(("__init__.py", "__main__.py"))}
    listed = set(re.findall(r"^::: (\S+)", (ROOT / "docs" / "api.md").read_text(), re.M))
    missing = sorted(m for m in modules if m not in listed and not m.startswith("llm_codesign.cli."))
    assert not missing, f"add to docs/api.md: {missing}"


def test_version():
    r = run("--version")
    assert r.returncode == 0 and r.stdout.strip() == f"llm-codesign {__version__}"


def test_nothing_refers_outside_the_repository():
    # the data commands, tests and docs use ships in the package (data/measurements); tools take their inputs as arguments
    outside = re.compile(r"\.\./" + "shared|" + r"parents\[2\]\s*/\s*\"" + "shared")
    files = subprocess.run(["git", "ls-files", "*.py", "*.md", "*.toml", "*.yml", ".ci/run"], capture_output=True, text=True,
                           cwd=ROOT, check=True).stdout.split()
    hits = [f for f in files if (ROOT / f).is_file() and outside.search((ROOT / f).read_text(errors="replace"))]
    assert not hits
