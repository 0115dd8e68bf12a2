"""One error type for bad input: the CLI prints its message as one line and exits 2. And the checks
every reader of a user's file shares: UTF-8 with or without a byte-order mark, nesting bounded."""
from __future__ import annotations

from typing import Callable

# Levels of lists and tables a user's JSON or TOML file may nest. The files read here nest 4 at most (a
# Hugging Face config.json's rope_scaling, a GPU TOML's [tiles] shapes); json and tomllib recurse once
# per level and fail near Python's recursion limit (1000) with a RecursionError, not an answer.
MAX_NESTING = 64


class InputError(ValueError):
    """Bad user input. The message names the field, the value and what would be valid."""

    def __init__(self, field: str, value: object, valid: str):
        self.field, self.value, self.valid = field, value, valid
        super().__init__(f"{field}: {value!r} is not valid; {valid}")


class UnsupportedModelError(InputError):
    """A model feature the cost model cannot represent (e.g. Mamba blocks)."""


def _too_deep(doc: object) -> bool:
    """Whether dicts and lists in `doc` nest more than MAX_NESTING levels (walked with a stack: no recursion)."""
    stack = [(doc, 1)]
    while stack:
        obj, depth = stack.pop()
        items = obj.values() if isinstance(obj, dict) else obj if isinstance(obj, list) else None
        if items is None:
            continue
        if depth > MAX_NESTING:
            return True
        stack.extend((v, depth + 1) for v in items)
    return False


def parse_nested(parse: Callable[[str], object], text: str, field: str, value: object):
    """`parse(text)` (json.loads, tomllib.loads, ...), refused as one InputError when the document nests
    deeper than MAX_NESTING levels; the parser's own errors (bad JSON, bad TOML) pass to the caller."""
    try:
        doc = parse(text)
        deep = _too_deep(doc)
    except RecursionError:
        deep = True
    if deep:
        raise InputError(field, value, f"a file whose arrays and tables nest at most {MAX_NESTING} levels deep")
    return doc


def read_toml(path: str, field: str, what: str) -> dict:
    """A user's TOML file as a dict, or one InputError naming the field (missing file, bad TOML)."""
    import tomllib
    from pathlib import Path

    p = Path(path)
    if not p.is_file():
        raise InputError(field, path, f"a path to {what} .toml")
    try:
        return parse_nested(tomllib.loads, p.read_text(encoding="utf-8-sig"), field, path)
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise InputError(field, path, f"valid TOML ({e})") from None
