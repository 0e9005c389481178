"""The REST server: uvicorn serving the REST application on a thread of its own, on a socket bound before it
starts, so a busy port fails :meth:`RestServer.start` at once and port 0 gives a free port whose number is known.
TLS, authentication and the body limit come from :class:`~headwater.runtime.rest.security.RestSecurity`.
"""

from __future__ import annotations

import logging
import socket
import threading
import time

import uvicorn
from fastapi import FastAPI

from headwater.runtime.rest.client_certificate import TlsScopeProtocol
from headwater.runtime.rest.security import RestSecurity
from headwater.sdk.errors import ConnectError

log = logging.getLogger(__name__)


class RestServer:
    """Serves ``app`` at ``host``:``port`` (port 0: a free one) between :meth:`start` and :meth:`stop`, behind
    ``security`` (by default: plain HTTP, no authentication, the default body limit)."""

    def __init__(
        self, app: FastAPI, host: str = "127.0.0.1", port: int = 8083, security: RestSecurity | None = None
    ) -> None:
        self.app = app
        self.host = host
        self.port = port
        self.security = security or RestSecurity()
        tls = self.security.tls.uvicorn_options() if self.security.tls else {}
        config = uvicorn.Config(
            self.security.wrap(app),
            log_config=None,
            access_log=False,
            lifespan="off",
            ws="none",
            http=TlsScopeProtocol,  # h11, with the client certificate in the scope (ASGI TLS extension)
            timeout_graceful_shutdown=5,
            **tls,
        )
        self._server = uvicorn.Server(config)
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        scheme = "https" if self.security.tls else "http"
        return f"{scheme}://{host}:{self.port}"

    def start(self, timeout_s: float = 10.0) -> None:
        """Bind the socket and serve on a new thread; return once the server accepts requests. Raises ConnectError
        when the address cannot be bound or the server does not start within ``timeout_s``."""
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((self.host, self.port))
        except OSError as error:
            sock.close()
            raise ConnectError(f"cannot listen for REST requests on {self.url}: {error.strerror or error}") from None
        self.port = sock.getsockname()[1]
        self._thread = threading.Thread(target=self._serve, args=(sock,), name="rest-server", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + timeout_s
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise ConnectError(f"the REST server at {self.url} did not start within {timeout_s} s")
            time.sleep(0.01)
        log.info("REST API listening on %s", self.url)
        self.security.warn_if_open(self.host)

    def _serve(self, sock: socket.socket) -> None:
        try:
            self._server.run(sockets=[sock])
        finally:
            sock.close()

    def stop(self, timeout_s: float = 10.0) -> None:
        """Stop accepting requests, finish those in progress (a bounded time) and end the thread. Idempotent."""
        thread, self._thread = self._thread, None
        if thread is None:
            return
        self._server.should_exit = True
        thread.join(timeout_s)
        if thread.is_alive():
            log.warning("the REST server at %s did not stop within %.1f s", self.url, timeout_s)

    def __repr__(self) -> str:
        state = "serving" if self._thread is not None else "stopped"
        return f"RestServer({self.url}, {state})"
