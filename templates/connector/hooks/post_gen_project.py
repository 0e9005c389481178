"""Keep the example of the kind asked for: a source or a sink, and its tests."""

from pathlib import Path

KIND = "{{ cookiecutter.connector_kind }}"
OTHER = "sink" if KIND == "source" else "source"

Path("{{ cookiecutter.package_name }}", f"{OTHER}.py").unlink()
Path("tests", f"test_{OTHER}.py").unlink()
