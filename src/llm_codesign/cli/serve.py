"""`llm-codesign serve`: the local page (llm_codesign.web) on a uvicorn server."""
from __future__ import annotations

import typer

from llm_codesign.cli.common import app
from llm_codesign.errors import InputError

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


@app.command()
def serve(
    host: str = typer.Option("127.0.0.1", "--host", help="Address to bind; the default answers this machine only."),
    port: int = typer.Option(8000, "--port", min=1, max=65535, help="TCP port."),
):
    """The whole tool on one local page: the frontier, a point's operators, lint, design (extra `serve`)."""
    try:
        import uvicorn

        from llm_codesign.web.app import create_app
    except ImportError as e:
        raise InputError("serve", getattr(e, "name", None) or "fastapi", "the serve extra: pip install 'llm-codesign[serve]'") from None
    _check_bind(host, port)
    # bound to loopback, answer loopback Host headers only (no DNS rebinding from another site's page)
    hosts = [*LOOPBACK, f"[{host}]" if ":" in host else host] if host in LOOPBACK else None
    typer.echo(f"llm-codesign: http://{'[' + host + ']' if ':' in host else host}:{port}/  (Ctrl-C stops it)", err=True)
    try:
        uvicorn.run(create_app(allowed_hosts=hosts), host=host, port=port, log_level="warning")
    except SystemExit as e:  # uvicorn exits 1 when it cannot bind (port in use, address not ours)
        if e.code:
            raise InputError("port", port, f"a free port on {host} (uvicorn could not bind it)") from None
        raise
