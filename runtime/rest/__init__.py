"""Kafka Connect's REST API, served by a worker: the application, its server, and the request and response
shapes."""

from headwater.runtime.herder.base import Herder
from headwater.runtime.rest.app import create_app
from headwater.runtime.rest.errors import RestError
from headwater.runtime.rest.server import RestServer

__all__ = ["Herder", "RestError", "RestServer", "create_app"]
