"""The package's layers: imports point down only, and no module imports itself back through others.

Read with `ast` (every import, module-level or inside a function), so a lazy import cannot hide an
upward dependency."""
import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "src" / "llm_codesign"
# lower number = lower layer (DESIGN.md, "Layers"); a module may import its own layer or below
LAYER = {"errors": 0, "outputs": 0, "spec": 1, "cost": 2, "serve": 3, "explore": 4, "measure": 4, "api": 5, "render": 5, "web": 6, "cli": 6,
         "__init__": 7, "__main__": 7}


def _module(path: Path, root: Path = PKG) -> str:
    rel = path.relative_to(root).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__" and len(parts) > 1:
        parts = parts[:-1]
    return ".".join(["llm_codesign", *parts])


def _imports(path: Path, root: Path = PKG) -> set[str]:
    mod = _module(path, root)
    pkg = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.startswith("llm_codesign")}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(pkg.split(".")[: len(pkg.split(".")) - node.level + 1] + ([base] if base else []))
            if base.startswith("llm_codesign"):
                out.add(base)
                out |= {f"{base}.{a.name}" for a in node.names}  # `from pkg import module`
    return out


MODULES = {_module(p): p for p in PKG.rglob("*.py")}
GRAPH = {m: {i for i in _imports(p) if i in MODULES and i != m} for m, p in MODULES.items()}


def _layer(mod: str) -> int:
    parts = mod.split(".")
    return LAYER["__init__"] if len(parts) == 1 else LAYER[parts[1]]


def test_every_top_level_name_has_a_layer():
    assert {m.split(".")[1] for m in MODULES if "." in m} <= set(LAYER)


@pytest.mark.parametrize("mod", sorted(MODULES))
def test_imports_point_down(mod):
    up = sorted(i for i in GRAPH[mod] if _layer(i) > _layer(mod) and not i.startswith(mod + "."))
    assert not up, f"{mod} imports upward: {up}"


def test_no_import_cycle():
    # a package's __init__ re-exporting its own modules is not a cycle of logic; drop package nodes
    graph = {m: {i for i in deps if MODULES[i].name != "__init__.py"} for m, deps in GRAPH.items() if MODULES[m].name != "__init__.py"}
    state, cycle = {}, []

    def visit(m, stack):
        state[m] = 1
        for d in sorted(graph.get(m, ())):
            if state.get(d) == 1:
                cycle.append(stack[stack.index(d):] + [d])
            elif d not in state:
                visit(d, stack + [d])
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])
    assert not cycle, f"import cycles: {cycle[:3]}"


def test_the_checker_sees_upward_and_relative_imports(tmp_path):
    # the checker itself can fail: a lazy absolute import and a relative one, both upward from spec/
    (tmp_path / "spec").mkdir()
    probe = tmp_path / "spec" / "probe.py"
    probe.write_text("from ..cost import ops\n\ndef f():\n    from llm_codesign.cli import app\n")
    found = _imports(probe, tmp_path)
    assert {"llm_codesign.cli", "llm_codesign.cost.ops"} <= found
    assert all(_layer(i) > _layer("llm_codesign.spec.probe") for i in found)


def test_every_module_has_its_own_test_file():
    """Tests mirror the package: tests/test_<module>.py for every module (topic files such as
    test_properties.py or test_fuzz.py come on top). The command-line modules are thin adapters
    tested through the command line itself (test_cli*.py, test_bad_input.py, test_fuzz.py), and
    the package __init__ files re-export (test_api.py holds the public API)."""
    tests = {p.stem for p in (PKG.parents[1] / "tests").glob("test_*.py")}
    missing = sorted(str(p.relative_to(PKG)) for p in PKG.rglob("*.py")
                     if p.name not in ("__init__.py", "__main__.py") and p.parent.name != "cli" and f"test_{p.stem}" not in tests)
    assert not missing, f"modules without a test file of their own: {missing}"
