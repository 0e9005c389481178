"""Every connector config the docs show runs end to end on the real broker and moves its records: the Kafka mirror,
JDBC-CDC (JSON, the pass-through converters, the unwrap transform, secrets through config providers), the synthetic
example connector (quickstart and README) and docs/transforms.md's fragments each on a simple source (the Spark
sink's recipes not yet, see :data:`NOT_RUN`). All run at once on ONE shared standalone worker (in process, with its
REST API); each recipe's test then waits for its records, its connector and tasks RUNNING, and no record skipped.
The recipe that used to lose everything without a word (the mirror with the ``bytes`` header converter,
``InsertHeader`` and ``errors.tolerance=all``) runs too, broken on purpose, and must raise the all-records-skipped
alarm.

What is substituted, and why (everything else is the page's text):

- Endpoints: ``bootstrap.servers`` and the mirror's ``source.bootstrap.servers`` are the session's broker (the
  mirror copies within one cluster, under its ``destination.topics.prefix``); ``connection.url`` is a scratch
  database of the session's PostgreSQL; a Spark ``table.path`` (a local directory or an ``s3a://`` bucket) is a
  local tmp directory, the bucket's place taken by the disk (the Spark sink's own tests cover S3A).
- Names: connector names, topics, the mirror's whitelisted topics and group, and the CDC ``topic.prefix`` get a
  suffix of their own, since the broker and database server are shared with other tests and runs.
- Paths: the config providers' allowed directories (security.md) are tmp directories holding the secrets.
- A page's worker block: its converter keys become the connector's own (a connector's converter keys override the
  worker's, so the connector runs with exactly the converters that worker would give it); its other keys
  (``bootstrap.servers``, the offsets file, ``listeners``, ``offset.flush.interval.ms``, the allowed modules) are
  the shared worker's. jdbc-cdc.md gives its worker converters in prose (JSON, ``schemas.enable=false``).
- Bounds: the README's synthetic source gets the quickstart's ``max.records=1000`` (unbounded, it would write for as
  long as the worker runs); a single broker needs ``errors.deadletterqueue.topic.replication.factor=1``.

docs/migration.md has its own test. Configs that are not run here, each with why, are in :data:`NOT_RUN`; a new
config in the docs fails :func:`test_every_documented_config_is_run` until it is run or listed there.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from confluent_kafka import Producer
from prometheus_client.parser import text_string_to_metric_families

from headwater.harness.kafka_worker import KafkaInspector
from headwater.runtime.commands.standalone import StandaloneWorker
from headwater.runtime.config.properties import format_properties, read_properties
from support.doc_blocks import ROOT, connector_blocks, page_blocks
from support.rest_worker import RestWorker, wait_until
from support.scratch import ScratchDatabase

DOCS = ROOT / "docs"
CONVERTER_KEY = re.compile(r"(key|value|header)\.converter(\..+)?")
ENVIRONMENT_KEYS = {
    "bootstrap.servers",
    "offset.storage.file.filename",
    "offset.flush.interval.ms",
    "listeners",
    "connector.class.allowed.modules",
}
"""Worker-block keys the shared worker sets from the environment instead (see the module docstring)."""
NOT_RUN = {
    "spark-sink.md-1": "NOT YET: the worker's SparkSession must be the process's one, made as the Spark sink tests' "
    "session fixture makes it (tests/reference_connectors/spark_sink/conftest.py), which tests/docs cannot reach yet",
    "spark-sink.md-2": "NOT YET: as spark-sink.md-1",
    "jdbc-cdc.md-2": "the Avro converters need a Schema Registry (Apicurio on Java 21, minutes to start); "
    "tests/reference_connectors/jdbc_cdc/test_record_schemas.py runs that config against it",
    "spark-sink.md-3": "Delta's DynamoDB commit coordinator needs DynamoDB and S3; the Spark sink's own tests run it "
    "against moto",
    "spark-sink.md-4": "a Spark standalone cluster (spark.master); "
    "tests/reference_connectors/spark_sink/test_cluster.py runs it",
}
MIRROR_RECORDS = 600
"""Records per mirrored source topic: past the alarm's 500 for each task of the broken mirror."""
ALARM = "has skipped every record it has seen"


def block(page: str, number: int) -> dict[str, str]:
    """Block ``number`` of ``page``'s ``properties`` blocks, a copy."""
    return dict(page_blocks(DOCS / page if page != "README.md" else ROOT / page)[number].values)


def worker_converters(worker_block: dict[str, str]) -> dict[str, str]:
    """A page's worker block as connector keys: its converter keys (the rest must be the environment's)."""
    others = {key for key in worker_block if not CONVERTER_KEY.fullmatch(key)} - ENVIRONMENT_KEYS
    assert not others, f"worker keys this test does not apply: {sorted(others)}"
    return {key: value for key, value in worker_block.items() if CONVERTER_KEY.fullmatch(key)}


@dataclass
class Recipe:
    """One connector config of the docs as run here: ``ids`` are the blocks it runs, ``config`` the substituted
    config (its ``name`` unique), ``topics`` where its records go and how many at least."""

    ids: tuple[str, ...]
    config: dict[str, str]
    topics: dict[str, int] = field(default_factory=dict)
    tasks: int = 1

    @property
    def name(self) -> str:
        return self.config["name"]


class AlarmRecords(logging.Handler):
    """Keeps the worker's ERROR lines, the alarm's among them (logged on the tasks' threads, before or while a test
    looks)."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@dataclass
class Recipes:
    worker: RestWorker
    inspector: KafkaInspector
    alarms: AlarmRecords
    suffix: str
    tmp: Path
    started: dict[str, Recipe] = field(default_factory=dict)

    def start(self, recipe: Recipe) -> None:
        self.worker.create(recipe.name, recipe.config)
        self.started[recipe.ids[0]] = recipe

    def metrics(self) -> dict[tuple[str, str, str], float]:
        """Every task sample of the worker's /metrics: (name, connector, task) -> value."""
        response = self.worker.http.get("/metrics")
        assert response.status_code == 200
        return {
            (sample.name, sample.labels["connector"], sample.labels["task"]): sample.value
            for family in text_string_to_metric_families(response.text)
            for sample in family.samples
            if "task" in sample.labels and "connector" in sample.labels
        }

    def assert_moved(self, recipe: Recipe) -> None:
        """The recipe's topics hold its records, it and its tasks are RUNNING, and no task skipped a record."""
        self.worker.wait_for_states(recipe.name, "RUNNING", ["RUNNING"] * recipe.tasks)
        for topic, count in recipe.topics.items():
            wait_until(
                lambda t=topic, c=count: len(self.inspector.messages(t)) >= c or any(self.skipped(recipe).values()),
                f"{count} records in {topic}",
            )
        self.worker.wait_for_states(recipe.name, "RUNNING", ["RUNNING"] * recipe.tasks)
        skipped = self.skipped(recipe)
        assert len(skipped) == recipe.tasks and not any(skipped.values()), (recipe.ids, skipped, self.errors(recipe))
        assert not [line for line in self.alarms.lines if ALARM in line and f"task {recipe.name}-" in line]

    def skipped(self, recipe: Recipe) -> dict[str, float]:
        """Records each task of ``recipe`` skipped, by task."""
        return {
            task: value
            for (name, connector, task), value in self.metrics().items()
            if name == "headwater_connect_task_error_records_skipped_total" and connector == recipe.name
        }

    def errors(self, recipe: Recipe) -> list[str]:
        """The worker's ERROR lines about ``recipe``'s tasks."""
        return [line for line in self.alarms.lines if recipe.name in line]


def produce(bootstrap: str, topic: str, values: list[bytes], headers: list[tuple[str, bytes]] | None = None) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for value in values:
        producer.produce(topic, value, headers=headers)
    assert producer.flush(60) == 0


@pytest.fixture(scope="module")
def recipes(kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Recipes]:
    """The shared worker, security.md's config providers set up in tmp directories, and the alarm's log lines."""
    tmp = tmp_path_factory.mktemp("recipes")
    suffix = tmp.name.rsplit("-", 1)[-1][:8].lower() + tmp_path_factory.getbasetemp().name[-4:].lower()
    suffix = re.sub(r"[^a-z0-9]", "", suffix)
    providers = block("security.md", 5)
    for directory in ("/etc/headwater/secrets", "/run/secrets"):
        (tmp / directory.strip("/").replace("/", "-")).mkdir()
    providers = {
        key: value.replace("/etc/headwater/secrets", str(tmp / "etc-headwater-secrets")).replace(
            "/run/secrets", str(tmp / "run-secrets")
        )
        for key, value in providers.items()
    }
    props = {
        "bootstrap.servers": kafka_bootstrap,
        "listeners": "http://127.0.0.1:0",
        "offset.storage.file.filename": str(tmp / "offsets"),
        "offset.flush.interval.ms": "500",
        "connector.class.allowed.modules": "tests,support,synthetic",
        **providers,
    }
    path = tmp / "worker.properties"
    path.write_text(format_properties(props), encoding="utf-8")
    alarms = AlarmRecords()
    logger = logging.getLogger("headwater")
    logger.addHandler(alarms)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SHOP_TOPIC_PREFIX", f"secret-shop-{suffix}")
        worker = RestWorker(StandaloneWorker(read_properties(path), []))
        try:
            yield Recipes(worker, KafkaInspector(kafka_bootstrap), alarms, suffix, tmp)
        finally:
            logger.removeHandler(alarms)
            worker.stop()


# ---- the Kafka mirror, the synthetic source and the transforms: started together ------------------------------------


def mirror_recipe(recipes: Recipes, bootstrap: str, prefix: str, **extra: str) -> Recipe:
    config = {**block("kafka-mirror.md", 1), **worker_converters(block("kafka-mirror.md", 0)), **extra}
    suffix = recipes.suffix
    whitelist = ",".join(f"{suffix}-{part}" for part in config["source.topic.whitelist"].split(","))
    config.update(
        {
            "name": f"{config['name']}-{prefix}{suffix}",
            "source.bootstrap.servers": bootstrap,
            "source.topic.whitelist": whitelist,
            "source.group.id": f"{config['source.group.id']}-{prefix}{suffix}",
            "destination.topics.prefix": f"{prefix}{config['destination.topics.prefix']}",
        }
    )
    destination = config["destination.topics.prefix"]
    topics = {f"{destination}{suffix}-orders": MIRROR_RECORDS, f"{destination}{suffix}-payments-eu": MIRROR_RECORDS}
    return Recipe(("kafka-mirror.md-1",), config, topics, tasks=2)


BROKEN_MIRROR = {
    # what the mirror recipe said before it was fixed, plus what an operator adds: every record is skipped
    "header.converter": "bytes",
    "errors.tolerance": "all",
    "transforms": "origin",
    "transforms.origin.type": "org.apache.kafka.connect.transforms.InsertHeader",
    "transforms.origin.header": "origin",
    "transforms.origin.value.literal": "mirror",
}


def synthetic_recipes(recipes: Recipes) -> list[Recipe]:
    found = []
    for page, connector, worker_block, extra in (
        ("quickstart.md", 1, 0, {}),
        ("README.md", 2, 1, {"max.records": block("quickstart.md", 1)["max.records"]}),
    ):
        config = {**block(page, connector), **worker_converters(block(page, worker_block)), **extra}
        config["name"] = f"{config['name']}-{page.split('.')[0].lower()}-{recipes.suffix}"
        config["topic"] = f"{config['topic']}-{config['name']}"
        found.append(Recipe((f"{page}-{connector}",), config, {config["topic"]: int(config["max.records"])}))
    return found


SHOP_COUNT = 4
FILTERED = {
    "transforms.md-5": 0,  # Filter without a predicate drops every record
    "transforms.md-18": SHOP_COUNT // 2,  # the traced orders (trace-id header) are dropped
    "transforms.md-20": 0,  # the shop.* topic is dropped
}
"""Records of :data:`SHOP_COUNT` that each filtering example lets through."""


def transform_recipes(recipes: Recipes) -> list[Recipe]:
    """Each transforms.md example on the shop source (fields and headers the examples name), writing to a topic
    ``shop.<...>`` so that the RegexRouter and TopicNameMatches examples apply."""
    found = []
    for example in page_blocks(DOCS / "transforms.md"):
        topic = f"shop.t{example.number}-{recipes.suffix}"
        config = {
            "name": f"transforms-{example.number}-{recipes.suffix}",
            "connector.class": "support.shop_source:ShopSource",
            "topic": topic,
            "count": str(SHOP_COUNT),
            **example.values,
        }
        if "RegexRouter" in example.values.values():
            topic = topic.replace("shop.", "mirror.", 1)
        if "TimestampRouter" in example.values.values():
            topic = ""  # ${topic}-${timestamp}: asserted by its test
        expected = FILTERED.get(example.id, SHOP_COUNT)
        found.append(Recipe((example.id,), config, {topic: expected} if topic and expected else {}))
    return found


@pytest.fixture(scope="module")
def kafka_recipes(recipes: Recipes, kafka_bootstrap: str) -> dict[str, Recipe]:
    """The mirror (with its source topics filled, and broken once), the synthetic and transform recipes, started
    together."""
    for topic in ("orders", "payments-eu"):
        values = [json.dumps({"n": n}).encode() for n in range(MIRROR_RECORDS)]
        produce(kafka_bootstrap, f"{recipes.suffix}-{topic}", values, [("trace", b"\x00\x01")])
    started = {
        "mirror": mirror_recipe(recipes, kafka_bootstrap, ""),
        "broken-mirror": mirror_recipe(recipes, kafka_bootstrap, "broken-", **BROKEN_MIRROR),
    }
    for recipe in [*synthetic_recipes(recipes), *transform_recipes(recipes)]:
        started[recipe.ids[0]] = recipe
    for recipe in started.values():
        recipes.start(recipe)
    return started


@pytest.mark.kafka
def test_the_mirror_recipe_copies_every_record_with_its_headers(
    recipes: Recipes, kafka_recipes: dict[str, Recipe]
) -> None:
    recipe = kafka_recipes["mirror"]
    recipes.assert_moved(recipe)
    for topic in recipe.topics:
        copied = recipes.inspector.messages(topic)
        assert len(copied) == MIRROR_RECORDS
        assert {tuple(m.headers or ()) for m in copied} == {(("trace", b"\x00\x01"),)}


@pytest.mark.kafka
def test_the_mirror_recipe_broken_as_it_used_to_be_says_so(recipes: Recipes, kafka_recipes: dict[str, Recipe]) -> None:
    """``header.converter=bytes`` refuses InsertHeader's string header: under ``errors.tolerance=all`` every record
    is skipped. The tasks stay RUNNING, but each logs the alarm and its gauge is 1."""
    recipe = kafka_recipes["broken-mirror"]
    recipes.worker.wait_for_states(recipe.name, "RUNNING", ["RUNNING"] * recipe.tasks)

    def alarmed() -> list[float]:
        found = recipes.metrics()
        return [found.get(("headwater_connect_task_error_all_records_skipped", recipe.name, str(t)), 0) for t in (0, 1)]

    wait_until(lambda: alarmed() == [1, 1], f"{recipe.name}'s tasks raising the all-records-skipped alarm")
    lines = [line for line in recipes.alarms.lines if ALARM in line and f"task {recipe.name}-" in line]
    assert len(lines) == 2, lines
    assert all("Stage: header conversion;" in line and "misconfiguration, not bad data" in line for line in lines)
    assert all(not recipes.inspector.topics().get(topic) for topic in recipe.topics), "nothing was written"


@pytest.mark.kafka
@pytest.mark.parametrize("block_id", ["quickstart.md-1", "README.md-2"])
def test_the_synthetic_recipes_write_their_records(
    recipes: Recipes, kafka_recipes: dict[str, Recipe], block_id: str
) -> None:
    recipe = kafka_recipes[block_id]
    recipes.assert_moved(recipe)
    (topic,) = recipe.topics
    assert len(recipes.inspector.messages(topic)) == int(recipe.config["max.records"])


@pytest.mark.kafka
def test_each_transforms_example_runs_on_a_source(recipes: Recipes, kafka_recipes: dict[str, Recipe]) -> None:
    examples = [recipe for key, recipe in kafka_recipes.items() if key.startswith("transforms.md-")]
    assert len(examples) == len(page_blocks(DOCS / "transforms.md"))
    for recipe in examples:
        recipes.assert_moved(recipe)
        recipes.worker.wait_for_offsets(
            recipe.name, [{"partition": {"orders": "all"}, "offset": {"n": SHOP_COUNT - 1}}]
        )  # every record went through: written or dropped by the example's filter
        for topic, count in recipe.topics.items():
            assert len(recipes.inspector.messages(topic)) == count, recipe.ids
    (routed,) = [r for r in examples if "TimestampRouter" in r.config.values()]
    topic = routed.config["topic"]
    assert [t for t in recipes.inspector.topics() if t.startswith(f"{topic}-")] == [f"{topic}-20260101"]


# ---- JDBC-CDC on PostgreSQL ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cdc_database(postgres_server: str) -> Iterator[ScratchDatabase]:
    """The recipe's tables, ``public.orders`` and ``public.order_lines``, with rows before the connectors start."""
    database = ScratchDatabase.on_server("postgres", postgres_server)
    database.execute(
        "CREATE TABLE orders (id bigint PRIMARY KEY, customer text, amount numeric(12, 2))",
        "CREATE TABLE order_lines (id bigint PRIMARY KEY, order_id bigint, sku text)",
        "INSERT INTO orders VALUES (1, 'ada', 12.50), (2, 'bob', 3.00)",
        "INSERT INTO order_lines VALUES (1, 1, 'A-1'), (2, 2, 'B-2')",
    )
    yield database
    database.close()


JSON_WORKER = {"key.converter": "json", "value.converter": "json", "value.converter.schemas.enable": "false"}
"""jdbc-cdc.md's worker converters, given in prose: JSON with ``schemas.enable=false``."""


@pytest.fixture(scope="module")
def cdc_recipes(recipes: Recipes, cdc_database: ScratchDatabase) -> dict[str, Recipe]:
    """jdbc-cdc.md's recipe as it is, with its pass-through converters, with its unwrap transform, and security.md's
    config reading the URL and the topic prefix through config providers: started together, then a row of each
    table changed."""
    suffix = recipes.suffix
    base = {**block("jdbc-cdc.md", 0), **JSON_WORKER, "connection.url": cdc_database.url}
    found = {}
    for key, extra in (("jdbc-cdc.md-0", {}), ("jdbc-cdc.md-1", block("jdbc-cdc.md", 1))):
        found[key] = {**base, **extra}
    found["jdbc-cdc.md-3"] = {**base, **block("jdbc-cdc.md", 3)}
    secret = recipes.tmp / "run-secrets" / "shop-db-url"
    secret.write_text(cdc_database.url, encoding="utf-8")
    secured = block("security.md", 6)
    secured["connection.url"] = secured["connection.url"].replace("/run/secrets", str(secret.parent))
    started = {}
    for key, config in found.items():
        config["name"] = f"{config['name']}-{key.split('-')[-1]}-{suffix}"
        config["topic.prefix"] = f"{config['topic.prefix']}_{key.split('-')[-1]}_{suffix}"
        prefix = config["topic.prefix"]
        started[key] = Recipe((key,), config, {f"{prefix}.public.orders": 3, f"{prefix}.public.order_lines": 2})
    secured["name"] = f"{secured['name']}-secured-{suffix}"
    started["security.md-6"] = Recipe(
        ("security.md-6",), {**secured, **JSON_WORKER}, {f"secret-shop-{suffix}.public.orders": 3}
    )
    for recipe in started.values():
        recipes.start(recipe)
    for recipe in started.values():
        recipes.worker.wait_for_states(recipe.name, "RUNNING", ["RUNNING"])
    cdc_database.execute("INSERT INTO orders VALUES (3, 'cy', 7.25)", "INSERT INTO order_lines VALUES (3, 3, 'C-3')")
    return started


@pytest.mark.kafka
@pytest.mark.parametrize("block_id", ["jdbc-cdc.md-0", "jdbc-cdc.md-1", "jdbc-cdc.md-3", "security.md-6"])
def test_the_jdbc_cdc_recipes_send_each_row_change(
    recipes: Recipes, cdc_recipes: dict[str, Recipe], block_id: str
) -> None:
    recipe = cdc_recipes[block_id]
    recipes.assert_moved(recipe)
    orders = next(topic for topic in recipe.topics if topic.endswith(".public.orders"))
    values = [json.loads(m.value) for m in recipes.inspector.messages(orders) if m.value is not None]
    rows = [value if block_id == "jdbc-cdc.md-3" else value["after"] for value in values]
    assert sorted(row["id"] for row in rows) == [1, 2, 3]


# ---- which configs run -----------------------------------------------------------------------------------------------


RUN = {
    "kafka-mirror.md-1",
    "quickstart.md-1",
    "README.md-2",
    "jdbc-cdc.md-0",
    "jdbc-cdc.md-1",
    "jdbc-cdc.md-3",
    "security.md-6",
}
"""The connector configs of the docs these tests run (docs/transforms.md's examples all run, see above)."""


def test_every_documented_config_is_run() -> None:
    documented: set[str] = {b.id for b in connector_blocks() if not b.page.startswith("migration")}
    assert documented - RUN - set(NOT_RUN) == set(), "a config of the docs that no test runs: run it, or say why not"
    assert (RUN | set(NOT_RUN)) - documented == set(), "configs listed here that the docs no longer show"
