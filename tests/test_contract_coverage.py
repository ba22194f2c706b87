"""docs/contract-coverage.md: every normative sentence of docs/contract.md and
docs/contract-extra.md on one row, with the properties that check it.

Fast: every quote occurs in its contract file, every row names at least one registered property (and
no name that is not registered), every registered property checks at least one row, the grader's
sentences name tests that exist, the counts in the text are the table's, and what no property can
observe is a short list with reasons.  Plus one sentence of the grader's report that no other test
checked as a whole: every exercise id of an assignment appears when the submission lacks it.
"""

import re

import pytest

from autograder.properties import load_all

from .conftest import ROOT

DOC = ROOT / "docs" / "contract-coverage.md"
CONTRACTS = {"contract.md": ROOT / "docs" / "contract.md", "contract-extra.md": ROOT / "docs" / "contract-extra.md"}
BEFORE = {"", "new", "tightened"}


def _norm(text):
    return " ".join(text.replace("\\|", "|").split())


def _cells(line):
    """The cells of a markdown table row; `\\|` is a pipe inside a cell."""
    parts = re.split(r"(?<!\\)\|", line.strip())
    return [p.strip() for p in parts[1:-1]]


def _tables():
    """{section title: [row cells]} of the document's tables (header and rule rows left out)."""
    out, section = {}, None
    for line in DOC.read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            section = line[3:].strip()
            out[section] = []
        elif line.startswith("|") and section is not None:
            cells = _cells(line)
            if cells and cells[0] != "#" and not set(cells[0]) <= set("-: "):
                out[section].append(cells)
    return out


def _source(section):
    name = next((n for n in CONTRACTS if f"`{n}`" in section), None)
    assert name, f"section {section!r} names no contract file"
    return name


def _names(cell):
    return re.findall(r"`([^`]+)`", cell)


TABLES = _tables()
FUNCTION_ROWS = [(s, r) for s, rows in TABLES.items() if s.endswith("the submission's functions") for r in rows]
GRADER_ROWS = [(s, r) for s, rows in TABLES.items() if s.endswith("what the grader reports") for r in rows]
UNOBSERVABLE = TABLES.get("Sentences no property can observe", [])


def test_the_document_has_its_tables():
    assert len([s for s in TABLES if s.endswith("the submission's functions")]) == 2
    assert len([s for s in TABLES if s.endswith("what the grader reports")]) == 2
    assert len(FUNCTION_ROWS) >= 150 and GRADER_ROWS and UNOBSERVABLE


@pytest.mark.parametrize("section,row", FUNCTION_ROWS + GRADER_ROWS, ids=[r[0] for _, r in FUNCTION_ROWS + GRADER_ROWS])
def test_every_quote_is_the_contracts_own_text(section, row):
    text = _norm(CONTRACTS[_source(section)].read_text(encoding="utf-8"))
    quote = _norm(row[2] if len(row) == 5 else row[1])
    assert quote and quote in text, f"{row[0]}: not in {_source(section)}: {quote!r}"


def test_every_row_names_registered_properties_and_every_property_checks_a_row():
    registry = load_all()
    ids, named = set(), set()
    for _, row in FUNCTION_ROWS:
        assert len(row) == 5, f"{row[0]}: a row is | # | function | sentence | properties | before |"
        rid, _, _, props, before = row
        assert rid not in ids, f"row {rid} twice"
        ids.add(rid)
        names = _names(props)
        assert names, f"{rid} names no property"
        for n in names:
            assert n in registry, f"{rid} names {n!r}, which is not a registered property"
        named.update(names)
        assert before.strip("*") in BEFORE, f"{rid}: before is {before!r}"
    unchecked = sorted(set(registry) - named)
    assert not unchecked, f"properties that check no sentence of the contract: {unchecked}"


def test_the_grader_sentences_name_tests_that_exist():
    for _, (rid, _, tests) in GRADER_ROWS:
        names = _names(tests)
        assert names, f"{rid} names no test"
        for n in names:
            path, _, func = n.partition("::")
            src = (ROOT / path).read_text(encoding="utf-8")
            assert re.search(rf"^def {re.escape(func)}\(", src, re.M), f"{rid}: no test {n}"


def test_the_counts_in_the_text_are_the_tables():
    text = _norm(DOC.read_text(encoding="utf-8"))
    before = [row[4].strip("*") for _, row in FUNCTION_ROWS]
    want = (
        f"Counts: {len(FUNCTION_ROWS)} rows on the submission's functions, {before.count('new')} of them **new** "
        f"and {before.count('tightened')} **tightened**; {len(GRADER_ROWS)} rows on the grader, checked by tests; "
        f"{len(UNOBSERVABLE)} sentences no property can observe"
    )
    assert want in text


def test_what_no_property_can_observe_is_short_quoted_and_explained():
    assert len(UNOBSERVABLE) <= 5
    for rid, source, quote, why in UNOBSERVABLE:
        assert _norm(quote) in _norm(CONTRACTS[source].read_text(encoding="utf-8")), rid
        assert len(why) > 40, f"{rid}: say why"


def test_every_exercise_appears_when_the_submission_lacks_its_functions(tmp_path):
    """contract.md: "Every exercise id above appears in `exercises`, also when the submission lacks its
    functions (score 0, feedback says what is missing)" (in this process: nothing runs)."""
    from autograder.config import load_course
    from autograder.grading import grade
    from autograder.judge import InProcessRunner

    sub = tmp_path / "empty.py"
    sub.write_text("# nothing yet\n", encoding="utf-8")
    course = load_course()
    for name in course.assignment_names():
        report = grade(sub, course, InProcessRunner(course), exercises=course.assignment(name)).to_dict()
        assert [e["id"] for e in report["exercises"]] == course.assignment(name)
        for ex in report["exercises"]:
            assert ex["score"] == 0 and ex["max_score"] > 0
            assert all(not t["passed"] and "not defined" in t["feedback"] for t in ex["tests"]), ex["id"]
