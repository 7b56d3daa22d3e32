"""The ``coreb`` command line: one module per command in ``coreb_toolkit.cli.commands``."""
