"""The command line (Typer): `app` holds every command, `main` is the console entry point.

Importing `commands` registers the core commands and, through it, those of `accuracy`, `design`
and `disagg` on the one app defined in `common`. Both names are imported on first use, so that
`main` forks the figure's process (render.plot.start_early) before the commands' imports.
"""
from __future__ import annotations

import gc
import sys

__all__ = ["app", "main"]


def main() -> None:
    """The console entry point (`llm-codesign`, `python -m llm_codesign.cli`)."""
    from llm_codesign.render.plot import drop_early, start_early

    start_early(sys.argv[1:])
    try:
        from llm_codesign.cli.commands import main as run

        run()
    finally:
        drop_early()
        # the interpreter's last collections walk every object the command left (a quarter of a second
        # after the main job on two vCPUs); frozen, the collector skips them (the exit frees the memory)
        gc.freeze()


def __getattr__(name: str):
    if name == "app":
        from llm_codesign.cli.commands import app

        return app
    raise AttributeError(f"module 'llm_codesign.cli' has no attribute {name!r}")
