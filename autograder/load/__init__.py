from .submission import Submission, find_files, load_submission  # noqa: F401
