from .reader import Reading, read_submission  # noqa: F401
from .submission import Submission, exec_sources, find_files, load_submission, read_sources  # noqa: F401
