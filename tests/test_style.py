"""Code structure (issue 19): no function in src/llm_codesign takes more than five positional
parameters (the rest are keyword-only), runs past 60 lines, or is called with a bare True/False
as a positional argument. Exempt: the Typer commands in cli/ (their parameters are the command's
options) and web/app.py's create_app (it holds the routes as closures)."""
import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "llm_codesign"
MAX_POSITIONAL, MAX_LINES = 5, 60

# calls whose positional booleans are not flags of this project's functions (typer, dict, list, matplotlib)
BOOL_OK = {"Option", "get", "pop", "count", "grid", "getattr", "set_blocking"}  # set_blocking takes no keywords


def _functions():
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield rel, node


def _exempt(rel: str, node) -> bool:
    typer_command = rel.startswith("cli/") and any(
        isinstance(d, ast.Call) and isinstance(d.func, ast.Attribute) and d.func.attr in ("command", "callback") for d in node.decorator_list)
    return typer_command or (rel, node.name) == ("web/app.py", "create_app")


def _positional(node) -> int:
    return len(node.args.posonlyargs) + len(node.args.args)


def _lines(node) -> int:
    return node.end_lineno - node.lineno + 1


def _over(measure, limit: int) -> list[str]:
    return sorted(f"{rel} {n.name}: {measure(n)}" for rel, n in _functions() if not _exempt(rel, n) and measure(n) > limit)


def test_functions_take_at_most_five_positional_parameters():
    over = _over(_positional, MAX_POSITIONAL)
    assert not over, "make the parameters past the fifth keyword-only (`*`) and name them at every call: " + "; ".join(over)


def test_functions_are_at_most_sixty_lines():
    over = _over(_lines, MAX_LINES)
    assert not over, "split into well-named helpers: " + "; ".join(over)


def test_no_bare_boolean_is_passed_positionally():
    bad = []
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and any(isinstance(a, ast.Constant) and isinstance(a.value, bool) for a in node.args):
                f = node.func
                name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
                if name not in BOOL_OK:
                    bad.append(f"{path.relative_to(SRC).as_posix()}:{node.lineno} {ast.unparse(node)[:80]}")
    assert not bad, "name the flag (f(x, flag=True)): " + "; ".join(bad)


def test_the_rules_catch_what_they_are_for():
    # the checks themselves: a six-parameter function, a 61-line one and a bare True are seen
    six = ast.parse("def f(a, b, c, d, e, g):\n    pass").body[0]
    long = ast.parse("def f():\n" + "    x = 1\n" * 60).body[0]
    assert _positional(six) == 6 > MAX_POSITIONAL and _lines(long) == 61 > MAX_LINES
    kw = ast.parse("def f(a, b, c, d, e, *, g):\n    pass").body[0]
    assert _positional(kw) == 5
    call = ast.parse("f(x, True)").body[0].value
    assert any(isinstance(a, ast.Constant) and a.value is True for a in call.args)


def _names(tree) -> set[str]:
    """Every variable, parameter, function and attribute name bound or read in `tree`."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            out.add(node.id)
        elif isinstance(node, ast.arg):
            out.add(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, ast.Attribute):
            out.add(node.attr)
    return out


def test_mtp_means_multi_token_prediction_only():
    # issue 37: `mtp` named MoE tensor parallelism in ~30 lines and DeepSeek's multi-token prediction in
    # others; MoE-TP is `moe_tp` everywhere (the speculative method keeps "mtp", a string, and mtp_*)
    bad = sorted(str(p.relative_to(SRC)) for p in SRC.rglob("*.py") if "mtp" in _names(ast.parse(p.read_text())))
    assert not bad, "call MoE tensor parallelism moe_tp: " + ", ".join(bad)
    assert "mtp" in _names(ast.parse("tp, pp, ep, mtp = sizes"))  # the check sees an unpacked name


def test_no_merge_conflict_markers_are_left_in_text_files():
    # a conflict resolved in the code but not in a doc once shipped both sides of a table (docs/accuracy.md)
    root = SRC.parents[1]
    found = []
    for path in (*root.glob("*.md"), *(root / "docs").rglob("*.md"), *(root / "src").rglob("*.py"), *(root / "src").rglob("*.toml"),
                 *(root / "tests").rglob("*.py"), *(root / "benchmarks").rglob("*.py"), *(root / "tools").rglob("*.py")):
        for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if line.startswith(("<" * 7 + " ", ">" * 7 + " ")) or line == "=" * 7:
                found.append(f"{path.relative_to(root)}:{n}")
    assert found == []
