"""Logging: logger levels changed at runtime (:mod:`.loggers`, KIP-495), the connector and task context of each log
line (:mod:`.context`), and hiding secret values in every log record (:mod:`.scrubber`)."""
