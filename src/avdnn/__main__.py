"""``python -m avdnn`` is the ``avdnn`` console script."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
