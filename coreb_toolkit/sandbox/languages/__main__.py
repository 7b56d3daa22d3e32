"""``python3 -m coreb_toolkit.sandbox.languages --debian-packages``: the Debian packages the
sandbox's languages need, space-separated on one line (standard library only, no venv)."""

from __future__ import annotations

import argparse
import sys

from coreb_toolkit.sandbox.languages import debian_packages


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python3 -m coreb_toolkit.sandbox.languages", description=__doc__
    )
    parser.add_argument(
        "--debian-packages",
        action="store_true",
        help="print the Debian packages of the sandbox and every language on one line",
    )
    args = parser.parse_args(argv)
    if not args.debian_packages:
        parser.error("nothing to do: pass --debian-packages")
    sys.stdout.write(" ".join(debian_packages()) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
