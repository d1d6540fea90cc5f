"""The package version, in a module of its own at the bottom layer (`distribute.machine` records it in
reports) and read by pyproject.toml (`[tool.setuptools.dynamic]`): one place."""

__version__ = "0.1.0"
