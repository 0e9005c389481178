"""{{ cookiecutter.description }}."""

{% if cookiecutter.connector_kind == "source" -%}
from {{ cookiecutter.package_name }}.source import {{ cookiecutter.class_prefix }}SourceConnector, {{ cookiecutter.class_prefix }}SourceTask

__all__ = ["{{ cookiecutter.class_prefix }}SourceConnector", "{{ cookiecutter.class_prefix }}SourceTask"]
{%- else -%}
from {{ cookiecutter.package_name }}.sink import {{ cookiecutter.class_prefix }}SinkConnector, {{ cookiecutter.class_prefix }}SinkTask

__all__ = ["{{ cookiecutter.class_prefix }}SinkConnector", "{{ cookiecutter.class_prefix }}SinkTask"]
{%- endif %}

__version__ = "0.1.0"
