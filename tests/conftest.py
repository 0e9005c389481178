"""The test suite's own plugin (database servers, test connectors): see :mod:`support.fixtures`."""

pytest_plugins = ["support.fixtures", "support.unknown_keys"]
