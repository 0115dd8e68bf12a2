"""One error type for bad input: the CLI prints its message as one line and exits 2."""
from __future__ import annotations


class InputError(ValueError):
    """Bad user input. The message names the field, the value and what would be valid."""

    def __init__(self, field: str, value: object, valid: str):
        self.field, self.value, self.valid = field, value, valid
        super().__init__(f"{field}: {value!r} is not valid; {valid}")


class UnsupportedModelError(InputError):
    """A model feature the cost model cannot represent (e.g. Mamba blocks)."""


def read_toml(path: str, field: str, what: str) -> dict:
    """A user's TOML file as a dict, or one InputError naming the field (missing file, bad TOML)."""
    import tomllib
    from pathlib import Path

    p = Path(path)
    if not p.is_file():
        raise InputError(field, path, f"a path to {what} .toml")
    try:
        return tomllib.loads(p.read_text())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise InputError(field, path, f"valid TOML ({e})") from None
