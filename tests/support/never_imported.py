"""A module no test imports: the connector-class policy tests check that a refused request did not import it."""

from headwater.sdk import SourceConnector

IMPORTED = True


class NeverImported(SourceConnector):  # pragma: no cover - never instantiated
    pass
