"""The test suite's own plugins: database servers, the wheel and test connectors (:mod:`support.fixtures`), the
fast and service tiers and the run's order (:mod:`support.tiers`)."""

pytest_plugins = ["support.fixtures", "support.unknown_keys", "support.tiers"]
