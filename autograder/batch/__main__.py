"""``python -m autograder.batch --worker CONFIG``: a grading process of the pool (pool.worker_main)."""

import sys

from .pool import worker_main

if len(sys.argv) == 3 and sys.argv[1] == "--worker":
    worker_main(sys.argv[2])
else:
    sys.exit("usage: python -m autograder grade-batch --help")
