"""The cookiecutter template (``templates/connector``) rendered the way an author renders it, without prompts."""

from __future__ import annotations

from pathlib import Path

from cookiecutter.main import cookiecutter

from support.distribution import SOURCE_ROOT

TEMPLATE = SOURCE_ROOT / "templates" / "connector"

CONNECTOR_NAME = "Acme Orders"
"""The connector name the tests give: projects ``acme-orders-source`` and ``acme-orders-sink``."""


def render(kind: str, output: Path, transformation: str = "no") -> Path:
    """Render a ``kind`` (``source`` or ``sink``) project named :data:`CONNECTOR_NAME` into ``output``, with the
    transformation when ``transformation`` is ``yes``; the project's folder."""
    project = cookiecutter(
        str(TEMPLATE),
        no_input=True,
        output_dir=str(output),
        extra_context={
            "connector_kind": kind,
            "connector_name": CONNECTOR_NAME,
            "include_transformation": transformation,
        },
        default_config={"replay_dir": str(output / ".replay"), "cookiecutters_dir": str(output / ".templates")},
    )
    return Path(project)
