"""The `dronecats` command line. Each subcommand lives with its component and is imported lazily."""

__version__ = "0.1.0"
