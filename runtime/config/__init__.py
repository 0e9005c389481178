"""Configuration rules: every key the worker and its connectors read, what a value may be, and what is refused.

- the keys: :mod:`.worker` (every worker's, a standalone worker's), :mod:`.distributed_worker`, :mod:`.connector`
  (every connector's, a source's, a sink's, and how a worker and a connector config combine for a task),
  :mod:`.listeners` (REST and metrics listeners), :mod:`.error_keys`, :mod:`.transform_keys`,
  :mod:`.topic_creation` (KIP-158), :mod:`.exactly_once_support` (KIP-618), :mod:`.sink_topics`;
- what a connector may not set: :mod:`.known_keys` (unknown and not implemented keys), :mod:`.clients` and
  :mod:`.override_policy` (client overrides, KIP-458), :mod:`.unsafe_settings`, :mod:`.names`;
- where values come from: :mod:`.properties` (properties files), :mod:`.providers` and :mod:`.references` (config
  providers and ``${...}`` references, KIP-297), :mod:`.secrets` (which values are secret, and hiding them).

Validating a whole connector config against all of these is the herders' (:mod:`headwater.runtime.herder.validation`),
as in Kafka Connect's ``AbstractHerder``: it also needs the connector's class and its transforms.
"""
