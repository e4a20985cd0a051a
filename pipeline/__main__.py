"""`python -m pipeline SUBCOMMAND ...`."""

import sys

from pipeline.cli import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
