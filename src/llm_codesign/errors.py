"""One error type for bad input: the CLI prints its message as one line and exits 2. And the checks
every reader of a user's file shares: UTF-8 with or without a byte-order mark, nesting bounded."""
from __future__ import annotations

from typing import Callable

# Levels of lists and tables a user's JSON or TOML file may nest. The files read here nest 4 at most (a
# Hugging Face config.json's rope_scaling, a GPU TOML's [tiles] shapes); json and tomllib recurse once
# per level and fail near Python's recursion limit (1000) with a RecursionError, not an answer.
MAX_NESTING = 64


class Spelled(str):
    """A name read through an alias (`--kv-dtype fp4` is nvfp4): equal to, hashed and printed as the name it was read as,
    and remembering what the user typed, so an error quotes the user's spelling: "'fp4' (read as nvfp4)"."""

    typed: str

    def __new__(cls, name: str, typed: str):
        s = super().__new__(cls, name)
        s.typed = typed
        return s

    def __reduce__(self):  # pickles (the API's worker pool) as itself
        return (Spelled, (str(self), self.typed))


# the longest repr an error quotes whole: one line, not a dump (newc12 #7: lc.evaluate(m, [d, d]) quoted 4,432 characters);
# a text the user typed, a file's path most often, whole up to MAX_QUOTED_TEXT
MAX_QUOTED, MAX_QUOTED_TEXT = 80, 256


def _named(value: object) -> str:
    """A value too long to quote, by its type: "a list of 2 Deployment", "a dict of 3 items", "a Deployment", or a long text's
    start and length."""
    if isinstance(value, str):
        return f"{value[:60]!r}... ({len(value):,} characters)"
    if isinstance(value, (list, tuple, set, frozenset, dict)):
        kinds = {type(v).__name__ for v in value}
        return f"a {type(value).__name__} of {len(value):,} " + (kinds.pop() if len(kinds) == 1 else f"item{'s' if len(value) != 1 else ''}")
    return f"a {type(value).__name__}"


def quoted(value: object) -> str:
    """`value` as an error quotes it: repr (a longer one by its type, _named), and for a Spelled name read through an alias,
    what was typed and what it was read as."""
    if not isinstance(value, Spelled):
        r = repr(value)
        return r if len(r) <= (MAX_QUOTED_TEXT if isinstance(value, str) else MAX_QUOTED) else _named(value)
    same = str(value.typed).strip().lower() == str(value)
    return repr(str(value)) if same else f"{str(value.typed)!r} (read as {str(value)})"


class InputError(ValueError):
    """Bad user input. The message names the field, the value (as the user spelled it: quoted) and what would be
    valid."""

    def __init__(self, field: str, value: object, valid: str):
        self.field, self.value, self.valid = field, value, valid
        super().__init__(f"{field}: {quoted(value)} is not valid; {valid}")


class MissingInput(InputError):
    """A value the input lacks: `field: missing; what to give` (`model: missing; this trtllm configuration names no model:
    give --model ...`), not "no value is not valid", which read as if a value had been given."""

    def __init__(self, field: str, valid: str, *, word: str = "missing"):
        self.field, self.value, self.valid = field, None, valid
        ValueError.__init__(self, f"{field}: {word}; {valid}")


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


def read_text(path: str, field: str, valid: str) -> str:
    """A user's text file, UTF-8 with or without a byte-order mark, or one InputError naming the field.
    A regular file only: a device or a FIFO is read forever (`mix --lengths /dev/zero` filled the memory,
    a FIFO hung), a folder not at all."""
    from pathlib import Path

    p = Path(path)
    if not p.is_file():
        raise InputError(field, path, f"{valid} (an existing file)")
    try:
        return p.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as e:
        raise InputError(field, path, f"{valid} in UTF-8 ({e.reason} at byte {e.start})") from None


def check_output_path(field: str, path, *, folder: bool = False) -> None:
    """An output path refused in one line where it names nothing (`--out ""` wrote nothing and exited 0) or where writing
    it would create folders far from any that exists (`--csv /nonexistent/dir/x.csv` made /nonexistent/dir at the
    filesystem root). The file's own folder (with `folder`, the folder itself) is created where its parent exists; a
    path inside the working folder, relative or absolute, creates every folder it names (the README's `pareto --out
    out/gpus`). A leading ~ is refused: quoted, nothing expands it."""
    from pathlib import Path

    if not str(path).strip():
        raise InputError(field, str(path), "a path (an empty one names no file)")
    if str(path).startswith("~"):  # quoted, no shell expands it: `-o '~/new/x.yaml'` made a folder named "~"
        raise InputError(field, str(path), "a path without a leading ~ (no shell expanded it: write $HOME/... or an absolute path)")
    p = Path(path)
    # compared resolved: `$PWD/a/b/x.csv` is `a/b/x.csv`'s place, and `a/../../x` names the folders it reaches, not `a`
    own = (p if folder else p.parent).resolve()
    if own.exists() or own.parent.exists() or own.is_relative_to(Path.cwd().resolve()):
        return
    top = own
    while not top.parent.exists() and top.parent != top:
        top = top.parent
    raise InputError(field, str(path), f"a path whose folder, or the folder above it, exists ({top} does not: create it first)")


def check_header(names, field: str, value: object, what: str) -> None:
    """A CSV header naming a column twice is one InputError: csv.DictReader keeps the last column of a name, and
    dropped the other in silence (a second ttft_ms read instead of the first)."""
    twice = sorted({n for n in names or () if list(names).count(n) > 1})
    if twice:
        raise InputError(field, value, f"{what}, whose header names each column once ({twice[0]!r} is named twice)")


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


def close_matches(word: str, names, *, n: int = 3, cutoff: float = 0.6) -> list[str]:
    """The names most like `word` for a "did you mean", best first, case-insensitive: those that begin
    with it or that it begins with (`max-ttft` -> `max-ttft-ms`, `h100-80gb` -> `h100`), then difflib's closest at a ratio of at least `cutoff` (below it a
    suggestion is noise: `batch` and `backend` share 0.5). Empty where nothing is close."""
    import difflib

    w = str(word).strip().lower()
    by_key = {}
    for name in names:
        by_key.setdefault(str(name).lower(), str(name))
    if not w:
        return []
    prefixed = sorted((k for k in by_key if min(len(w), len(k)) >= 3 and k != w and (k.startswith(w) or w.startswith(k))),
                      key=lambda k: abs(len(k) - len(w)))
    close = difflib.get_close_matches(w, list(by_key), n=n, cutoff=cutoff)
    return [by_key[k] for k in dict.fromkeys(prefixed + close)][:n]


def did_you_mean(near: list[str]) -> str:
    """'did you mean A, B or C? ' for the close names `near` (close_matches), '' for none."""
    if not near:
        return ""
    return "did you mean " + (near[0] if len(near) == 1 else ", ".join(near[:-1]) + " or " + near[-1]) + "? "


class MissingExtra(InputError):
    """A command whose optional dependencies are not installed: names the extra and the pip line."""

    def __init__(self, extra: str, module: str, what: str):
        self.field, self.value, self.valid = extra, module, f"pip install 'llm-codesign[{extra}]'"
        ValueError.__init__(self, f"{what} needs the {extra} extra ({module} is not installed): pip install 'llm-codesign[{extra}]'")
