"""Command-line options that several commands share (seqgrader's own, grade-batch's, the similarity
report's, the nbgrader and service commands'): one spelling and one help text each."""

COURSE_HELP = (
    "course folder (course.yml, solutions/, exercises/) or its course.yml (default: the nearest "
    "course.yml in the current folder or above it, else the built-in course)"
)


def add_course_option(parser):
    """Add `--course DIR`, read by config.load_course (find_course's search when it is left out)."""
    parser.add_argument("--course", metavar="DIR", help=COURSE_HELP)
