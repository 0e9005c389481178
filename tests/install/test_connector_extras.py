"""Each reference connector's extra gives that connector, on its own: in a venv with the core and that extra only
(``pip install 'headwater[jdbc-cdc]'``), every module of the connector imports, the runtime finds it by its entry
point, and Kafka Connect's config validation (what ``PUT /connector-plugins/<class>/config/validate`` answers)
passes a valid config and names the bad key of an invalid one."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from support.venvs import SERVER_STACK, TEST_TOOLS, Venvs


@dataclass(frozen=True)
class ExtraCase:
    """What to check of one extra: ``valid`` and ``invalid`` connector configs (``{dir}`` stands for a scratch
    directory), the key ``invalid`` gets wrong, and ``also``, code that needs the extra's own libraries."""

    package: str
    valid: dict[str, str]
    invalid: dict[str, str]
    bad_key: str
    also: str = ""
    setup: str = ""
    distributions: set[str] = field(default_factory=set)


CASES = {
    "kafka-mirror": ExtraCase(
        package="headwater.reference_connectors.kafka_mirror",
        valid={
            "source.bootstrap.servers": "source-1:9092",
            "source.topic.whitelist": "orders",
            "source.group.id": "kafka-connect",
        },
        # librdkafka itself (confluent-kafka) refuses it
        invalid={"source.fetch.min.bytes": "lots"},
        bad_key="source.fetch.min.bytes",
        distributions={"confluent-kafka"},
    ),
    "jdbc-cdc": ExtraCase(
        package="headwater.reference_connectors.jdbc_cdc",
        valid={"connection.url": "sqlite:///{dir}/shop.db"},
        invalid={"capture.mode": "binlog"},
        bad_key="capture.mode",
        setup="import sqlite3\nsqlite3.connect(f'{dir}/shop.db').close()\n",
        # SQLAlchemy loads each URL's driver (psycopg2, pymysql) as it makes an engine, without connecting
        also=(
            "import sqlalchemy\n"
            "for url in ('postgresql+psycopg2://cdc@127.0.0.1:9/shop', 'mysql+pymysql://cdc@127.0.0.1:9/shop'):\n"
            "    sqlalchemy.create_engine(url).dispose()\n"
        ),
        distributions={"sqlalchemy", "psycopg2-binary", "pymysql"},
    ),
    "spark-sink": ExtraCase(
        package="headwater.reference_connectors.spark_sink",
        valid={"topics": "orders", "table.path": "{dir}/orders"},
        invalid={"table.format": "iceberg"},
        bad_key="table.format",
        # Delta's jar is chosen by the installed pyspark's and delta-spark's versions
        also=(
            "from headwater.reference_connectors.spark_sink.packages import delta_package\n"
            "assert delta_package().startswith('io.delta:delta-spark_'), delta_package()\n"
        ),
        distributions={"pyspark", "delta-spark", "pyarrow", "confluent-kafka"},
    ),
}

CHECK = """
import importlib, json, pkgutil, sys
from headwater.runtime.herder.validation import validate_connector_config

case = json.loads(sys.argv[1])
dir = case["dir"]
exec(case["setup"])
package = importlib.import_module(case["package"])
modules = [found.name for found in pkgutil.walk_packages(package.__path__, package.__name__ + ".")]
for name in modules:
    importlib.import_module(name)
exec(case["also"])


def errors(config):
    props = {"name": "checked", "connector.class": case["entry_point"], **config}
    infos = validate_connector_config({key: value.format(dir=dir) for key, value in props.items()})
    return {info["value"]["name"]: info["value"]["errors"] for info in infos["configs"] if info["value"]["errors"]}


print(json.dumps({"modules": modules, "valid": errors(case["valid"]), "invalid": errors(case["invalid"])}))
"""


@pytest.mark.parametrize("extra", list(CASES))
def test_the_extra_gives_its_connector(extra: str, venvs: Venvs, tmp_path: Path) -> None:
    case = CASES[extra]
    venv = venvs.get(extra, [venvs.headwater(extra)])
    installed = venv.distributions()
    assert case.distributions <= installed
    assert installed & (SERVER_STACK | TEST_TOOLS) == set()

    argument = {
        "package": case.package,
        "entry_point": extra,
        "dir": str(tmp_path),
        "setup": case.setup,
        "also": case.also,
        "valid": case.valid,
        "invalid": {**case.valid, **case.invalid},
    }
    result: dict[str, Any] = json.loads(venv.run([venv.python, "-c", CHECK, json.dumps(argument)], cwd=tmp_path))
    assert len(result["modules"]) >= 5, result["modules"]
    assert result["valid"] == {}
    assert list(result["invalid"]) == [case.bad_key], result["invalid"]
