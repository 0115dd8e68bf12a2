"""`llm-codesign serve`: the local page (llm_codesign.web) on a uvicorn server."""
from __future__ import annotations

import typer

from llm_codesign.cli.common import app
from llm_codesign.errors import InputError, MissingExtra

LOOPBACK = ("127.0.0.1", "localhost", "::1")


def _check_bind(host: str, port: int) -> None:
    """One line before uvicorn starts when the address cannot be bound (port in use, not this machine's)."""
    import socket

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as e:
        raise InputError("host", host, f"an address of this machine ({e.strerror})") from None
    family, _, _, _, addr = infos[0]
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds: a port in TIME_WAIT is free
        try:
            s.bind(addr)
        except OSError as e:
            raise InputError("port", port, f"a port free on {host} ({e.strerror})") from None


def allowed_hosts(host: str, extra: list[str]) -> list[str]:
    """The Host headers the page answers: the name it is bound to (and the loopback names where
    loopback reaches it: a loopback or a wildcard address), and the `--allowed-host` names; `*` in
    those answers any (DNS rebinding: another site's page reaching the API through a name it controls)."""
    wildcard = host in ("0.0.0.0", "::")
    return list(dict.fromkeys([host, *(LOOPBACK if host in LOOPBACK or wildcard else ()), *extra]))


@app.command()
def serve(
    host: str = typer.Option("127.0.0.1", "--host", help="Address to bind; the default answers this machine only."),
    port: int = typer.Option(8000, "--port", min=1, max=65535, help="TCP port."),
    allowed_host: list[str] = typer.Option([], "--allowed-host", help="A Host header to answer besides the bound name "
                                           "(repeatable; '*' answers any: DNS rebinding can then reach the API)."),
    hub_cache: bool = typer.Option(False, "--hub-cache", help="Models the registry lacks may be Hugging Face ids already in "
                                   "the local Hugging Face cache (read from it alone, never downloaded)."),
    # web.app's MAX_BUSY and TIME_BUDGET_S (not imported here: the CLI starts without the web module)
    max_busy: int = typer.Option(3, "--max-busy", min=1, max=64, help="Searches (frontier, design, estimate, disagg) at once; "
                                 "one more is answered 429 with Retry-After."),
    time_budget: float = typer.Option(60.0, "--time-budget", min=1, max=3600,
                                      help="Seconds a search may run before it is stopped (503)."),
):
    """The whole tool on one local page: the frontier, a point's operators, any plan priced, lint, design (extra `serve`)."""
    try:
        import uvicorn

        from llm_codesign.web.app import create_app
    except ImportError as e:
        raise MissingExtra("serve", getattr(e, "name", None) or "fastapi", "`llm-codesign serve`") from None
    _check_bind(host, port)
    hosts = allowed_hosts(host, allowed_host)
    typer.echo(f"llm-codesign: http://{'[' + host + ']' if ':' in host else host}:{port}/  (Ctrl-C stops it)", err=True)
    try:
        uvicorn.run(create_app(allowed_hosts=hosts, hub_cache=hub_cache, max_busy=max_busy, time_budget_s=time_budget),
                    host=host, port=port, log_level="warning")
    except SystemExit as e:  # uvicorn exits 1 when it cannot bind (port in use, address not ours)
        if e.code:
            raise InputError("port", port, f"a free port on {host} (uvicorn could not bind it)") from None
        raise
