"""Error handling for both task loops and the transforms (KIP-298): retries and tolerance (:mod:`.tolerance`, Kafka
Connect's ``RetryWithToleranceOperator``) and the sink's dead-letter queue (:mod:`.dead_letter`), which it reports to
through the :class:`~.tolerance.ErrorReporter` protocol."""
