"""The sandbox server: a clean process that every worker descends from.

    grade / a grade-batch process / nbgrader's SandboxGrade / the service   (trusted: holds
    │                                  course.yml, the properties, earlier students' reports)
    ├── judge (forked per exercise) ─── its own socket ───┐
    └── sandbox server  (`python -m autograder.sandbox.server`, started with a scrubbed
        │                environment and cwd /: it holds torch, numpy, matplotlib and the
        │                worker's own modules, and nothing else of the grader)
        └── zygote  (forked per judge; holds this submission's sources and nothing more)
              └── worker  (forked per start: limits, its own filesystem view, then student code)

Why a process of its own, started by exec: a forked process holds the whole memory of its
parent, and student code can read its own memory (walking `sys._getframe()` up into the judge's
frames, or with ctypes).  A worker forked from a judge reached the property modules and their
reference helpers that way, and a worker forked from a batch process could find the reports of
the students graded before.  A worker descended from this server can find nothing but torch and
its own submission, whatever it reads.  It costs one `import torch` per grading process, which
`prestart()` runs beside the caller's own work.  Where the server cannot start, `connect()`
returns None and nothing is graded (judge.remote.SandboxUnavailable).

Messages are protocol.py frames, the one format between the grader's processes; a socket passed
to another process travels with a frame's first bytes (SCM_RIGHTS):

    the server's socket (SOCK_SEQPACKET: the judges forked from one process share it, and a
    datagram is never interleaved with another's; one frame a datagram)
        server -> its owner, once    {"ready": {"pid", "problems"}}
        judge -> server              {"open": {"train": bool}} + the zygote's end of a new socket pair
    a zygote's socket (a stream, one judge's)
        judge -> zygote, first       {"init": {"sources", "errors", "root", "roots", "limit_options"}}
                                     + the code of the sources, one uint8 array each
        judge -> zygote              {"spawn": {"skip", "focus", "needed", "devices"}}
        zygote -> judge              {"pid": pid} + the worker's socket
        judge -> zygote              {"reap": pid, "grace": seconds}
        zygote -> judge              {"status": "exit 0" / "signal SIGKILL" / ..., "cpu": seconds}
"""

import gc
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time

from . import protocol as P

READY_TIMEOUT = 90.0  # seconds to wait for the server's start-up (an import of torch on a loaded machine)
PR_SET_PDEATHSIG = 1

_SERVER = None  # this process's server (judges forked from it share it)


PR_SET_CHILD_SUBREAPER = 36


def _prctl_pdeathsig():
    from .kernel import prctl

    try:
        prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL))
    except (OSError, AttributeError):
        pass


# ---------------------------------------------------------------- the judge's side


def _package_parent():
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def server_environment():
    """The whole environment of the server (and so of every worker): nothing of the caller's but
    HOME (for user site-packages), the matplotlib cache (fonts already indexed), what decides which
    GPUs a device worker sees (devices.show: the CUDA_VISIBLE_DEVICES the grader was started with,
    not the empty one of the grading process) and the autograd check of forkcheck.py."""
    from . import devices
    from .forkcheck import LOG, MODE, ROOT

    home = os.environ.get("HOME") or "/"
    mpl = os.environ.get("MPLCONFIGDIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(home, ".cache"), "matplotlib"
    )
    check = {k: os.environ[k] for k in (MODE, LOG, ROOT) if k in os.environ}
    return devices.show({**check, **_environment(home, mpl)})


def _environment(home, mpl):
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "HOME": home,
        "PYTHONPATH": _package_parent(),  # the grader itself, when it is not installed
        "PYTHONHASHSEED": "0",  # the same submission, the same set and dict orders, every time
        "PYTHONDONTWRITEBYTECODE": "1",
        "MPLBACKEND": "Agg",
        "MPLCONFIGDIR": mpl,
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
    }


class Server:
    """The judge-side handle of a running server: `python -m autograder.sandbox.server` with
    server_environment(), clean by construction."""

    def __init__(self):
        self.sock, child_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.owner = os.getpid()
        self.info = None
        self.error = None
        cmd = [sys.executable, "-P", "-m", "autograder.sandbox.server", str(child_end.fileno()), str(os.getpid())]
        debug = os.environ.get("SEQGRADER_SERVER_DEBUG")
        try:
            self.proc = subprocess.Popen(
                cmd,
                pass_fds=[child_end.fileno()],
                cwd="/",
                env=server_environment(),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=None if debug else subprocess.DEVNULL,
                start_new_session=True,
            )
        finally:
            child_end.close()

    def wait_ready(self, timeout=READY_TIMEOUT):
        """True once the server said it is ready; False (with self.error) if it never will."""
        if self.info is not None:
            return True
        if self.error is not None:
            return False
        if os.getpid() != self.owner:
            # a judge forked before its parent waited: only one process may read the one "ready"
            # message; requests sent before the server is ready simply wait in its socket
            return True
        import select

        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                self.error = f"the sandbox server did not start within {timeout:g} s"
                break
            ready, _, _ = select.select([self.sock], [], [], left)
            if not ready:
                continue
            try:
                header, _ = P.parse(self.sock.recv(65536))
            except OSError as e:
                header, self.error = {}, f"the sandbox server failed to start ({e.strerror})"
            except P.ProtocolError:
                header = {}
            if isinstance(header.get("ready"), dict):
                self.info = header["ready"]
                return True
            self.error = self.error or f"the sandbox server failed to start (exit status {self.proc.poll()})"
            break
        self.stop()
        return False

    def open(self, train=False):
        """A fresh zygote in the server; returns the judge's end of its socket."""
        judge_end, zygote_end = socket.socketpair()
        try:
            P.send(self.sock, {"open": {"train": bool(train)}}, fds=[zygote_end.fileno()])
        except OSError:
            judge_end.close()
            raise
        finally:
            zygote_end.close()
        return judge_end

    def alive(self):
        """True unless the server failed or, seen from its owner, its process ended."""
        return self.error is None and (os.getpid() != self.owner or self.proc.poll() is None)

    def stop(self):
        """Close the socket and kill the server, waiting up to 5 s; a judge forked from the owner
        leaves it alone."""
        if os.getpid() != self.owner:
            return  # a judge forked from the owner: the server is not ours to stop
        try:
            self.sock.close()
        except OSError:
            pass
        if self.proc.poll() is None:
            self.proc.kill()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass


def prestart():
    """Start this process's server now (without waiting for it): call it as early as possible.
    Never raises."""
    global _SERVER
    from .devices import hide

    hide()  # before anything asks about CUDA: no grader process sees a GPU (devices.py)
    if _SERVER is None or not _SERVER.alive():
        try:
            _SERVER = Server()
        except Exception as e:  # noqa: BLE001 - no server: nothing is graded, and the reason says why
            _SERVER = _Failed(f"the sandbox server could not be started ({type(e).__name__}: {e})")
    return _SERVER


def connect(timeout=READY_TIMEOUT):
    """This process's server, started if need be and ready; None if there can be none here
    (then `reason()` says why)."""
    server = prestart()
    if isinstance(server, _Failed) or not server.wait_ready(timeout):
        return None
    return server


def reason():
    """Why connect() returned None."""
    return getattr(_SERVER, "error", None) or "no sandbox server"


def shutdown():
    """Stop this process's server (tests; a process's server otherwise dies with it)."""
    global _SERVER
    if isinstance(_SERVER, Server):
        _SERVER.stop()
    _SERVER = None


class _Failed:
    def __init__(self, error):
        self.error = error

    def alive(self):
        return False


def send_init(sock, init):
    """The first frame a zygote reads: `init` with each chunk's code as a uint8 array (bytes, so
    any text travels exactly; the submission's reader caps how much there is)."""
    import numpy as np

    arrays, sources = [], []
    for label, modname, filename, chunks in init["sources"]:
        listed = []
        for chunk_label, chunk_file, code in chunks:
            arrays.append(np.frombuffer(code.encode("utf-8", "surrogatepass"), dtype=np.uint8))
            listed.append([chunk_label, chunk_file, len(arrays) - 1])
        sources.append([label, modname, filename, listed])
    P.send(sock, {"init": dict(init, sources=sources)}, arrays)


def _read_init(init, arrays):
    """The zygote's side of send_init: (sources, errors, root, roots, limit_options)."""
    sources = [
        (
            str(label),
            str(modname),
            str(filename),
            [(str(a), str(b), bytes(arrays[int(i)]).decode("utf-8", "surrogatepass")) for a, b, i in chunks],
        )
        for label, modname, filename, chunks in init["sources"]
    ]
    return (
        sources,
        list(init.get("errors", [])),
        init.get("root"),
        list(init.get("roots", [])),
        init.get("limit_options"),
    )


# ---------------------------------------------------------------- the server's side


def warm_forward():
    """torch's lazy imports and the kernels the exercises use, forward only: a process that forks
    must never run a backward pass (on a machine with CUDA its children could not run one: see
    devices.py and forkcheck.py) nor start CUDA, and this asks neither."""
    import torch

    x = torch.randn(2, 3, 4, generator=torch.Generator().manual_seed(0), requires_grad=True)
    y = torch.softmax(x @ x.transpose(-2, -1) / 2, dim=-1).masked_fill(torch.ones(3, 3, dtype=torch.bool).tril(), 0)
    torch.nn.functional.cross_entropy(x.reshape(-1, 4), torch.zeros(6, dtype=torch.long)) + y.sum()
    torch.tanh(torch.sigmoid(x)).double().float()
    torch.nn.functional.scaled_dot_product_attention(x, x, x)
    torch.nn.functional.log_softmax(x, -1)
    from ..checks.elsewhere import Place, put_elsewhere

    place = Place()  # the simulated device's modes, as a device probe uses them
    with place.active():
        lengths = place.put(put_elsewhere(torch.tensor([2, 1])))
        (torch.arange(2, device=lengths.device)[None] < lengths[:, None]).tolist()


def _warm_up():
    """What every worker would otherwise pay on its first call: torch's lazy imports, the kernels
    the exercises use (forward only: see warm_forward), matplotlib (notebooks draw) and the
    worker's own modules."""
    import torch

    from .devices import unseen

    torch.set_num_threads(1)  # before forking: OpenMP pools do not survive fork
    with unseen():
        warm_forward()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot  # noqa: F401

    from ..load import submission  # noqa: F401
    from . import kernel, limits, protocol, view, worker  # noqa: F401

    view.view_plan()  # what the workers' filesystem view holds: worked out once
    try:
        kernel._seccomp()  # libseccomp, loaded once: a confined worker need not read it
    except OSError:
        pass  # each worker says so (levels' problems), and the sandbox is weak there


_OPTIM_WARM = False


def _warm_up_optimizers():
    """torch's first optimiser step imports torch._dynamo (~1.6 s): once, for exercises that train."""
    global _OPTIM_WARM
    if _OPTIM_WARM:
        return
    _OPTIM_WARM = True
    warm_optimizers()
    gc.collect()
    gc.freeze()


def warm_optimizers():
    """One step of each optimiser the exercises use, with a gradient set by hand: the imports of
    a first step (torch._dynamo, torch._inductor) without a backward pass (see warm_forward), and
    without the GPU they check as they load (devices.unseen: this process forks afterwards)."""
    from .devices import unseen

    with unseen():
        _optimizer_steps()


def _optimizer_steps():
    import torch

    p = torch.zeros(2, requires_grad=True)
    for opt in (torch.optim.Adam([p], lr=0.1), torch.optim.SGD([p], lr=0.1), torch.optim.AdamW([p], lr=0.1)):
        opt.zero_grad()
        p.grad = torch.ones_like(p)
        opt.step()


def main(fd, owner):
    """The server's process (`fd`: its socket to `owner`, the process that started it): torch warmed
    up, "ready" said, then a zygote forked per "open" until every judge is gone; never returns."""
    from .forkcheck import role

    role("server")
    _prctl_pdeathsig()
    if os.getppid() != owner:
        os._exit(1)  # the process that started us is gone already
    sock = socket.socket(fileno=fd)
    problems = []
    try:
        _warm_up()
    except Exception as e:  # noqa: BLE001 - say so: the judges fall back
        problems.append(f"warm-up: {type(e).__name__}: {e}")
    sys.argv = ["seqgrader-sandbox"]
    gc.collect()
    gc.freeze()  # zygotes and workers never traverse (nor copy on write) these objects
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # zygotes are reaped by the kernel
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    P.send(sock, {"ready": {"pid": os.getpid(), "problems": problems}})
    while True:
        try:
            msg, fds, _flags, _addr = socket.recv_fds(sock, 65536, 4)
        except InterruptedError:
            continue
        except OSError:
            break
        if not msg and not fds:
            break  # every judge and the owner are gone
        for extra in fds[1:]:
            os.close(extra)
        try:
            request = P.parse(msg)[0].get("open")
        except P.ProtocolError:
            request = None
        if not fds:
            continue
        if not isinstance(request, dict):
            os.close(fds[0])
            continue
        if request.get("train"):
            try:
                _warm_up_optimizers()
            except Exception:  # noqa: BLE001 - a slower first step, nothing worse
                pass
        try:
            pid = os.fork()
        except OSError:
            os.close(fds[0])  # the judge sees EOF and falls back
            continue
        if pid == 0:
            try:
                sock.close()
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # the zygote waits for its workers
                signal.signal(signal.SIGINT, signal.SIG_DFL)
                _prctl_pdeathsig()
                serve_zygote(socket.socket(fileno=fds[0]))
            finally:
                os._exit(0)
        os.close(fds[0])
    os._exit(0)


def serve_zygote(sock):
    """A zygote: read the init frame, then fork workers for the judge and reap them."""
    from .forkcheck import role

    role("zygote")
    channel = P.Channel(sock, buffered=False)
    try:
        header, arrays = channel.recv()
        zygote_loop(channel, *_read_init(header["init"], arrays))
    except (P.ProtocolError, OSError, KeyError, TypeError, ValueError, IndexError):
        return  # the judge sees the socket close: SandboxUnavailable


def zygote_loop(channel, sources, errors, root, roots, limit_options):
    """Fork a worker on each "spawn", kill and reap it on "reap"; on EOF kill every worker.  A child
    subreaper: whatever a worker leaves behind becomes this zygote's child when its parent dies,
    and is killed with the worker (worker.kill_orphans), where no cgroup or uid can reach it."""
    from .kernel import prctl
    from .worker import kill_and_wait, kill_orphans, worker_main

    try:
        prctl(PR_SET_CHILD_SUBREAPER, 1)
    except OSError:
        pass  # the watchdog, the cgroup or the uid still reach them where there is one

    sock, workdirs = channel.sock, {}
    while True:
        try:
            header, _ = channel.recv()
        except (P.ProtocolError, OSError):
            break
        if isinstance(header.get("spawn"), dict):
            # {"skip": statements that ran out of time before, "focus": the exercise, "needed": the
            # names it needs (see load.exec_sources), "devices": a device worker}
            want = header["spawn"]
            a, b = socket.socketpair()
            workdir = tempfile.mkdtemp(prefix="seqgrader-worker-")
            pid = os.fork()
            if pid == 0:
                a.close()
                sock.close()
                worker_main(
                    b,
                    sources,
                    errors,
                    root,
                    roots,
                    workdir,
                    limit_options,
                    want.get("skip") or [],
                    focus=want.get("focus"),
                    needed=want.get("needed") or (),
                    devices=want.get("devices") is True,
                )
            b.close()
            workdirs[pid] = workdir
            P.send(sock, {"pid": pid}, fds=[a.fileno()])
            a.close()
        elif "reap" in header:
            pid, grace = int(header["reap"]), float(header.get("grace") or 0.0)
            status, cpu = kill_and_wait(pid, limit_options, grace)
            kill_orphans(set(workdirs) - {pid})
            _rmtree(workdirs.pop(pid, None))
            P.send(sock, {"status": status, "cpu": cpu})
    for pid in list(workdirs):
        kill_and_wait(pid, limit_options)
        _rmtree(workdirs.pop(pid))
    kill_orphans(set())


def _rmtree(path):
    if path:
        import shutil

        shutil.rmtree(path, ignore_errors=True)


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]))
