"""Benchmark: how long `grade` takes on a full submission, beyond importing torch.

    .venv/bin/python bench/grade_speed.py [--runs 3] [SUBMISSION]

Prints the wall time of `python -c "import torch"`, of the whole `grade` command, and per
exercise (the time each forked child took, from the JSON report's timing), as the median of
--runs runs.  Default submission: solutions/.
"""
import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def timed(cmd):
    t = time.perf_counter()
    subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True)
    return time.perf_counter() - t


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("submission", nargs="?", default=str(ROOT / "solutions"))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--workers", type=int, default=None)
    args = ap.parse_args()
    py = sys.executable
    imp = [timed([py, "-c", "import torch"]) for _ in range(args.runs)]
    out = Path(tempfile.mkdtemp()) / "r.json"
    cmd = [py, "-m", "autograder", "grade", args.submission, "--json", str(out), "-q"]
    if args.workers:
        cmd += ["--workers", str(args.workers)]
    full = [timed(cmd) for _ in range(args.runs)]
    report = json.loads(out.read_text())
    print(f"submission           {args.submission}  (score {report['score']:g}/{report['max_score']:g})")
    print(f"import torch         {statistics.median(imp):6.2f} s  (median of {args.runs})")
    print(f"grade, whole command {statistics.median(full):6.2f} s")
    print(f"grade beyond torch   {statistics.median(full) - statistics.median(imp):6.2f} s")
    print(f"grading inside       {report['seconds']:6.2f} s  (last run, from the report)")


if __name__ == "__main__":
    main()
