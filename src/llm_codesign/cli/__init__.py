"""The command line (Typer): `app` holds every command, `main` is the console entry point.

Importing `commands` registers the core commands and, through it, those of `accuracy`, `design`
and `disagg` on the one app defined in `common`.
"""
from llm_codesign.cli.commands import app, main

__all__ = ["app", "main"]
