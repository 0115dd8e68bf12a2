"""Re-run the README's ```console examples and write what the CLI prints now (the check is tests/test_docs.py).

    python tools/rerun_readme.py
"""
import os
import re
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COLUMNS = 100  # tests/test_docs.py README_COLUMNS


def main() -> None:
    path = ROOT / "README.md"
    text = path.read_text()
    env = {**os.environ, "COLUMNS": str(COLUMNS)}
    with tempfile.TemporaryDirectory() as work:  # one folder for every block: an import reads what an export wrote

        def rerun(block: re.Match) -> str:
            out = []
            for step in re.split(r"^\$ ", block.group(1), flags=re.M)[1:]:
                cmd = step.split("\n", 1)[0]
                args = shlex.split(cmd)
                r = subprocess.run([sys.executable, "-m", "llm_codesign.cli", *args[1:]], capture_output=True, text=True,
                                   env=env, cwd=work, timeout=300, check=True)
                printed = "\n".join(line.rstrip() for line in r.stdout.rstrip("\n").splitlines())
                out.append(f"$ {cmd}\n{printed}\n")
            return "```console\n" + "".join(out) + "```"

        new = re.sub(r"^```console\n(.*?)^```", rerun, text, flags=re.M | re.S)
    path.write_text(new)
    print("README.md: console examples re-run" + ("" if new != text else " (unchanged)"))


if __name__ == "__main__":
    main()
