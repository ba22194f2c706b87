"""`python -m autograder nbgrader-course DIR`: build a ready nbgrader course."""
import sys
from pathlib import Path


def cmd_nbgrader_course(args):
    from ..config import DEFAULT_COURSE, load_course
    from .build import build_course

    course_file = Path(args.course) if args.course else DEFAULT_COURSE
    course = load_course(course_file)
    built = build_course(args.dir, course, course_file, assignments=args.assignment, force=args.force,
                         course_id=args.course_id)
    out = Path(args.dir).resolve()
    for name, paths in built.items():
        print(f"source/{name}/: " + ", ".join(p.name for p in paths))
    first = next(iter(built))
    print(f"""
nbgrader course written to {out}
Next (in {out}):
  nbgrader generate_assignment {first}      # release/{first}/: stubs, no solutions
  # students submit into submitted/<student>/{first}/ (or nbgrader collect)
  nbgrader autograde {first}                # hidden properties in seqgrader's sandbox
  nbgrader generate_feedback {first}        # feedback/<student>/{first}/*.html
  nbgrader export                           # grades.csv
or, faster for a whole class:
  python -m autograder grade-batch submitted --assignment {first} --gradebook {out / 'gradebook.db'}""",
          file=sys.stderr)
    return 0


def cmd_nbgrader_gradebook(args):
    from .gradebook import read_batch, write_reports

    reports = read_batch(args.grades)
    totals = write_reports(args.course_dir, args.assignment, reports, course_id=args.course_id)
    flagged = [s for s, r in reports.items() if r.get("batch", {}).get("status", "graded") != "graded"]
    print(f"wrote {len(totals)} submission(s) of {args.assignment!r} into {Path(args.course_dir) / 'gradebook.db'}"
          + (f"; flagged for manual grading (not graded): {', '.join(sorted(flagged))}" if flagged else ""),
          file=sys.stderr)
    return 0


def add_parser(sub):
    p = sub.add_parser("nbgrader-course", help="build a ready nbgrader course from exercises/, solutions/, course.yml",
                       description="Write DIR/nbgrader_config.py, DIR/course.yml and DIR/source/<assignment>/ "
                                   "(one notebook per exercise, the reference solutions in solution regions, "
                                   "one locked hidden-tests cell per function). See README, 'nbgrader'.")
    p.add_argument("dir", metavar="DIR", help="the course folder (created; nbgrader's CourseDirectory.root)")
    p.add_argument("--course", metavar="YML", help="course file (default: course.yml of this repo)")
    p.add_argument("--assignment", action="append", metavar="NAME",
                   help="only this course.yml assignment (repeatable; default: all)")
    p.add_argument("--course-id", default="seqgrader", help="nbgrader course id (default: seqgrader)")
    p.add_argument("--force", action="store_true", help="rewrite source/ in an existing course folder")
    p.set_defaults(func=cmd_nbgrader_course)

    g = sub.add_parser("nbgrader-gradebook", help="write grade-batch's scores into an nbgrader gradebook",
                       description="Read GRADES/reports/*.json (grade-batch's output) and write each student's "
                                   "points, feedback comments and errors into COURSE_DIR/gradebook.db with "
                                   "nbgrader's API, so formgrader and `nbgrader export` show them.")
    g.add_argument("grades", metavar="GRADES", help="grade-batch's output folder (--out)")
    g.add_argument("--course-dir", required=True, metavar="DIR", help="the nbgrader course folder")
    g.add_argument("--assignment", required=True, metavar="NAME", help="the nbgrader assignment")
    g.add_argument("--course-id", default="seqgrader", help="nbgrader course id (default: seqgrader)")
    g.set_defaults(func=cmd_nbgrader_gradebook)
