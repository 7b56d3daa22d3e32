import sys

from coreb_cli.main import main

sys.exit(main())
