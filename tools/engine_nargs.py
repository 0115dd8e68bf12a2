"""The flags that take several words (argparse nargs "+" / "*") in SGLang's and vLLM's own parsers, read from the
unzipped wheels' source text (ast, nothing imported: the engines need torch), for data/engines/NAME.toml `[nargs]`.

    python tools/engine_nargs.py sglang DIR   # DIR holds sglang/ of sglang-0.5.23 (the version sglang.toml names)
    python tools/engine_nargs.py vllm DIR     # DIR holds vllm/ of vllm-0.33.0 (vllm.toml's)

SGLang 0.5.23 registers a namespace field's flag from its type (sglang/srt/arg_groups/arg_utils.py:370-390, a
`List[X]` field without a type_parser gets `nargs=arg_meta.nargs or "+"`; :404-407 a scalar's explicit nargs), or by
hand in ServerArgs.add_cli_args (server_args.py). vLLM 0.33.0 derives each EngineArgs flag's kwargs from its config
class's field type (vllm/engine/arg_utils.py _compute_kwargs:316-432: a dataclass field takes JSON, a bool field is
BooleanOptionalAction, a Literal a choice, and a tuple / list / set field `nargs="+"`, collection_to_kwargs:258), and
add_cli_args names the config field each flag takes (`**compilation_kwargs["cudagraph_capture_sizes"]`)."""
from __future__ import annotations

import ast
import re
import sys
from pathlib import Path


def _parts(annotation: str) -> list[str]:
    """The top-level members of a union annotation (X | Y, Optional[X], Union[X, Y])."""
    a = annotation.strip()
    m = re.fullmatch(r"(?:Optional|Union)\[(.*)\]", a)
    if m:
        a = m.group(1)
    out, depth, cur = [], 0, ""
    for ch in a:
        depth += ch == "["
        depth -= ch == "]"
        if depth == 0 and ch in "|,":
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    return [p for p in (*out, cur.strip()) if p]


def _collection(p: str) -> bool:
    return re.match(r"(list|tuple|set|List|Tuple|Set)(\[|$)", p) is not None


def sglang(root: Path) -> dict[str, str]:
    out = {}
    for f in sorted((root / "sglang/srt/arg_groups/fields").glob("*.py")):
        for node in ast.walk(ast.parse(f.read_text())):
            if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)):
                continue
            ann = node.annotation
            if not (isinstance(ann, ast.Subscript) and ast.unparse(ann.value) == "A"):
                continue
            elts = ann.slice.elts if isinstance(ann.slice, ast.Tuple) else [ann.slice]
            typ, meta = ast.unparse(elts[0]), (elts[1] if len(elts) > 1 else None)
            kw = {k.arg: k.value for k in meta.keywords} if isinstance(meta, ast.Call) and ast.unparse(meta.func) == "Arg" else {}
            if meta is None or (isinstance(meta, ast.Call) and "no_cli" in kw and ast.unparse(kw["no_cli"]) == "True"):
                continue
            nargs = None
            if "nargs" in kw:
                nargs = ast.literal_eval(kw["nargs"])
            elif "action_kwargs" in kw and isinstance(kw["action_kwargs"], ast.Dict):
                d = {ast.literal_eval(k): v for k, v in zip(kw["action_kwargs"].keys, kw["action_kwargs"].values, strict=True)}
                nargs = ast.literal_eval(d["nargs"]) if "nargs" in d else None
            elif "action" not in kw and "type_parser" not in kw and not typ.startswith("Literal"):
                inner = [p for p in _parts(typ) if p != "None"]
                if len(inner) == 1 and _collection(inner[0]):
                    nargs = "+"
            if nargs not in ("+", "*"):
                continue
            cli = ast.literal_eval(kw["cli_name"]) if "cli_name" in kw else "--" + node.target.id.replace("_", "-")
            aliases = ast.literal_eval(kw["aliases"]) if "aliases" in kw else []
            for name in (cli, *aliases):
                if name.startswith("--"):
                    out[name[2:]] = f"{nargs} ({f.relative_to(root)}: {node.target.id})"
    server = root / "sglang/srt/server_args.py"
    for node in ast.walk(ast.parse(server.read_text())):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "add_argument":
            kw = {k.arg: k.value for k in node.keywords if k.arg}
            if "nargs" in kw and isinstance(kw["nargs"], ast.Constant) and kw["nargs"].value in ("+", "*"):
                for a in node.args:
                    if isinstance(a, ast.Constant) and str(a.value).startswith("--"):
                        out[a.value[2:]] = f"{kw['nargs'].value} (sglang/srt/server_args.py:{node.lineno})"
    return out


def vllm(root: Path) -> dict[str, str]:
    classes = {}  # config class -> {field: annotation}
    for f in sorted((root / "vllm/config").glob("*.py")):
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.ClassDef):
                classes[node.name] = ({n.target.id: ast.unparse(n.annotation) for n in node.body
                                       if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)}, f.relative_to(root))
    src = root / "vllm/engine/arg_utils.py"
    tree = ast.parse(src.read_text())
    add = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "add_cli_args")
    kw_class = {}
    for n in ast.walk(add):
        if isinstance(n, ast.Assign) and isinstance(n.value, ast.Call) and ast.unparse(n.value.func) == "get_kwargs":
            kw_class[n.targets[0].id] = ast.unparse(n.value.args[0])
    out = {}
    for n in ast.walk(add):
        if not (isinstance(n, ast.Call) and getattr(n.func, "attr", "") == "add_argument"):
            continue
        names = [a.value for a in n.args if isinstance(a, ast.Constant) and str(a.value).startswith("--")]
        explicit = {k.arg: k.value for k in n.keywords if k.arg}
        spread = [k.value for k in n.keywords if k.arg is None and isinstance(k.value, ast.Subscript)]
        nargs, where = None, None
        if "nargs" in explicit and isinstance(explicit["nargs"], ast.Constant):
            nargs, where = explicit["nargs"].value, f"vllm/engine/arg_utils.py:{n.lineno}"
        elif spread and "type" not in explicit:
            s = spread[0]
            cls, field = kw_class.get(ast.unparse(s.value)), ast.literal_eval(s.slice)
            ann, path = classes.get(cls, ({}, None))[0].get(field), classes.get(cls, ({}, None))[1]
            if ann:
                ann = re.sub(r"^Annotated\[(.*?),.*\]$", r"\1", ann)
                parts = [p for p in _parts(ann) if p != "None"]
                # _compute_kwargs's order: a config dataclass, bool and Literal are read before a collection
                if (not any(p == "bool" or p.startswith("Literal") or re.fullmatch(r"[A-Z]\w*Config", p) for p in parts)
                        and any(_collection(p) for p in parts)):
                    nargs, where = "+", f"{path}: {cls}.{field}: {ann}"
        if nargs in ("+", "*"):
            for name in names:
                out[name[2:]] = f"{nargs} ({where})"
    # `vllm serve`'s own flags: FrontendArgs / BaseFrontendArgs fields through the same get_kwargs, less those whose
    # nargs _customize_cli_kwargs deletes (vllm/entrypoints/common/cli_args.py)
    front = root / "vllm/entrypoints/common/cli_args.py"
    text = front.read_text()
    dropped = set(re.findall(r'del frontend_kwargs\["(\w+)"\]\["nargs"\]', text))
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.ClassDef) and node.name in ("BaseFrontendArgs", "FrontendArgs"):
            for f in node.body:
                if isinstance(f, ast.AnnAssign) and isinstance(f.target, ast.Name) and f.target.id not in dropped:
                    parts = [p for p in _parts(ast.unparse(f.annotation)) if p != "None"]
                    if not any(p == "bool" or p.startswith("Literal") for p in parts) and any(_collection(p) for p in parts):
                        out[f.target.id.replace("_", "-")] = f"+ (vllm/entrypoints/common/cli_args.py:{f.lineno}: {node.name}.{f.target.id})"
    return out


if __name__ == "__main__":
    engine, root = sys.argv[1], Path(sys.argv[2])
    for flag, why in sorted({"sglang": sglang, "vllm": vllm}[engine](root).items()):
        print(f"{flag!r:45} # {why}")
