"""The test suite's own plugins: database servers, the wheel and test connectors (:mod:`support.fixtures`), the
SparkSession, S3 server and Spark cluster (:mod:`support.spark_fixtures`), the fast and service tiers and the run's
order (:mod:`support.tiers`)."""

pytest_plugins = ["support.fixtures", "support.spark_fixtures", "support.unknown_keys", "support.tiers"]
