"""`python -m pipeline SUBCOMMAND ...`."""

import os
import sys

from pipeline.cli import main

SIGPIPE_EXIT = 141  # 128 + SIGPIPE, as a shell reports a reader that went away

if __name__ == "__main__":
    try:
        code = main(sys.argv[1:])
        sys.stdout.flush()
    except BrokenPipeError:
        # `... | head`: the reader closed the pipe; that ends the output, not in a traceback
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = SIGPIPE_EXIT
    sys.exit(code)
