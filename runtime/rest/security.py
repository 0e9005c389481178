"""What protects a worker's REST API, read from the worker config at start-up: TLS for an ``https://`` listener,
an authenticator, and the request body limit; and a warning when the API is open to the network."""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from starlette.types import ASGIApp

from headwater.runtime.config.listeners import ADMIN_LISTENERS, LISTENER_CONFIG, is_https
from headwater.runtime.rest.auth import Authenticator, configured_authenticator
from headwater.runtime.rest.guard import RequestGuard
from headwater.runtime.rest.tls import TlsSettings
from headwater.sdk.errors import ConfigError

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RestSecurity:
    """The REST listener's protections; :meth:`from_config` checks every file at once."""

    tls: TlsSettings | None = None
    authenticator: Authenticator | None = None
    max_body_bytes: int = LISTENER_CONFIG.keys["rest.request.body.max.bytes"].default

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> RestSecurity:
        """The protections a parsed worker config asks for; ConfigError naming the key of a missing, unreadable or
        invalid file."""
        listener = config["listeners"][0]
        if is_https(listener):
            tls = TlsSettings.from_config(config)
        else:
            tls = None
            unused = [
                key.name
                for key in LISTENER_CONFIG
                if key.name.startswith("listeners.https.") and config.get(key.name) not in (None, "", key.default)
            ]
            if unused:
                raise ConfigError(
                    unused[0],
                    "[hidden]" if "password" in unused[0] else config[unused[0]],
                    f"TLS settings are given but the listener {listener} is not https://; use an https:// listener "
                    f"or remove {', '.join(unused)}",
                )
        admin = config.get(ADMIN_LISTENERS)
        if admin and [str(url).strip() for url in admin] != [str(url).strip() for url in config["listeners"]]:
            raise ConfigError(
                ADMIN_LISTENERS,
                ",".join(admin),
                "Headwater serves the admin endpoints on the listener of listeners or nowhere: leave this unset, "
                "empty (no admin endpoints) or equal to listeners",
            )
        return cls(tls, configured_authenticator(config), int(config["rest.request.body.max.bytes"]))

    @property
    def authenticates(self) -> bool:
        """Whether every request must come from an authenticated client (a password, a token, a certificate)."""
        return self.authenticator is not None or (self.tls is not None and self.tls.clients_verified)

    def wrap(self, app: ASGIApp) -> RequestGuard:
        """``app`` behind the authenticator and the body limit."""
        return RequestGuard(app, self.authenticator, self.max_body_bytes)

    def warn_if_open(self, host: str) -> None:
        """Log a warning when a listener on ``host`` can be reached from other machines without TLS or without
        authentication."""
        if is_loopback(host):
            return
        missing = [
            what for what, there in (("TLS", self.tls is not None), ("authentication", self.authenticates)) if not there
        ]
        if missing:
            log.warning(
                "the REST API listens on %s, reachable from other machines, without %s: anyone who can reach it can "
                "read connector configs and create connectors (see listeners.https.ssl.* and "
                "rest.auth.basic.credentials.file)",
                host,
                " or ".join(missing),
            )


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address or a name) is the loopback interface only."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
