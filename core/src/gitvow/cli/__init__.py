"""The ``gitvow`` command line: one module per subcommand, registered in :mod:`gitvow.cli.main`."""
