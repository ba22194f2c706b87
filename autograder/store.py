"""What grade-batch writes and remembers, shared by the batch and the dashboard (no import of either):

    grader_version()      __version__ plus a hash of the package's code and data
    submission_files()    the regular files of a submission (hidden and cache folders left out)
    settings_digest()     what, besides the submission, decides a report
    resume_key()          a hash of the submission's bytes and the settings: a report that records
                          the same key is kept (resume)
    write_atomic()        a file written through a temp file and os.replace: never half a file
    remove_stale_temp_files()   the temp files a killed batch left behind
    lock_folder()         one grade-batch at a time per output folder

The hidden-name rule (``hidden``) is the one discovery and the loader follow: dot-files and the
cache folders of SKIP_DIRS are never a submission's.
"""

import hashlib
import json
import os
import tempfile
from datetime import datetime
from pathlib import Path

from . import __version__
from .errors import GraderError
from .safe import one_line  # noqa: F401 - the batch imports it from here

PACKAGE_DIR = Path(__file__).resolve().parent
SKIP_DIRS = {"__pycache__", ".ipynb_checkpoints", ".git", ".venv", "node_modules"}  # as load/ does


def hidden(name):
    """True for a name a submission's walk leaves out: a dot name or one of SKIP_DIRS."""
    return name.startswith(".") or name in SKIP_DIRS


# ---------------------------------------------------------------- resume keys

_GRADER_VERSION = None


def grader_version():
    """__version__ plus a hash of the package's code and data: any change to the grader counts."""
    global _GRADER_VERSION
    if _GRADER_VERSION is None:
        h = hashlib.sha256()
        for p in sorted(PACKAGE_DIR.rglob("*")):
            rel = p.relative_to(PACKAGE_DIR)
            if p.is_file() and p.suffix in (".py", ".yml", ".yaml") and not any(hidden(x) for x in rel.parts):
                h.update(f"{rel.as_posix()}\0".encode())
                h.update(p.read_bytes())
        _GRADER_VERSION = f"{__version__}+{h.hexdigest()[:12]}"
    return _GRADER_VERSION


def submission_files(path):
    """[(relative name, Path)] of every regular file of a submission (hidden/cache folders left out)."""
    path = Path(path)
    if path.is_file() and not path.is_symlink():
        return [(path.name, path)]
    if not path.is_dir() or path.is_symlink():
        return []
    from .load.submission import _walk

    out = []
    for p in sorted(_walk(path)):  # links never followed, but the built-in course's own (load/submission.course_link)
        rel = p.relative_to(path)
        if not any(hidden(x) for x in rel.parts):
            out.append((rel.as_posix(), p))
    return out


def settings_digest(course_file, course, exercises):
    """What, besides the submission, decides a report: course.yml's bytes, the effective course
    (after --language / --max-examples), the exercises graded, and the grader's version."""
    payload = {
        "grader": grader_version(),
        "course_file": hashlib.sha256(Path(course_file).read_bytes()).hexdigest(),
        "course": course.model_dump(mode="json"),
        "exercises": list(exercises),
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def resume_key(path, settings):
    """A hash of the submission's files (their names, sizes and bytes) and `settings`, read a
    MiB at a time; a file larger than any the loader reads counts by its size and time only."""
    from .load.submission import MAX_FILE_BYTES

    h = hashlib.sha256(settings.encode())
    h.update(b"file\0" if Path(path).is_file() else b"dir\0")
    for rel, p in submission_files(path):
        st = p.stat()
        h.update(os.fsencode(rel) + f"\0{st.st_size}\0".encode())
        if st.st_size > MAX_FILE_BYTES:
            h.update(f"{st.st_mtime_ns}\0".encode())
            continue
        with open(p, "rb") as f:
            while chunk := f.read(1 << 20):
                h.update(chunk)
    return h.hexdigest()


# ---------------------------------------------------------------- files

_UMASK = os.umask(0o022)
os.umask(_UMASK)


def write_atomic(path, text):
    """Write `text` to `path` through a temp file in the same folder and os.replace: a killed
    batch leaves either the old file or the new one, never half a file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.chmod(tmp, 0o666 & ~_UMASK)  # mkstemp makes it 0600; the result is an ordinary file
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def remove_stale_temp_files(out):
    """Temp files a killed batch left behind (never mistaken for reports: they start with a dot)."""
    n = 0
    for p in Path(out).rglob(".*.tmp"):
        try:
            p.unlink()
            n += 1
        except OSError:
            pass
    return n


def lock_folder(out):
    """An exclusive lock on the output folder `out` (held while the returned file is open)."""
    import fcntl

    f = open(Path(out) / ".grade-batch.lock", "w")
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        f.close()
        raise GraderError(f"another grade-batch is writing to {out}; wait for it or use another --out") from None
    return f


def now():
    """The local time in ISO 8601, to the second."""
    return datetime.now().isoformat(timespec="seconds")
