"""A writer and a reader for the small YAML subset the exports use: block mappings and lists nested by
two-space indentation, with JSON scalars (double-quoted strings, numbers, true/false/null) and JSON flow
values. Every file it writes is plain YAML that any YAML parser reads; it reads back what it writes,
so the core needs no YAML library."""
from __future__ import annotations

import json

from llm_codesign.errors import InputError, parse_nested


def dump(obj, indent: int = 0) -> str:
    """Block YAML for dicts, lists and JSON scalars (strings always quoted, so no value reads as another type)."""
    pad = " " * indent
    out = []
    if isinstance(obj, dict):
        for k, v in obj.items():
            key = k if _plain_key(k) else json.dumps(k)
            if isinstance(v, (dict, list)) and v:
                out.append(f"{pad}{key}:\n{dump(v, indent + 2)}")
            else:
                out.append(f"{pad}{key}: {_scalar(v)}")
    elif isinstance(obj, list):
        for v in obj:
            if isinstance(v, dict) and v:
                body = dump(v, indent + 2).lstrip()
                out.append(f"{pad}- {body}")
            elif isinstance(v, list) and v:
                out.append(f"{pad}-\n{dump(v, indent + 2)}")
            else:
                out.append(f"{pad}- {_scalar(v)}")
    else:
        out.append(pad + _scalar(obj))
    return "\n".join(out)


def _plain_key(k: str) -> bool:
    return bool(k) and all(c.isalnum() or c in "-_./" for c in k) and not k[0].isdigit()


def _scalar(v) -> str:
    if isinstance(v, (dict, list)):
        return json.dumps(v)  # empty containers, or flow values
    return json.dumps(v)


def load(text: str, origin: str = "export"):
    """Parse what `dump` writes (comments and blank lines ignored); `origin` names the file in errors."""
    return parse_nested(_load, text, "export", origin)  # nesting by indentation or in flow values, bounded


def _load(text: str):
    lines = []
    for raw in text.splitlines():
        s = raw.split(" #", 1)[0] if not raw.lstrip().startswith("#") else ""
        if s.strip():
            lines.append((len(s) - len(s.lstrip(" ")), s.strip()))
    if not lines:
        return {}
    obj, i = _block(lines, 0, lines[0][0])
    if i != len(lines):
        raise InputError("export", lines[i][1], "YAML written by `llm-codesign export`")
    return obj


def _value(s: str):
    try:
        return json.loads(s)
    except ValueError:
        return s  # an unquoted string


def _split_key(s: str):
    if s.startswith('"'):
        key, end = json.JSONDecoder().raw_decode(s)
        return key, s[end:].lstrip()[1:].strip()
    k, _, rest = s.partition(":")
    return k.strip(), rest.strip()


def _is_pair(s: str) -> bool:
    """`key: value` (a mapping entry) rather than a scalar list item."""
    if s.startswith('"'):
        try:
            _, end = json.JSONDecoder().raw_decode(s)
        except ValueError:
            return False
        return s[end:].lstrip().startswith(":")
    return ":" in s and not s.startswith(("{", "["))


def _block(lines, i, ind):
    if lines[i][1].startswith("- ") or lines[i][1] == "-":
        out = []
        while i < len(lines) and lines[i][0] == ind and (lines[i][1].startswith("- ") or lines[i][1] == "-"):
            rest = lines[i][1][1:].strip()
            if not rest:
                v, i = _block(lines, i + 1, lines[i + 1][0])
                out.append(v)
            elif _is_pair(rest):
                # a mapping starting on the dash line: re-read it at the dash's indentation + 2
                lines[i] = (ind + 2, rest)
                v, i = _block(lines, i, ind + 2)
                out.append(v)
            else:
                out.append(_value(rest))
                i += 1
        return out, i
    out = {}
    while i < len(lines) and lines[i][0] == ind and not lines[i][1].startswith("- "):
        k, rest = _split_key(lines[i][1])
        if rest:
            out[k] = _value(rest)
            i += 1
        elif i + 1 < len(lines) and lines[i + 1][0] > ind or (i + 1 < len(lines) and lines[i + 1][0] == ind and lines[i + 1][1].startswith("- ")):
            out[k], i = _block(lines, i + 1, lines[i + 1][0])
        else:
            out[k] = None
            i += 1
    return out, i
