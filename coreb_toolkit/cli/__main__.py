import sys

from coreb_toolkit.cli.main import main

sys.exit(main())
