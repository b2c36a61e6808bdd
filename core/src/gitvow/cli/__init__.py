"""The ``gitvow`` command. Each subcommand is a module with ``add_parser`` and ``run``."""
