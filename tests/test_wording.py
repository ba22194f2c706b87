"""The repository speaks of the product alone: no comment, docstring, catalogue comment, document or
test name the repository ships names an issue number, an item of one, or a work period (an ordinal
or "this" before the word for one).  Such words say nothing to a reader of the code; what the code
does and why is said instead.

This file holds the pattern's sample phrases, so the walk leaves it out."""

import fnmatch
import os
import re

from .conftest import ROOT

# ordinal or relative words that make the noun a work period, never the verb
_WHICH = r"first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|this|that|last|previous|next|earlier|later|each|every"
HISTORY = re.compile(
    r"\bissues?[ #-]*\d+"  # a number after the word, with or without "#" or "-"
    r"|\bitem #?\d+\b"  # an item of one
    rf"|\b(?:{_WHICH}) stop(?:'s|s)?\b"  # an ordinal or relative word before it
    r"|\bstops? #?\d+\b"  # the noun with a number
    r"|\bas of (?:the )?stop\b"  # "as of" before it
    r"|\bwork periods?\b"
    r"|\bsessions? #?\d+\b",  # a numbered sitting
    re.IGNORECASE,
)

SHIPPED = ("*.py", "*.md", "*.yml", "*.yaml", "*.toml", "*.cfg", "*.txt", "*.ipynb", "*.sh")
SCRIPT_FOLDERS = ("bin", ".ci")  # their scripts have no extension
NOT_SHIPPED = {
    ".git",
    ".venv",
    ".hypothesis",
    ".pytest_cache",
    ".ruff_cache",
    "__pycache__",
    "out",
    "grades",
    "build",
    "dist",
    "site",
    ".whl",
}
THIS = os.path.abspath(__file__)


def _shipped_files():
    for folder, dirs, files in os.walk(ROOT):
        dirs[:] = sorted(d for d in dirs if d not in NOT_SHIPPED and not d.endswith(".egg-info"))
        script_folder = os.path.relpath(folder, ROOT) in SCRIPT_FOLDERS
        for name in sorted(files):
            path = os.path.join(folder, name)
            if os.path.abspath(path) == THIS:
                continue
            if any(fnmatch.fnmatch(name, p) for p in SHIPPED) or (script_folder and "." not in name):
                yield path


def test_nothing_names_an_issue_or_a_work_period():
    bad, seen = [], 0
    for path in _shipped_files():
        seen += 1
        with open(path, encoding="utf-8", errors="replace") as f:
            for n, line in enumerate(f, 1):
                if HISTORY.search(line):
                    bad.append(f"{os.path.relpath(path, ROOT)}:{n}: {line.strip()[:160]}")
    assert seen > 100, seen
    assert bad == [], "say what the code does and why, not when or in which issue:\n" + "\n".join(bad)


def test_the_pattern_flags_history_and_not_product_words():
    # the phrases are put together here, so that no line of this file reads as one of them
    i, s, it, w = "issue", "stop", "item", "work"
    history = [
        f"({i} 15)",
        f"{i.title()} 13: the exercise",
        f"At the third {s} the pool",
        f"{i} 6, {it} 5",
        f"the fifth {s}'s code",
        f"until {i} 13 they were",
        f"the {i}-16 goal",
        f"{it} 4",
        f"this {s}",
        f"Since the next {s}",
        f"{i} #7",
        f"one {w} period",
        "in session" + " 3",
    ]
    product = [
        "stop the worker",
        "stops at the first failure",
        "a GitHub issue",
        "issues a warning",
        "a session of its own",
        "the pytest session",
        "kill -TERM: stop the graders",
        "stop = threading.Event()",
        "for item in items",
        "item = todo.get_nowait()",
        "round(acc * n, 2)",
        "[--rounds 1]",
        "nbformat.v4.new_code_cell",
        "the task's thread",
        "a loop stops taking a core",
        "nothing stops it",
    ]
    assert [p for p in history if not HISTORY.search(p)] == []
    assert [p for p in product if HISTORY.search(p)] == []
