"""grade-batch: a whole class graded, resumable, locally or on a Dask cluster.

    discover.py   finding the submissions (nbgrader's layout or a flat folder)
    ../store.py   resume keys, atomic writes, the output folder's lock (shared with the
                  dashboard, which imports nothing of this package)
    pool.py       the warm grading processes (LocalPool) and their main (grading_process_main)
    cluster.py    the Dask path: a worker plugin holding the same pool, the course sent as bytes
    exports.py    status, CSV, Gradescope
    run.py        the command: Batch, run_batch, add_parser (its docstring tells the pipeline)

``python -m autograder.batch --grading-process CONFIG`` is a grading process (pool.grading_process_main): importing
this package loads nothing else, so that process imports only what it needs (not dask, not the
reports); each name below is loaded from its module on first use.
"""

import importlib

# the function `discover` shadows its module's name here (a light module: loaded at once, so the
# import system has already set the attribute that this line then replaces)
from .discover import CODE_SUFFIXES, Item, discover  # noqa: F401 (in __all__, below)

_WHERE = {
    "..store": [
        "PACKAGE_DIR",
        "SKIP_DIRS",
        "resume_key",
        "grader_version",
        "one_line",
        "remove_stale_temp_files",
        "settings_digest",
        "submission_files",
        "write_atomic",
    ],
    ".exports": ["classify", "csv_row", "error_report", "gradescope_results", "write_csv"],
    ".pool": ["LocalPool", "grading_process_main", "_child_env", "_die_with_parent", "_grade_in_process"],
    ".cluster": ["GradingPlugin", "course_bundle", "grade_task", "run_dask"],
    ".run": ["Batch", "HELP", "PARALLEL_DEFAULT", "add_parser", "run_batch"],
}
_MODULE_OF = {name: mod for mod, names in _WHERE.items() for name in names}
__all__ = sorted([*_MODULE_OF, "CODE_SUFFIXES", "Item", "discover"])


def __getattr__(name):
    mod = _MODULE_OF.get(name)
    if mod is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(mod, __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_MODULE_OF))
