"""The exercises, one package per exercise, each in one folder (``autograder/exercises/<exercise>/``):

    properties.py    the hidden properties (registered when imported)
    probes.py        the diagnosis' probes (registered when imported)
    experiments.py   the explanation by part's experiments, where the exercise has them
    mistakes.yml     the catalogued mistakes
    notebook.py      the notebook's text source (exercises/build.py writes exercises/<exercise>.ipynb)
    solution.py      the reference solution (the built-in course's solutions/<exercise>.py links to it)

The engines (properties/, diagnose/, catalogue/) find the exercises by scanning this folder: the
folder's name is the exercise's id.
"""

import importlib
from pathlib import Path

HERE = Path(__file__).resolve().parent


def names():
    """The exercises' ids: the folders here that are packages, sorted."""
    return sorted(d.name for d in HERE.iterdir() if (d / "__init__.py").is_file())


def import_each(module):
    """{exercise: its module `module` (e.g. "probes")}, imported, for every exercise that has one."""
    return {
        ex: importlib.import_module(f"{__name__}.{ex}.{module}")
        for ex in names()
        if (HERE / ex / f"{module}.py").is_file()
    }
