"""Grade the held-out student mistakes of tests/files/heldout_contract/cases.yml and tabulate what the grader said.

The cases were written from the contract alone, without looking at the grader's catalogue of mistakes.
Each case becomes one student folder (every reference solution, the case's function replaced: see
tests/heldout_contract.py); the cases of one assignment are graded by one run of the real CLI,

    python -m autograder grade-batch <work>/<assignment> --out <work>/<assignment>/grades \\
        --assignment <assignment> --layout nbgrader --workers N

(nbgrader's layout, <work>/<assignment>/submitted/<case id>/<assignment>/*.py, since --assignment needs it)

and the reports (<out>/reports/<case id>.json) are read back. For a wrong case the verdict is

    caught     it lost points in its own exercise and nowhere else
    missed     full marks everywhere
    elsewhere  it lost points in another exercise (the reference code there is untouched: a grader bug)
    error      the submission could not be graded (status "error: ...")

and for a caught one, what the report said in the failed tests of its exercise:

    named      a catalogued mistake is named (a test's "diagnosis" entry: its id and title)
    explained  no name, but some other diagnosis-like field (e.g. "explained_by_part") explains it
    silent     neither: only the failed properties

A correct variant is "ok" at full marks, "lost" otherwise. One line per case (id, verdict, what the
report said, and the writer's own sentence, so that a person can judge whether a name is right), then a
summary table per exercise. grade-batch is resumable: a second run over the same --work folder grades only
what changed (--force regrades).

    .venv/bin/python bench/diagnosis_heldout.py --workers 2 --json /tmp/heldout.json
    .venv/bin/python bench/diagnosis_heldout.py --exercise masks --exercise rope
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests import heldout_contract  # noqa: E402

# keys of the diagnosis entries themselves, not diagnosis fields of a test or exercise
_ENTRY_KEYS = {"explanation_zh", "explanation_en"}


def assignments(course: Path) -> dict[str, list[str]]:
    """course.yml's assignments: name -> exercise ids, in order."""
    return yaml.safe_load(course.read_text(encoding="utf-8"))["assignments"]


def assignment_of(exercise: str, assigned: dict[str, list[str]]) -> str:
    for name, exercises in assigned.items():
        if exercise in exercises:
            return name
    raise SystemExit(f"exercise {exercise!r} is in no assignment of course.yml")


def grade(assignment: str, cases: list[dict], work: Path, workers: int, force: bool, python: str) -> float:
    """One grade-batch run over the assignment's cases (one student folder each); returns its seconds."""
    root = work / assignment  # nbgrader's layout: submitted/<student>/<assignment>/ (one student per case)
    subs = root / "submitted"
    subs.mkdir(parents=True, exist_ok=True)
    wanted = {c["id"] for c in cases}
    for old in subs.iterdir():  # a case removed or filtered out: not graded this time
        if old.name not in wanted:
            shutil.rmtree(old)
    for case in cases:
        folder = subs / case["id"] / assignment
        if folder.exists():
            shutil.rmtree(folder)
        heldout_contract.submission(case, folder)
    cmd = [
        python,
        "-m",
        "autograder",
        "grade-batch",
        str(root),
        "--out",
        str(root / "grades"),
        "--assignment",
        assignment,
        "--layout",
        "nbgrader",
        "--workers",
        str(workers),
        "-q",
    ]
    if force:
        cmd.append("--force")
    print(f"# {assignment}: {len(cases)} cases: {' '.join(cmd)}", flush=True)
    t0 = time.monotonic()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    seconds = time.monotonic() - t0
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout[-4000:] + proc.stderr[-4000:])
        raise SystemExit(f"grade-batch for {assignment} exited {proc.returncode}")
    print(f"#   graded in {seconds:.0f} s", flush=True)
    return seconds


def _other_diagnosis_fields(node, path=""):
    """Every (path, value) of a key that looks like a diagnosis (diagnos*, explain*) other than "diagnosis"."""
    found = []
    if isinstance(node, dict):
        for k, v in node.items():
            here = f"{path}.{k}" if path else k
            low = k.lower()
            if k != "diagnosis" and k not in _ENTRY_KEYS and ("diagnos" in low or "explain" in low) and v:
                found.append((here, v))
            elif k not in ("diagnosis", "counterexample", "details"):
                found.extend(_other_diagnosis_fields(v, here))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            found.extend(_other_diagnosis_fields(v, f"{path}[{i}]"))
    return found


def _short(value, limit=160) -> str:
    if isinstance(value, dict):
        text = (
            value.get("title_en")
            or value.get("en")
            or value.get("explanation_en")
            or json.dumps(value, ensure_ascii=False)
        )
    elif isinstance(value, list):
        text = "; ".join(_short(v, limit) for v in value)
    else:
        text = str(value)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def judge(case: dict, report: dict | None) -> dict:
    """The verdict of one case from its report."""
    row = {k: case[k] for k in ("id", "exercise", "function", "correct", "part", "what")}
    if (
        report is None
        or report.get("graded") is False
        or str(report.get("batch", {}).get("status", "graded")) != "graded"
    ):
        status = None if report is None else report.get("batch", {}).get("status") or report.get("not_graded_reason")
        row.update(verdict="error", lost={}, diagnosis="-", names=[], explained=[], failed=[], note=str(status))
        return row
    lost = {e["id"]: round(e["max_score"] - e["score"], 3) for e in report["exercises"] if e["score"] < e["max_score"]}
    own = next(e for e in report["exercises"] if e["id"] == case["exercise"])
    failed = [t for t in own.get("tests", []) if not t.get("passed")]
    names, seen = [], set()
    for t in failed:
        for d in t.get("diagnosis") or []:
            key = d.get("id")
            if key not in seen:
                seen.add(key)
                names.append({"id": key, "title": d.get("title_en"), "function": d.get("function")})
    explained = _other_diagnosis_fields(own)
    row.update(
        lost=lost,
        failed=[f"{t['name']} ({t.get('score', 0)}/{t.get('max_score')})" for t in failed],
        names=names,
        explained=[[p, v] for p, v in explained],
        note="",
    )
    if case["correct"]:
        row["verdict"] = "ok" if not lost else "lost"
        row["diagnosis"] = "-"
        return row
    others = {k: v for k, v in lost.items() if k != case["exercise"]}
    if others:
        row["verdict"] = "elsewhere"
    elif case["exercise"] in lost:
        row["verdict"] = "caught"
    else:
        row["verdict"] = "missed"
    if case["exercise"] in lost:
        row["diagnosis"] = "named" if names else "explained" if explained else "silent"
    else:
        row["diagnosis"] = "-"
    return row


def line(row: dict) -> str:
    said = ""
    if row["names"]:
        said = " | ".join(f"{n['id']}: {n['title']}" for n in row["names"])
    elif row["explained"]:
        said = " | ".join(f"{p}: {_short(v)}" for p, v in row["explained"][:3])
    elif row["verdict"] in ("caught", "elsewhere", "lost"):
        said = "failed: " + ", ".join(f.split(" (")[0].split("/", 1)[1] for f in row["failed"][:4])
    if row["verdict"] == "elsewhere":
        said = f"lost in {row['lost']}; " + said
    if row["verdict"] == "error":
        said = row["note"]
    part = row["part"] or "correct"
    return f"{row['id']:<38} {row['verdict']:<9} {row['diagnosis']:<9} [{part}] {said}\n{'':<38} writer: {row['what']}"


def summary(rows: list[dict], order: list[str]) -> str:
    cols = ["cases", "caught", "missed", "elsewhere", "error", "named", "explained", "silent", "correct", "ok"]
    table = defaultdict(lambda: dict.fromkeys(cols, 0))
    for r in rows:
        t = table[r["exercise"]]
        if r["correct"]:
            t["correct"] += 1
            t["ok"] += r["verdict"] == "ok"
        else:
            t["cases"] += 1
            t[r["verdict"]] += 1
            if r["diagnosis"] in ("named", "explained", "silent"):
                t[r["diagnosis"]] += 1
    total = dict.fromkeys(cols, 0)
    out = [f"{'exercise':<20}" + "".join(f"{c:>10}" for c in cols)]
    for ex in [e for e in order if e in table]:
        out.append(f"{ex:<20}" + "".join(f"{table[ex][c]:>10}" for c in cols))
        for c in cols:
            total[c] += table[ex][c]
    out.append(f"{'total':<20}" + "".join(f"{total[c]:>10}" for c in cols))
    return "\n".join(out)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--workers", type=int, default=2, help="grade-batch --workers (default 2)")
    p.add_argument(
        "--exercise",
        action="append",
        default=[],
        metavar="X",
        help="only the cases of exercise X (repeatable, or comma-separated)",
    )
    p.add_argument(
        "--case", action="append", default=[], metavar="ID", help="only the cases whose id contains ID (repeatable)"
    )
    p.add_argument("--json", type=Path, metavar="OUT", help="write every case's verdict and the summary to OUT")
    p.add_argument(
        "--work",
        type=Path,
        default=Path(tempfile.gettempdir()) / "seqgrader-heldout-contract",
        help="folder for the submissions and grade-batch's output (kept: a second run resumes)",
    )
    p.add_argument("--force", action="store_true", help="regrade everything (grade-batch --force)")
    p.add_argument(
        "--python",
        default=str(ROOT / ".venv" / "bin" / "python"),
        help="the interpreter that runs the grader (default: the repository's .venv)",
    )
    p.add_argument("--cases", type=Path, default=heldout_contract.CASES, help="the cases file")
    args = p.parse_args(argv)

    assigned = assignments(ROOT / "course.yml")
    order = [e for exs in assigned.values() for e in exs]
    wanted = {x for arg in args.exercise for x in arg.split(",") if x}
    unknown = wanted - set(order)
    if unknown:
        p.error(f"unknown exercise(s): {sorted(unknown)}; course.yml has {order}")
    cases = [
        c
        for c in heldout_contract.cases(path=args.cases)
        if (not wanted or c["exercise"] in wanted) and (not args.case or any(s in c["id"] for s in args.case))
    ]
    if not cases:
        p.error("no case selected")
    by_assignment = defaultdict(list)
    for c in cases:
        by_assignment[assignment_of(c["exercise"], assigned)].append(c)

    seconds = {}
    for name in assigned:
        if by_assignment.get(name):
            seconds[name] = round(grade(name, by_assignment[name], args.work, args.workers, args.force, args.python), 1)

    rows = []
    for name, group in by_assignment.items():
        reports = args.work / name / "grades" / "reports"
        for c in group:
            f = reports / f"{c['id']}.json"
            rows.append(judge(c, json.loads(f.read_text(encoding="utf-8")) if f.is_file() else None))
    rows.sort(key=lambda r: (order.index(r["exercise"]), r["correct"], r["id"]))

    print()
    for r in rows:
        print(line(r))
    print()
    table = summary(rows, order)
    print(table)
    bad = [
        r for r in rows if (r["correct"] and r["verdict"] != "ok") or (not r["correct"] and r["verdict"] != "caught")
    ]
    if bad:
        print("\nto look at:")
        for r in bad:
            print(f"  {r['id']} ({r['verdict']}): {r['what']}")
    if args.json:
        args.json.write_text(
            json.dumps({"seconds": seconds, "cases": rows, "summary": table}, indent=1, ensure_ascii=False),
            encoding="utf-8",
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
