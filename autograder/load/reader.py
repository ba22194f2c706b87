"""Reading a submission from a trusted process, in a child process with bounded memory and time.

A submission's files are the student's input: a notebook of 60 MiB, or one whose JSON is a
million tiny objects, or a list literal of a few MiB, costs its reader gigabytes (about 25 bytes
per byte of such JSON, 500 per byte of such code parsed by `ast`).  The trusted processes (a
grading process, its judges, the similarity report's processes) must keep a memory bound that no
submission can move, so they never parse a submission themselves:

    read_submission(path, functions)  -> Reading

forks a child that reads the files (`submission.read_sources`: code cells only, at most
MAX_CODE_BYTES of code a file, MAX_FILES files) and works out which of `functions` each of them
may call (`calls_between`), under an address-space limit of READ_MEMORY_MB beyond the process's
own size and a wall-clock limit of READ_SECONDS.  What comes back is JSON of bounded size.  A file
the child could not read within its memory is a load problem of that file; a child that died or
ran out of time makes every file one ("not graded" with the reason), never a crash of the grader.
Nothing here runs the student's code.
"""

import ast
import json
import os
import resource
import select
import signal
import time
from dataclasses import dataclass, field

from . import source

READ_MEMORY_MB = 512  # address space the reading child may add to what the process already maps
READ_SECONDS = 30.0
MAX_REPLY = 16 << 20  # bytes of JSON the child may send back (the code caps keep it far below)


@dataclass
class Reading:
    """What the judge knows of a submission without running it."""

    sources: list  # submission.read_sources' [(label, module name, file, [(chunk label, filename, code)])]
    errors: list  # the problems met reading it, one line each
    root: str  # the folder of the submission (its own folder for one file)
    files: list = field(default_factory=list)  # every code file of it (find_files), as str
    calls: dict = field(default_factory=dict)  # {function: [the `functions` it may call, itself included]}


def read_submission(path, functions=()):
    """The submission at `path`, read in a limited child process (see the module docstring)."""
    from .submission import find_files

    files = [str(p) for p in find_files(path)]  # raises SubmissionNotFound, with a clear message
    root = str(path if os.path.isdir(path) else os.path.dirname(os.path.abspath(path)))
    reply = run_limited(_read, str(path), sorted(set(functions)))
    if not isinstance(reply, dict) or not isinstance(reply.get("sources"), list):
        why = reply if isinstance(reply, str) else "its reader sent back nothing usable"
        return Reading([], [f"{os.path.basename(f)}: cannot be read ({why})" for f in files], root, files)
    return Reading(
        _sources(reply["sources"]),
        [str(e) for e in reply.get("errors", [])],
        str(reply.get("root", root)),
        files,
        {str(k): [str(n) for n in v] for k, v in (reply.get("calls") or {}).items()},
    )


def _sources(raw):
    return [
        (str(label), str(mod), str(filename), [(str(a), str(b), str(c)) for a, b, c in chunks])
        for label, mod, filename, chunks in raw
    ]


def _read(path, functions):
    """(In the child.)  The JSON-able reading of `path`."""
    from .submission import read_sources

    sources, errors, root = read_sources(path)
    try:
        calls = calls_between(sources, functions)
    except (MemoryError, RecursionError):
        calls = {}
    return {"sources": sources, "errors": errors, "root": root, "calls": calls}


def names_used(node):
    """Every name and attribute name that appears in `node` (loaded, stored or called)."""
    out = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name):
            out.add(n.id)
        elif isinstance(n, ast.Attribute):
            out.add(n.attr)
    return out


def calls_between(sources, functions):
    """{f: the functions among `functions` that f may reach by calling, f itself included}, for
    each f of `functions` the submission defines at top level, read from the source text (never
    run).  Generous on purpose: any name or attribute in a definition counts as a call of the
    top-level definition of that name in any file.  Unparsable text counts for nothing."""
    uses = {}
    for _label, _mod, _filename, chunks in sources:
        for _chunk, _fn, code in chunks:
            for node in source.parse(code).body:
                if isinstance(node, source.DEFINITIONS):
                    uses.setdefault(node.name, set()).update(names_used(node))
    wanted = set(functions)
    out = {}
    for name in sorted(wanted & set(uses)):
        seen, todo = {name}, [name]
        while todo:
            for ref in uses.get(todo.pop(), ()):
                if ref in uses and ref not in seen:
                    seen.add(ref)
                    todo.append(ref)
        out[name] = sorted(seen & wanted)
    return out


# ---------------------------------------------------------------- the limited child


def _status_kib(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def bound_memory(extra_mb):
    """Limit this process's address space to what it maps now plus `extra_mb` MiB: a trusted
    process that takes untrusted input (this module's reader, a judge) then meets a MemoryError
    where it would otherwise take the machine's memory.  Returns the limit in bytes."""
    limit = _status_kib("VmSize") * 1024 + (extra_mb << 20)
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard if hard != resource.RLIM_INFINITY else limit))
    return limit


def peak_mib():
    """The most memory this process has held so far (its resident peak, VmHWM), in MiB."""
    return round(_status_kib("VmHWM") / 1024, 1)


def run_limited(fn, *args, memory_mb=READ_MEMORY_MB, seconds=READ_SECONDS, max_reply=MAX_REPLY):
    """fn(*args) in a forked child under an address-space limit of `memory_mb` beyond this
    process's own and a wall-clock limit of `seconds`; its JSON-able result, or a str saying why
    there is none.  For trusted code that reads untrusted input (it never runs student code)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        try:
            os.close(r)
            bound_memory(memory_mb)
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
            try:
                reply = {"ok": fn(*args)}
            except MemoryError:
                reply = {"error": f"reading it needs more than {memory_mb} MiB of memory"}
            except RecursionError:
                reply = {"error": "it is nested too deeply to read"}
            data = json.dumps(reply).encode()  # ASCII: a file name that is not UTF-8 survives
            if len(data) > max_reply:
                data = json.dumps({"error": f"what it holds is larger than {max_reply >> 20} MiB"}).encode()
            view = memoryview(data)
            while view:
                view = view[os.write(w, view) :]
        except BaseException:  # noqa: BLE001 - the parent sees a reply that is not there
            pass
        finally:
            os._exit(0)
    os.close(w)
    chunks, size, deadline, why = [], 0, time.monotonic() + seconds, None
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([r], [], [], left)[0]:
                why = f"reading it did not finish within {seconds:g} s"
                break
            chunk = os.read(r, 1 << 20)
            if not chunk:
                break
            size += len(chunk)
            if size > max_reply + 1024:
                why = f"what it holds is larger than {max_reply >> 20} MiB"
                break
            chunks.append(chunk)
    finally:
        os.close(r)
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        _, status = os.waitpid(pid, 0)
    if why is not None:
        return why
    try:
        reply = json.loads(b"".join(chunks))
    except ValueError:
        sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
        return f"its reader ended with signal {sig}" if sig else "its reader ended without a reply"
    if isinstance(reply, dict) and "ok" in reply:
        return reply["ok"]
    return str(reply.get("error", "?")) if isinstance(reply, dict) else "?"
