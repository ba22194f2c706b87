import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def run_grade(submission, tmp_path, *extra):
    """Run the real command line; return (completed process, parsed JSON report)."""
    out = Path(tmp_path) / "report.json"
    proc = subprocess.run([sys.executable, "-m", "autograder", "grade", str(submission), "--json", str(out), *extra],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    report = json.loads(out.read_text(encoding="utf-8")) if out.exists() else None
    return proc, report


@pytest.fixture
def grade_cli(tmp_path):
    return lambda submission, *extra: run_grade(submission, tmp_path, *extra)
