"""Re-run the examples of the README and the docs pages and write what the CLI prints now; `--check` says where a
page differs instead (tests/test_docs.py runs it on every page).

    python tools/rerun_docs.py                      # rewrite every page's ```console outputs
    python tools/rerun_docs.py --check [PAGE ...]   # exit 1 naming each command whose output a page shows stale

The pages: the README and every page under docs/ with a ```bash or ```console block. A page's blocks run in order
in one fresh folder (an import reads what an export wrote), at COLUMNS=100: ```bash blocks as scripts that must
exit 0, their output not shown; in a ```console block each `$ ` command (with its `\\` continuation lines and any
heredoc body) must exit 0 and its standard output, trailing blanks aside, is the text beneath it. ```sh and other
blocks are shown only (they need a GPU, a server or the network). A ```bash or ```console block right after a line
`<!-- rerun_docs: not run: REASON -->` is shown only too (a record of a past experiment, or minutes of CPU: the
reason says which); such a line with no reason, or before no such block, is refused. A ```text block right after a
```bash block is output that nothing checks, and is refused: show it as a ```console block.
"""
import argparse
import difflib
import itertools
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COLUMNS = 100
FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.M | re.S)
HEREDOC = re.compile(r"<<-?\s*'?\"?(\w+)")
# a search prints how long it took ("2,200 deployments in 0.07 s"): that figure, and the centring it moves, is no answer
TIMING = re.compile(r"(?<= in )\d[\d.,]* s\)")


def _lines(output: str) -> list[str]:
    return [TIMING.sub("# s)", line).strip() if TIMING.search(line) else line.rstrip() for line in output.splitlines()]


# a line that keeps the ```bash or ```console block right after it from running, with the reason
NOT_RUN = re.compile(r"^<!-- rerun_docs: not run(?::\s*(.*?))?\s*-->\n", re.M)


def pages() -> list[Path]:
    """The README and every docs page with an example the tool runs (a ```bash or ```console block)."""
    docs = [p for p in sorted((ROOT / "docs").rglob("*.md")) if re.search(r"^```(bash|console)$", p.read_text(), re.M)]
    return [ROOT / "README.md", *docs]


def _steps(block: str) -> list[tuple[str, str]]:
    """A console block's (command, shown output) pairs; a command runs on past a trailing `\\` and through a heredoc."""
    lines, steps, i = block.splitlines(), [], 0
    while i < len(lines):
        if not lines[i].startswith("$ "):
            raise ValueError(f"a console block starts with output, not a `$ ` command: {lines[i]!r}")
        cmd = [lines[i][2:]]
        i += 1
        while cmd[-1].endswith("\\") and i < len(lines):
            cmd.append(lines[i])
            i += 1
        if m := HEREDOC.search("\n".join(cmd)):
            while i < len(lines) and cmd[-1] != m[1]:
                cmd.append(lines[i])
                i += 1
        out = []
        while i < len(lines) and not lines[i].startswith("$ "):
            out.append(lines[i])
            i += 1
        steps.append(("\n".join(cmd), "\n".join(out)))
    return steps


def _shell(script: str, work: Path, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", "set -e\nset -o pipefail\n" + script], capture_output=True, text=True, env=env,
                          cwd=work, timeout=600)


def rerun(page: Path) -> tuple[str, list[str], list[str]]:
    """The page with every console block's output as the CLI prints it now; what failed; each output it shows stale."""
    text = page.read_text()
    name = page.relative_to(ROOT).as_posix() if page.is_relative_to(ROOT) else page.name
    failed, stale = [], []
    blocks = list(FENCE.finditer(text))
    for before, block in itertools.pairwise(blocks):
        if before[1] == "bash" and block[1] == "text" and not text[before.end():block.start()].strip():
            failed.append(f"{name}: a ```text block follows a ```bash block (line {text[:block.start()].count(chr(10)) + 1}): "
                          "output nothing checks; show it as a ```console block")
    not_run = set()  # the blocks' starts
    for m in NOT_RUN.finditer(text):
        block = next((b for b in blocks if b.start() == m.end() and b[1] in ("bash", "console")), None)
        if block is None or not m[1]:
            failed.append(f"{name}: line {text[:m.start()].count(chr(10)) + 1}: `<!-- rerun_docs: not run: REASON -->` needs "
                          "its reason and a ```bash or ```console block on the next line")
        else:
            not_run.add(block.start())
    with tempfile.TemporaryDirectory() as tmp:
        work, shims = Path(tmp) / "work", Path(tmp) / "bin"
        work.mkdir()
        shims.mkdir()
        # `llm-codesign` and `python3` are this interpreter's, installed or not
        for shim, argv in (("llm-codesign", f'"{sys.executable}" -m llm_codesign.cli'), ("python3", f'"{sys.executable}"')):
            (shims / shim).write_text(f'#!/bin/sh\nexec {argv} "$@"\n')
            (shims / shim).chmod(0o755)
        env = {**os.environ, "PATH": f"{shims}{os.pathsep}{os.environ['PATH']}", "COLUMNS": str(COLUMNS), "MPLBACKEND": "Agg"}

        def run_block(block: re.Match) -> str:
            kind, body = block[1], block[2]
            if block.start() in not_run:
                return block[0]
            if kind == "bash":
                r = _shell(body, work, env)
                if r.returncode:
                    failed.append(f"{name}: this ```bash block exits {r.returncode}:\n{body}{r.stderr[-3000:]}")
                return block[0]
            if kind != "console":
                return block[0]
            try:
                steps = _steps(body)
            except ValueError as e:
                failed.append(f"{name}: {e}")
                return block[0]
            out = []
            for cmd, shown in steps:
                r = _shell(cmd, work, env)
                if r.returncode:
                    failed.append(f"{name}: `{cmd}` exits {r.returncode}:\n{r.stderr[-3000:]}")
                printed = "\n".join(line.rstrip() for line in r.stdout.rstrip("\n").splitlines())
                if _lines(printed) != _lines(shown):
                    diff = difflib.unified_diff(shown.splitlines(), printed.splitlines(), "shown", "printed", lineterm="")
                    stale.append(f"{name}: `{cmd}` prints other output at COLUMNS={COLUMNS}:\n" + "\n".join(diff))
                out.append(f"$ {cmd}\n" + (printed + "\n" if printed else ""))
            return "```console\n" + "".join(out) + "```"

        new = FENCE.sub(run_block, text)
    return new, failed, stale


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 naming each stale output")
    parser.add_argument("pages", nargs="*", type=Path, help="the pages (default: the README and every docs page with examples)")
    args = parser.parse_args(argv)
    results = {page: rerun(page.resolve()) for page in (args.pages or pages())}
    failed = [p for _, f, _ in results.values() for p in f]
    if args.check:
        problems = failed + [p for _, _, s in results.values() for p in s]
        print("\n\n".join(problems))
        return 1 if problems else 0
    if failed:  # nothing written: the pages are rewritten only from commands that all ran
        print("\n\n".join(failed), file=sys.stderr)
        return 1
    for page, (new, _, _) in results.items():
        changed = new != page.read_text()
        if changed:
            page.write_text(new)
        print(f"{page.name}: examples re-run" + ("" if changed else " (unchanged)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
