"""The ``coreb`` command line: one module per command in ``coreb_cli.commands``."""
