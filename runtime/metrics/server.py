"""Where a worker's metrics are served: ``GET /metrics`` on the REST listener (:func:`metrics_response`), and, when
``metrics.port`` is set, a listener of its own (:class:`MetricsServer`), plain HTTP without authentication, for a
Prometheus that should not hold the REST API's credentials.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from typing import Any
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.exposition import choose_encoder

from headwater.runtime.metrics.collector import worker_registry
from headwater.runtime.worker import Worker
from headwater.sdk.errors import ConnectError

log = logging.getLogger(__name__)


def exposition(registry: CollectorRegistry, accept: str | None = None) -> tuple[bytes, str]:
    """The registry's metrics and their content type: Prometheus's text format, or OpenMetrics when ``accept`` (a
    request's Accept header) asks for it, as ``prometheus_client``'s own server chooses."""
    encode, content_type = choose_encoder(accept or "")
    return encode(registry), content_type


class MetricsServer:
    """Serves ``registry`` at ``host``:``port`` (0: a free one) between :meth:`start` and :meth:`stop`."""

    def __init__(self, registry: CollectorRegistry, host: str, port: int) -> None:
        self.registry = registry
        self.host = host
        self.port = port
        self._server: WSGIServer | None = None
        self._thread: threading.Thread | None = None

    @classmethod
    def from_config(cls, worker: Worker, config: Mapping[str, Any]) -> MetricsServer | None:
        """The listener ``metrics.port`` asks for, not started; ``None`` when it is unset."""
        port = config.get("metrics.port")
        if port is None:
            return None
        return cls(worker_registry(worker), str(config["metrics.host"]), int(port))

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/metrics"

    def start(self) -> None:
        """Bind and serve on a thread of its own; raises ConnectError when the address cannot be bound."""
        try:
            self._server, self._thread = start_http_server(self.port, self.host, self.registry)
        except OSError as error:
            raise ConnectError(
                f"cannot serve metrics at {self.url} (metrics.port, metrics.host): {error.strerror or error}"
            ) from None
        self.port = int(self._server.server_address[1])
        log.info("Prometheus metrics served at %s", self.url)

    def stop(self) -> None:
        """Stop serving; idempotent."""
        server, self._server = self._server, None
        if server is None:
            return
        server.shutdown()
        server.server_close()
        if self._thread is not None:
            self._thread.join(5)

    def __repr__(self) -> str:
        return f"MetricsServer({self.url}, {'serving' if self._server is not None else 'stopped'})"
