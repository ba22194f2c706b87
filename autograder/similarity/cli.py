"""``seqgrader similarity SUBMISSIONS --out DIR``: the class similarity report, for instructors.

    analyse()   the pipeline: discover the submissions (batch/discover.py, the layouts grade-batch
                reads) -> each contract function of each (extract.py) -> canonical trees and
                fingerprints, the shared code's fingerprints set aside (normalize.py,
                fingerprint.py) -> the index, its rarities and the candidate pairs (index.py) ->
                each candidate compared function by function, fragments, one score
                (pairs.py), with the behaviour grading recorded when there is some (behaviour.py)
                -> clusters.  Returns a Similarity: plain data.
    write()     similarity.json and similarity.html (html.py) in the output folder

Nothing here runs a student's code: the submissions are parsed with ``ast``, and the behaviour is
what grading recorded in the sandbox.  The output is the instructor's: grade-batch --similarity
writes it beside grades.csv, never into a student's report.
"""

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from ..options import add_course_option
from .pairs import FLAG

REPORTED = 0.1  # pairs below this score are left out of similarity.json and the page


@dataclass
class Similarity:
    students: list
    pairs: list  # [pairs.Pair], highest score first
    clusters: list
    excluded: list  # [{"what", "source", "definitions", "fingerprints"}]
    sources: dict = field(default_factory=dict)  # student -> {function: extract.Source}
    compared: int = 0
    functions: dict = field(default_factory=dict)  # function -> exercise
    behaviour: int = 0  # students whose recorded behaviour was used

    def to_dict(self):
        """What similarity.json holds: the counts, the flag threshold, the pairs, the clusters and
        the excluded code (not the students' sources)."""
        return {
            "students": len(self.students),
            "compared": self.compared,
            "flag": FLAG,
            "behaviour_of": self.behaviour,
            "pairs": [p.to_dict() for p in self.pairs],
            "clusters": self.clusters,
            "excluded": self.excluded,
        }


def analyse(
    submissions,
    course=None,
    assignment=None,
    exclude=(),
    grades=None,
    layout="auto",
    skip=(),
    exercises=None,
    workers=1,
):
    """The Similarity of a folder of submissions (see the module's docstring).  `assignment`: a
    course.yml assignment (its exercises' functions are compared) or, in nbgrader's layout, the
    assignment folder, as grade-batch reads it; `exercises` overrides the assignment's; `workers`:
    processes that fingerprint the functions (parsing only)."""
    from ..batch.discover import discover
    from ..config import load_course
    from .behaviour import Behaviour
    from .extract import contract_functions, functions_of, shared_sources
    from .index import Index, Unit
    from .pairs import clusters, compare

    course = course if course is not None and not isinstance(course, (str, Path)) else load_course(course)
    known = assignment if assignment in course.assignments else None
    exercises = list(exercises or course.assignment(known))
    root = Path(submissions)
    nbgrader = layout == "nbgrader" or (
        layout == "auto" and ((root / "submitted").is_dir() or root.name == "submitted")
    )
    _, items, _ = discover(submissions, layout, assignment if nbgrader else None, exclude=list(skip))
    functions = contract_functions(course, exercises)
    units, sources = [], {}
    for item in items:
        found = functions_of(item.path, set(functions))
        sources[item.student] = found
        units.extend(Unit(item.student, name, src) for name, src in found.items())
    shared = shared_sources(course, exercises, exclude)
    index = Index(units, shared, workers)
    behaviour = Behaviour(grades) if grades is not None else None
    candidates = index.candidates()
    if behaviour is not None:
        for group in behaviour.groups().values():
            group = sorted(s for s in group if s in sources)
            candidates.update((a, b) for i, a in enumerate(group) for b in group[i + 1 :])
    pairs = [compare(index, a, b, behaviour) for a, b in sorted(candidates)]
    pairs = sorted((p for p in pairs if p.score >= REPORTED), key=lambda p: (-p.score, p.a, p.b))
    return Similarity(
        students=[i.student for i in items],
        pairs=pairs,
        clusters=clusters(pairs),
        excluded=index.shared_counts,
        sources=sources,
        compared=len(candidates),
        functions=functions,
        behaviour=len(behaviour) if behaviour is not None else 0,
    )


def write(result, out, language="both"):
    """similarity.json and similarity.html in the folder `out`; returns their paths."""
    from ..store import write_atomic
    from .html import render_similarity

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    js, page = out / "similarity.json", out / "similarity.html"
    write_atomic(js, json.dumps(result.to_dict(), ensure_ascii=False, indent=1))
    write_atomic(page, render_similarity(result, language))
    return js, page


def cmd_similarity(args):
    """`seqgrader similarity`: the class's functions compared, similarity.json and similarity.html
    written into `args.out` and the flagged pairs printed (unless --quiet); returns 0."""
    from ..errors import GraderError

    if args.grades and not Path(args.grades).is_dir():
        raise GraderError(f"--grades {args.grades}: no such folder (give grade-batch's --out folder)")
    out = Path(args.out)
    result = analyse(
        args.submissions,
        args.course,
        args.assignment,
        args.exclude or (),
        args.grades,
        args.layout,
        skip=[out],
        workers=args.workers or os.cpu_count() or 1,
    )
    js, page = write(result, out, args.language)
    if not args.quiet:
        flagged = [p for p in result.pairs if p.score >= FLAG]
        print(
            f"{len(result.students)} submission(s), {result.compared} pair(s) compared, {len(flagged)} flagged "
            f"(score >= {FLAG:g}); {len(result.clusters)} cluster(s)"
            + (f"; behaviour recorded by grading for {result.behaviour} student(s)" if args.grades else "")
        )
        for p in flagged[:10]:
            print(f"  {p.score:.2f}  {p.a} - {p.b}  ({', '.join(sorted(p.functions))})")
        print(f"written: {js}, {page}")
    return 0


HELP = """\
Compare every student's contract functions with the same functions of the others and write, in
--out DIR (for the instructor only: it shows students' code side by side):

  similarity.json   {"pairs": [{"a", "b", "score", "functions": {fn: score}, "evidence": [...]}],
                     "clusters": [[...]], "excluded": [...]}, pairs highest score first
  similarity.html   the ranked pairs, the clusters, and each pair's functions side by side with
                    the matched regions aligned and highlighted, the evidence in words

A function is compared after renaming, without comments, docstrings, dead code or no-op
statements, with independent statements in one order, loops that build a list written as
comprehensions and single-use temporaries inlined. The starter code, the reference solutions,
the catalogued mistakes and the folders given with --exclude are never evidence, and what many
students of the class write counts less the more of them write it.

--grades DIR (grade-batch's --out folder) adds behaviour: two students whose function fails with
exactly the same outputs on the diagnosis' probes, from a mistake the catalogue does not hold.
Grading recorded those outputs; nothing is run again, and without --grades only code is compared.
grade-batch --similarity does both at the end of a batch. Nothing is ever executed here."""


def add_parser(sub):
    """Add the `similarity` subcommand to `sub`; returns its parser."""
    import argparse

    s = sub.add_parser(
        "similarity",
        help="the instructor's similarity (plagiarism) report of a class",
        description=HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    s.add_argument(
        "submissions",
        metavar="SUBMISSIONS",
        help="the folder grade-batch reads: nbgrader's course root or submitted/, or a flat folder",
    )
    s.add_argument("--out", metavar="DIR", default="similarity", help="output folder (default: ./similarity)")
    s.add_argument(
        "--assignment",
        metavar="NAME",
        help="the course.yml assignment whose functions are compared (default: the first), or "
        "nbgrader's assignment folder",
    )
    s.add_argument(
        "--exclude",
        metavar="DIR",
        nargs="+",
        action="extend",
        help="folders (or files) of known public code: what they hold is never evidence",
    )
    s.add_argument(
        "--grades", metavar="DIR", help="grade-batch's --out folder: also compare the wrong outputs grading recorded"
    )
    s.add_argument(
        "--layout",
        choices=["auto", "nbgrader", "flat"],
        default="auto",
        help="how SUBMISSIONS is organised (default: auto-detect)",
    )
    add_course_option(s)
    s.add_argument(
        "--workers",
        type=int,
        metavar="N",
        help="processes that read and fingerprint the functions (default: number of cores)",
    )
    s.add_argument("--language", choices=["zh", "en", "both"], default="both", help="language of the page")
    s.add_argument("-q", "--quiet", action="store_true", help="print nothing")
    s.set_defaults(func=cmd_similarity)
    return s
