"""``python -m autograder.batch --grading-process CONFIG``: a grading process of the pool (pool.grading_process_main)."""

import sys

from .pool import grading_process_main

if len(sys.argv) == 3 and sys.argv[1] == "--grading-process":
    grading_process_main(sys.argv[2])
else:
    sys.exit("usage: python -m autograder grade-batch --help")
