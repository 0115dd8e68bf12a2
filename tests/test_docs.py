"""The README and docs say what the code does: the CLI reference is generated from the app, the README's
example output is the CLI's, its test command is the one CI runs, and nothing refers outside the repository."""
import ast
import importlib
import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run

import llm_codesign
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


def _doc_pages():
    return [ROOT / "docs" / "tutorial.md", *sorted((ROOT / "docs" / "howto").glob("*.md"))]


def test_every_howto_is_in_the_nav_and_routed_from_the_index():
    nav = (ROOT / "mkdocs.yml").read_text()
    index = (ROOT / "docs" / "index.md").read_text()
    pages = [p.relative_to(ROOT / "docs").as_posix() for p in _doc_pages()]
    assert len(pages) == 7
    assert [p for p in pages if p not in nav] == [] and [p for p in pages if f"({p}" not in index] == []


def _example_pages() -> list[str]:
    """The pages tools/rerun_docs.py runs by default: the README and every docs page with a ```bash or ```console block."""
    spec = importlib.util.spec_from_file_location("rerun_docs", ROOT / "tools" / "rerun_docs.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    return [p.relative_to(ROOT).as_posix() for p in tool.pages()]


DOC_EXAMPLES = _example_pages()


def test_every_page_with_examples_is_run():
    # the reference pages' examples too, not only the guides' (a record of a past experiment is marked, not left out)
    assert {"README.md", "docs/tutorial.md", "docs/guidelines.md", "docs/accuracy.md", "docs/modelling-notes.md"} <= set(DOC_EXAMPLES)
    assert {p.relative_to(ROOT).as_posix() for p in _doc_pages()} <= set(DOC_EXAMPLES)


def _rerun_docs(*args, cwd=ROOT):
    return subprocess.run([sys.executable, str(ROOT / "tools" / "rerun_docs.py"), *args], capture_output=True, text=True,
                          cwd=cwd, timeout=600)


@pytest.mark.parametrize("page", DOC_EXAMPLES)
def test_doc_examples_run_and_show_what_the_cli_prints(page):
    # each page's blocks in order in one fresh folder (tools/rerun_docs.py): every ```bash block exits 0 on the bundled
    # data, and every ```console command prints, at COLUMNS=100, the output the page shows beneath it
    r = _rerun_docs("--check", page)
    assert r.returncode == 0, r.stdout[-6000:] + r.stderr[-3000:] + "\n(regenerate: python tools/rerun_docs.py)"


STALE_PAGE = """Run it:

```bash
echo hello > a.txt
```

```console
$ cat a.txt
stale
$ python3 - <<'EOF'
print("from a heredoc")
EOF
$ echo "  (9 deployments in 0.52 s)" \\
    "done"
  (9 deployments in 0.07 s) done
```

```sh
llm-codesign serve
```
"""


def test_rerun_docs_checks_and_rewrites_a_page(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(STALE_PAGE)
    r = _rerun_docs("--check", str(page), cwd=tmp_path)
    # `cat` shows stale output and the heredoc's is missing; a search's own timing is no answer, and ```sh is not run
    assert r.returncode == 1 and page.read_text() == STALE_PAGE
    assert r.stdout.rstrip("\n").split("\n\n") == [
        "page.md: `cat a.txt` prints other output at COLUMNS=100:\n--- shown\n+++ printed\n@@ -1 +1 @@\n-stale\n+hello",
        "page.md: `python3 - <<'EOF'\nprint(\"from a heredoc\")\nEOF` prints other output at COLUMNS=100:\n"
        "--- shown\n+++ printed\n@@ -0,0 +1 @@\n+from a heredoc"]
    assert _rerun_docs(str(page), cwd=tmp_path).returncode == 0
    assert page.read_text() == STALE_PAGE.replace("stale", "hello").replace("EOF\n$ echo", "EOF\nfrom a heredoc\n$ echo").replace(
        "in 0.07 s) done", "in 0.52 s) done")
    assert _rerun_docs("--check", str(page), cwd=tmp_path).returncode == 0


def test_rerun_docs_refuses_unchecked_output_and_a_failing_command(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("```bash\nllm-codesign --version\n```\n\n```text\nllm-codesign 0.1\n```\n\n"
                    "```console\n$ llm-codesign estimate no-such-model --gpu h100\n```\n\n```console\nno command\n```\n")
    before = page.read_text()
    r = _rerun_docs(str(page), cwd=tmp_path)
    assert r.returncode == 1 and page.read_text() == before  # nothing written
    problems = r.stderr.split("\n\n")
    assert problems[0] == ("page.md: a ```text block follows a ```bash block (line 5): output nothing checks; show it as a "
                           "```console block")
    assert problems[1].startswith("page.md: `llm-codesign estimate no-such-model --gpu h100` exits 2:\n")
    assert problems[-1].strip() == "page.md: a console block starts with output, not a `$ ` command: 'no command'"


def test_rerun_docs_leaves_a_marked_block_and_refuses_a_bare_mark(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("<!-- rerun_docs: not run: a record of a run on a GPU -->\n```bash\nexit 3\n```\n\n"
                    "<!-- rerun_docs: not run: shown as it was -->\n```console\n$ echo now\nthen\n```\n")
    assert _rerun_docs("--check", str(page), cwd=tmp_path).returncode == 0
    page.write_text("<!-- rerun_docs: not run -->\n```bash\nexit 3\n```\n\n<!-- rerun_docs: not run: no block -->\ntext\n")
    r = _rerun_docs("--check", str(page), cwd=tmp_path)
    assert r.returncode == 1 and r.stdout.rstrip("\n").split("\n\n")[:2] == [
        "page.md: line 1: `<!-- rerun_docs: not run: REASON -->` needs its reason and a ```bash or ```console block on the next line",
        "page.md: line 6: `<!-- rerun_docs: not run: REASON -->` needs its reason and a ```bash or ```console block on the next line"]


def test_api_reference_lists_every_module():
    # docs/api.md renders each module's docstrings (mkdocstrings); the CLI has its own reference
    tracked = subprocess.run(["git", "ls-files", "src/llm_codesign/*.py"], capture_output=True, text=True, cwd=ROOT, check=True).stdout.split()
    modules = {p[len("src/"):-len(".py")].replace("/", ".") for p in tracked if not p.endswith(("__init__.py", "__main__.py"))}
    listed = set(re.findall(r"^::: (\S+)", (ROOT / "docs" / "api.md").read_text(), re.M))
    missing = sorted(m for m in modules if m not in listed and not m.startswith("llm_codesign.cli."))
    assert not missing, f"add to docs/api.md: {missing}"


def _api_entries() -> list[tuple[str, str]]:
    """docs/api.md's `::: module` entries, each with its `members:` option ('' where none is given)."""
    entries = []
    for line in (ROOT / "docs" / "api.md").read_text().splitlines():
        if line.startswith("::: "):
            entries.append([line[4:].strip(), ""])
        elif entries and line.strip().startswith("members:") and line.startswith("    "):
            entries[-1][1] = line.split(":", 1)[1].strip()
    return [(m, members) for m, members in entries]


def _bound_by_import(module: str) -> set[str]:
    """The names a module's source binds by importing them (what mkdocstrings renders again where __all__ lists them)."""
    path = ROOT / "src" / Path(*module.split("."))
    source = (path / "__init__.py" if path.is_dir() else path.with_suffix(".py")).read_text()
    return {(a.asname or a.name).split(".")[0] for node in ast.walk(ast.parse(source)) if isinstance(node, (ast.Import, ast.ImportFrom))
            for a in node.names}


def test_api_reference_lists_each_object_once():
    # mkdocstrings renders what a module's __all__ re-exports as well as what it defines: a module that re-exports
    # is listed with `members: false` or with the members it defines, so each object appears once, where it is defined
    entries = _api_entries()
    names = [m for m, _ in entries]
    assert sorted({m for m in names if names.count(m) > 1}) == []
    for module, members in entries:
        imported = _bound_by_import(module)
        if members == "false":
            continue
        if members:
            listed = [s.strip() for s in members.strip("[]").split(",")]
            assert [n for n in listed if n in imported] == [], f"{module}: a listed member is defined elsewhere"
            mod = importlib.import_module(module)
            assert [n for n in listed if not hasattr(mod, n)] == [], module
        else:
            exported = set(getattr(importlib.import_module(module), "__all__", ()))
            assert sorted(exported & imported) == [], f"{module} re-exports these: give it `members:` in docs/api.md"
    # every public name is routed to its one entry from the public API's table
    api = (ROOT / "docs" / "api.md").read_text()
    linked = set(re.findall(r"\[`(\w+)`\]\[llm_codesign[.\w]*\]", api))
    assert sorted(set(llm_codesign.__all__) - {"__version__"} - linked) == []


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


def test_cli_reference_shows_no_empty_default():
    """An option whose default is the empty string rendered as an empty code span (`--decode-moe-a2a`'s, `` in the
    default column); such an option defaults to None and its help says the default."""
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "docs" / "cli.md").read_text()
    assert "| `` |" not in text
    row = next(line for line in text.splitlines() if line.startswith("| `--decode-moe-a2a` |"))
    assert row.startswith("| `--decode-moe-a2a` | str |  | ") and row.endswith("Default: the engine's own. |")


def test_design_howto_prose_quotes_the_run_above_it():
    """design-a-shape.md's bullets quote the first search's caption and gain band: each quote must be what that run
    printed (newcomer review item 13: the envelope bullet once named 153.6 / 102.4 beside a run showing 195 / 130)."""
    text = (ROOT / "docs" / "howto" / "design-a-shape.md").read_text()
    run_ = " ".join(re.search(r"```console\n(.*?)```", text, re.S).group(1).split())
    prose = " ".join(text.split("```", 2)[2].split("```")[0].split())
    aspect = re.search(r"\(aspect ratio at most [^)]*\)", prose).group(0)
    gain = re.search(r"`(\+[\d.]+% \(80% [^`]*\))` on the `design 1 vs` line", prose).group(1)
    assert aspect in run_ and gain in run_, (aspect, gain)
    assert "err ±" in run_


def test_tutorial_prose_quotes_the_run_above_it():
    """The tutorial's reading of its first estimate names rows and factors that answer prints (newc12 #13: it named an
    `interval basis` row the answer splits into `basis: TTFT` and `basis: TPOT, ...`, and x1.17/x1.58 beside a run printing
    x1.07/x1.26); tools/rerun_docs.py regenerates the run, this keeps the prose to it."""
    text = (ROOT / "docs" / "tutorial.md").read_text()
    run_ = re.search(r"```console\n(.*?)```", text, re.S).group(1)
    prose = " ".join(text.split("Read it top to bottom:", 1)[1].split("Change one thing", 1)[0].split())
    rows = {line.split("│")[1].strip() for line in run_.splitlines() if line.startswith("│") and line.split("│")[1].strip()}
    flat = " ".join(run_.split())
    factors = re.findall(r"x[\d.]+/x[\d.]+ at 80/95%", prose)
    names = re.findall(r"`(basis: [^`]*)`", prose)
    assert factors and names
    assert all(f in flat for f in factors) and all(n in rows for n in names), (factors, names, rows)


def test_concepts_arrival_figures_are_the_models():
    """docs/concepts.md's arrival entry quotes two TTFTs by hand (llama-3.1-70b, 8x H200, SGLang, 128 requests, the
    default lengths): recomputed here, each to the millisecond the page rounds it to, so a change that moves them fails."""
    from typer.testing import CliRunner

    from llm_codesign.cli import app

    text = " ".join((ROOT / "docs" / "concepts.md").read_text().split())
    m = re.search(r"Llama-3\.1-70B on 8x H200 at 128 requests, SGLang: (\d+) ms in waves, (\d+) ms in a closed loop", text)
    assert m, "concepts.md's arrival figures moved: update this test's pattern with them"
    got = []
    for arrival in ("waves", "closed_loop"):
        r = CliRunner().invoke(app, ["estimate", "llama-3.1-70b", "--gpu", "h200", "--gpus", "8", "--backend", "sglang",
                                     "--concurrency", "128", "--arrival", arrival, "--json"])
        assert r.exit_code == 0, r.output
        got.append(round(json.loads(r.stdout)["ttft_ms"]))
    assert got == [int(m[1]), int(m[2])] == [4594, 126]


def _doc_anchors(page: Path) -> set[str]:
    """The anchors a docs page defines: `{#id}`, `<span id="id">` and each heading's slug (lower case, punctuation
    dropped, spaces to hyphens, as MkDocs' toc makes them)."""
    text = page.read_text()
    ids = set(re.findall(r"\{#([\w-]+)\}", text)) | set(re.findall(r"\bid=\"([\w-]+)\"", text))
    for head in re.findall(r"^#+[ \t]+(.+)$", text, flags=re.M):
        ids.add(re.sub(r"[^\w\- ]", "", re.sub(r"\{#[^}]*\}", "", head).strip().lower()).replace(" ", "-"))
    return ids


def test_every_docs_anchor_the_source_cites_exists():
    # a citation `docs/<page>.md#id` (and the `, #id` that follow it) in src/ names an anchor its page defines; a citation
    # broken over two lines at a hyphen ("docs/modelling-\n    notes.md#id") is read joined (crev12 #7: #sglang-front-end,
    # #leftD pointed nowhere)
    anchors = {p.relative_to(ROOT).as_posix(): _doc_anchors(p) for p in (ROOT / "docs").rglob("*.md")}
    cited, dead = 0, []
    for f in sorted((ROOT / "src").rglob("*")):
        if f.suffix not in (".py", ".toml", ".js", ".html"):
            continue
        text = re.sub(r"-\n[ \t]*(?:#[ \t]*)?", "-", f.read_text())
        for m in re.finditer(r"(docs/[\w./-]+\.md)#([\w-]+)((?:,[ \t]*#[\w-]+)*)", text):
            for anchor in (m[2], *re.findall(r"#([\w-]+)", m[3])):
                cited += 1
                if anchor not in anchors.get(m[1], ()):
                    dead.append(f"{f.relative_to(ROOT)}: {m[1]}#{anchor}")
    assert cited > 60 and not dead, dead


def test_concepts_whole_prompt_sawtooth_is_the_models():
    """docs/concepts.md's waves entry quotes TensorRT-LLM's sawtooth in ISL (fixN5c, newc12 #9): Llama-3.1-70B TP8 on H200,
    32 requests of 288 out, four 2,000-token prompts a step (8,000 tokens) against three 2,200-token ones (6,600): the
    shorter step gives the longer prompt the earlier first token; chunked, the order is the prompts'. Recomputed to the
    millisecond the page rounds to."""
    import numpy as np

    import llm_codesign as lc

    text = " ".join((ROOT / "docs" / "concepts.md").read_text().split())
    m = re.search(r"an earlier first token, (\d+) vs (\d+) ms; chunked, it rises, (\d+) vs (\d+)[.)]", text)
    assert m, "concepts.md's sawtooth figures moved: update this test's pattern with them"
    got = []
    for chunked in (None, True):
        dep = lc.deployment("llama-3.1-70b", gpu="h200", tp=8, **({} if chunked is None else {"chunked_prefill": True}))
        for isl in (2000, 2200):
            t = lc.evaluate("llama-3.1-70b", dep, lc.Workload(isl=isl, osl=288, concurrency=32)).ttft_s
            got.append(round(float(np.ravel(t)[0]) * 1e3))
    assert got == [int(x) for x in m.groups()] and got[0] > got[1] and got[2] < got[3]
