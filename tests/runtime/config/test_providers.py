"""The config providers (KIP-297): the built-in file, env and directory providers with their Kafka class names,
``allowed.paths`` (KIP-993) and ``allowlist.pattern``, third-party providers by entry point or import path, and
the worker config file resolved with its own providers."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from headwater.runtime.commands.distributed import DistributedWorker
from headwater.runtime.commands.standalone import StandaloneWorker
from headwater.runtime.config.properties import PropertiesError, parse_properties
from headwater.runtime.config.providers import (
    DirectoryConfigProvider,
    EnvVarConfigProvider,
    FileConfigProvider,
    load_providers,
)
from headwater.runtime.config.references import ConfigTransformer, resolve_worker_file
from headwater.sdk import ConfigError, ConnectError
from headwater.sdk.providers import ConfigProvider
from support.secret_source import MemoryConfigProvider

SECRET = "s3cret value: #1"


@pytest.fixture
def secrets(tmp_path: Path) -> Path:
    """A directory holding ``db.properties`` (password, port) and ``db-password`` (the password alone)."""
    directory = tmp_path / "secrets"
    directory.mkdir()
    (directory / "db.properties").write_text("password = s3cret value: \\#1\nport=5432\n", encoding="utf-8")
    (directory / "db-password").write_text(SECRET, encoding="utf-8")
    return directory


def transformer(**worker: str) -> ConfigTransformer:
    return ConfigTransformer.from_worker_config({"config.providers": list(worker), **_classes(worker)})


def _classes(worker: dict[str, str]) -> dict[str, str]:
    return {f"config.providers.{name}.class": spec for name, spec in worker.items()}


def test_file_reads_a_properties_file_key(secrets: Path) -> None:
    resolved = transformer(file="file").transform({"a": f"${{file:{secrets}/db.properties:password}}", "b": 3})
    assert resolved == {"a": SECRET, "b": 3}


def test_a_reference_may_sit_inside_a_value_and_appear_twice(secrets: Path) -> None:
    ref = f"${{file:{secrets}/db.properties:port}}"
    assert transformer(file="file").transform({"url": f"db:{ref}/x?p={ref}"}) == {"url": "db:5432/x?p=5432"}


def test_directory_reads_a_whole_file(secrets: Path) -> None:
    resolved = transformer(directory="directory").transform({"a": f"${{directory:{secrets}:db-password}}"})
    assert resolved == {"a": SECRET}


def test_env_reads_a_variable_with_or_without_an_empty_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HW_TEST_SECRET", SECRET)
    resolved = transformer(env="env").transform({"a": "${env:HW_TEST_SECRET}", "b": "${env::HW_TEST_SECRET}"})
    assert resolved == {"a": SECRET, "b": SECRET}
    with pytest.raises(ConfigError, match="a path is not supported"):
        transformer(env="env").transform({"a": "${env:/x:HW_TEST_SECRET}"})


def test_env_allowlist_pattern_hides_other_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HW_TEST_SECRET", SECRET)
    monkeypatch.setenv("OTHER_SECRET", SECRET)
    provider = EnvVarConfigProvider()
    provider.configure({"allowlist.pattern": "HW_.*"})
    assert provider.get("", {"HW_TEST_SECRET", "OTHER_SECRET"}) == {"HW_TEST_SECRET": SECRET}


@pytest.mark.parametrize(
    ("spec", "cls"),
    [
        ("org.apache.kafka.common.config.provider.FileConfigProvider", FileConfigProvider),
        ("org.apache.kafka.common.config.provider.EnvVarConfigProvider", EnvVarConfigProvider),
        ("org.apache.kafka.common.config.provider.DirectoryConfigProvider", DirectoryConfigProvider),
        ("headwater.runtime.config.providers:FileConfigProvider", FileConfigProvider),
        ("memory", MemoryConfigProvider),
    ],
)
def test_kafka_class_names_entry_points_and_import_paths_name_providers(spec: str, cls: type) -> None:
    providers = load_providers({"config.providers": ["p"], "config.providers.p.class": spec})
    assert type(providers["p"]) is cls
    assert isinstance(providers["p"], ConfigProvider)


def test_a_third_party_provider_gets_its_params_and_is_closed() -> None:
    MemoryConfigProvider.VALUES["vault/db"] = {"password": SECRET}
    config = {"config.providers": ["vault"], "config.providers.vault.class": "memory"}
    made = ConfigTransformer.from_worker_config({**config, "config.providers.vault.param.token": "t0"})
    assert made.transform({"a": "${vault:vault/db:password}"}) == {"a": SECRET}
    provider = MemoryConfigProvider.made[-1]
    assert provider.params == {"token": "t0"}
    made.close()
    assert provider.closed


@pytest.mark.parametrize(
    ("config", "key"),
    [
        ({"config.providers": ["x"]}, "config.providers.x.class"),
        ({"config.providers": ["x"], "config.providers.x.class": "vault"}, "config.providers.x.class"),
        ({"config.providers": ["x"], "config.providers.x.class": "os:getcwd"}, "config.providers.x.class"),
        (
            {
                "config.providers": ["x"],
                "config.providers.x.class": "env",
                "config.providers.x.param.allowlist.pattern": "(",
            },
            "config.providers.x.param.allowlist.pattern",
        ),
        (
            {
                "config.providers": ["x"],
                "config.providers.x.class": "file",
                "config.providers.x.param.allowed.paths": "rel",
            },
            "config.providers.x.param.allowed.paths",
        ),
    ],
)
def test_a_bad_provider_setting_names_its_key(config: dict[str, object], key: str) -> None:
    with pytest.raises(ConfigError) as raised:
        load_providers(config)
    assert raised.value.key == key


# ---- allowed.paths ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["file", "directory"])
def test_allowed_paths_refuse_a_path_outside_them(secrets: Path, tmp_path: Path, kind: str) -> None:
    other = tmp_path / "other"
    other.mkdir()
    (other / "db.properties").write_text("password=elsewhere\n", encoding="utf-8")
    (other / "db-password").write_text("elsewhere", encoding="utf-8")
    made = ConfigTransformer.from_worker_config(
        {
            "config.providers": ["p"],
            "config.providers.p.class": kind,
            "config.providers.p.param.allowed.paths": str(secrets),
        }
    )
    ref = {"file": "{}/db.properties:password", "directory": "{}:db-password"}[kind]
    assert made.transform({"a": "${p:" + ref.format(secrets) + "}"}) == {"a": SECRET}
    for outside in (other, secrets / ".." / "other"):
        with pytest.raises(ConfigError, match=r"not within allowed\.paths") as raised:
            made.transform({"a": "${p:" + ref.format(outside) + "}"})
        assert "elsewhere" not in str(raised.value)


def test_allowed_paths_refuse_a_link_leading_out_of_them(secrets: Path, tmp_path: Path) -> None:
    (tmp_path / "outside").write_text("elsewhere", encoding="utf-8")
    os.symlink(tmp_path / "outside", secrets / "link")
    provider = DirectoryConfigProvider()
    provider.configure({"allowed.paths": str(secrets)})
    assert provider.get(str(secrets), {"db-password"}) == {"db-password": SECRET}
    with pytest.raises(ConnectError, match=r"not within allowed\.paths"):
        provider.get(str(secrets), {"link"})


def test_allowed_paths_must_exist(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        FileConfigProvider().configure({"allowed.paths": str(tmp_path / "missing")})


# ---- errors ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ("${vault:x:y}", "names config provider 'vault'"),
        ("${file:{dir}/missing.properties:password}", "cannot read properties from file"),
        ("${file:{dir}/db.properties:user}", "no key 'user'"),
        ("${directory:{dir}:missing}", "no key 'missing'"),
    ],
)
def test_an_unresolvable_reference_names_the_key_and_the_reference_not_a_value(
    secrets: Path, value: str, words: str
) -> None:
    value = value.replace("{dir}", str(secrets))
    with pytest.raises(ConfigError) as raised:
        # "ok" is read from the same file: a message must not show what was read
        ok = f"${{file:{secrets}/db.properties:password}}"
        transformer(file="file", directory="directory").transform({"ok": ok, "db.password": value})
    assert raised.value.key == "db.password"
    assert words in str(raised.value) and value in str(raised.value)
    assert SECRET not in str(raised.value)


# ---- the worker config file --------------------------------------------------------------------------------------


def test_the_worker_file_is_resolved_with_its_own_providers(secrets: Path) -> None:
    text = (
        "config.providers=file\nconfig.providers.file.class=file\n"
        f"config.providers.file.param.allowed.paths={secrets}\n"
        f"sasl.password=${{file:{secrets}/db.properties:password}}\n"
    )
    resolved = resolve_worker_file(parse_properties(text, "worker.properties"))
    assert resolved.values["sasl.password"] == SECRET
    assert resolved.values["config.providers.file.param.allowed.paths"] == str(secrets)


def test_an_unresolvable_worker_file_value_names_the_file_line_and_key(secrets: Path) -> None:
    text = f"config.providers=file\nconfig.providers.file.class=file\nsasl.password=${{file:{secrets}/x:password}}\n"
    with pytest.raises(PropertiesError, match=r"^worker.properties:3: sasl.password: invalid value '\$\{file:"):
        resolve_worker_file(parse_properties(text, "worker.properties"))


@pytest.mark.parametrize("command", ["standalone", "distributed"])
def test_both_worker_commands_read_their_file_resolved(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    monkeypatch.setenv("HW_TEST_BOOTSTRAP", "broker-a:9092")
    path = tmp_path / "worker.properties"
    lines = ["config.providers=env", "config.providers.env.class=env", "bootstrap.servers=${env:HW_TEST_BOOTSTRAP}"]
    if command == "distributed":
        lines += ["group.id=g", *(f"{kind}.storage.topic={kind}s" for kind in ("config", "offset", "status"))]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    worker = StandaloneWorker.from_paths(path, []) if command == "standalone" else DistributedWorker.from_path(path)
    assert worker.bootstrap_servers == "broker-a:9092"
    assert worker.worker.config["bootstrap.servers"] == "broker-a:9092"


def test_a_bad_provider_setting_in_the_worker_file_names_the_file_and_line() -> None:
    text = "config.providers=vault\nconfig.providers.vault.class=vault\n"
    with pytest.raises(PropertiesError, match=r"^worker.properties:2: config.providers.vault.class: invalid value"):
        resolve_worker_file(parse_properties(text, "worker.properties"))
