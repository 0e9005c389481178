"""Refuse names that would not make an importable package or valid class names."""

import re
import sys

PACKAGE = "{{ cookiecutter.package_name }}"
PREFIX = "{{ cookiecutter.class_prefix }}"

if not re.fullmatch(r"[a-z_][a-z0-9_]*", PACKAGE):
    sys.exit(f"package_name {PACKAGE!r} is not a valid Python package name (lower case, digits, underscores)")
if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", PREFIX):
    sys.exit(f"class_prefix {PREFIX!r} is not a valid start of a class name")
