"""Keep the example of the kind asked for: a source or a sink, and its tests; the transformation and its tests
only when asked for."""

from pathlib import Path

KIND = "{{ cookiecutter.connector_kind }}"
OTHER = "sink" if KIND == "source" else "source"

Path("{{ cookiecutter.package_name }}", f"{OTHER}.py").unlink()
Path("tests", f"test_{OTHER}.py").unlink()

if "{{ cookiecutter.include_transformation }}" != "yes":
    Path("{{ cookiecutter.package_name }}", "transforms.py").unlink()
    Path("tests", "test_transforms.py").unlink()
