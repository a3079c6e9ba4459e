"""Process lifetime of a command: whatever it started ends with it.

A ``secea-fast`` command can start many processes: forked workers
(``secea_fast._workers``), a SuperLink and SuperNodes (``flower local``),
Flower's SuperExec and ClientApp processes beneath them, a simulation
runtime and Ray's raylet, GCS server and workers (``flower sim`` /
``train``).  Flower starts several of those in sessions of their own, so a
signal to the command's process group does not reach them, and Python's
default SIGTERM / SIGHUP action ends the command without running a
``finally``: they used to survive it with parent 1, with their temporary
files.  :func:`run_guarded` does three things around a command:

* **Signals become one exception.**  SIGTERM, SIGINT and SIGHUP raise
  :class:`Interrupted` in the main thread (once: a second signal during
  the cleanup is ignored, so the cleanup itself is not cut short), every
  ``finally`` and ``with`` of the command runs, and the command returns
  ``128 + signal`` after one line on stderr saying what it stopped.
* **Every process the command starts carries a mark.**  The environment
  variable ``SECEA_FAST_OWNER`` (a random token per command) is inherited
  by every process started after it was set, through every session and
  double fork (Flower's and Ray's launchers pass their environment on).
  :func:`reap` walks ``/proc`` for processes with the command's token and
  ends them (SIGTERM, SIGKILL after a grace period): the backstop after the
  command's own teardown.  Forked workers share the command's original
  environment block, so they are not marked; they are its direct children,
  which the pool ends itself and which :func:`die_with_parent` ties to it.
* **A watchdog outlives a crash.**  A small process (standard library
  only, its own session, no token) waits for the command to end; if the
  command was killed (SIGKILL, the OOM killer), it reaps the token's
  processes and removes the directories registered with
  :func:`remove_on_exit`.  On a normal end it finds nothing to do.

Linux only for the ``/proc`` walk and ``prctl``; elsewhere the signal
handling still applies and the rest is a no-op.
"""
from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

__all__ = ["TOKEN_ENV", "Interrupted", "run_guarded", "remove_on_exit", "reap", "marked_processes",
           "die_with_parent"]

TOKEN_ENV = "SECEA_FAST_OWNER"
_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
_PR_SET_PDEATHSIG = 1


class Interrupted(BaseException):
    """A SIGTERM, SIGINT or SIGHUP the command received (``signum``)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


_state: dict = {"dirs": [], "dirs_file": None, "snapshot": set(), "token": None, "raised": False}


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (OSError, IndexError):
        return False


def marked_processes(token: str | None = None) -> list[int]:
    """The live processes (not this one) whose environment carries
    ``SECEA_FAST_OWNER=token`` (default: the running command's token)."""
    token = token or _state["token"]
    if not token or not os.path.isdir("/proc"):
        return []
    mark = f"{TOKEN_ENV}={token}".encode()
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as f:
                env = f.read()
        except OSError:
            continue
        if mark in env.split(b"\0") and _alive(int(name)):
            out.append(int(name))
    return out


def _children(pid: int) -> list[int]:
    """Every descendant of ``pid`` (via /proc/*/stat's parent field)."""
    parent: dict[int, int] = {}
    for name in os.listdir("/proc") if os.path.isdir("/proc") else ():
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat", "rb") as f:
                    parent[int(name)] = int(f.read().rsplit(b")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                pass
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        kids = [c for c, pp in parent.items() if pp == p]
        out += kids
        todo += kids
    return out


def reap(token: str | None = None, grace: float = 3.0) -> list[int]:
    """End every process marked with ``token`` (default: the running
    command's): SIGTERM, then SIGKILL to those left after ``grace`` seconds;
    twice over, for processes started while the first ones stopped.
    Returns the pids it signalled."""
    hit: list[int] = []
    for _ in range(2):
        pids = marked_processes(token)
        if not pids:
            break
        for p in pids:
            try:
                os.kill(p, signal.SIGTERM)
            except OSError:
                pass
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and any(_alive(p) for p in pids):
            time.sleep(0.05)
        for p in pids:
            if _alive(p):
                try:
                    os.kill(p, signal.SIGKILL)
                except OSError:
                    pass
        hit += pids
    return hit


def remove_on_exit(path: str | os.PathLike[str]) -> None:
    """Have the running command's watchdog remove directory ``path`` if the
    command is killed before it removes it itself (a no-op outside
    :func:`run_guarded`)."""
    if not _state["token"]:
        return
    _state["dirs"].append(str(path))
    if _state["dirs_file"]:
        with open(_state["dirs_file"], "a") as f:
            f.write(str(path) + "\n")


def die_with_parent(sig: int = signal.SIGKILL) -> None:
    """Have the kernel send ``sig`` to this process when the thread that
    forked it ends (Linux ``prctl(PR_SET_PDEATHSIG)``; a no-op elsewhere).
    For a forked worker: it ends with the command even after a SIGKILL."""
    if not sys.platform.startswith("linux"):
        return
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
    except (OSError, AttributeError):
        pass


# The watchdog: the standard library only, so it starts in ~20 ms and holds
# nothing of the command's.  argv: parent pid, token, file listing the
# directories to remove.  It ends when its parent ends (it is reparented) or
# when told to (SIGUSR1: the command finished its own cleanup).
_WATCHDOG = r"""
import os, shutil, signal, sys, time
ppid, token, dirs_file = int(sys.argv[1]), sys.argv[2], sys.argv[3]
stop = []
for s in (signal.SIGUSR1, signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
    signal.signal(s, lambda *a: stop.append(1))
while not stop and os.getppid() == ppid:
    time.sleep(0.2)
crashed = not stop
mark = ("%s=%s" % (sys.argv[4], token)).encode()
def alive(p):
    try:
        with open("/proc/%d/stat" % p, "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (OSError, IndexError):
        return False
def marked():
    out = []
    for n in os.listdir("/proc"):
        if n.isdigit() and int(n) != os.getpid():
            try:
                with open("/proc/%s/environ" % n, "rb") as f:
                    if mark in f.read().split(b"\0") and alive(int(n)):
                        out.append(int(n))
            except OSError:
                pass
    return out
if crashed:
    for _ in range(2):
        pids = marked()
        for p in pids:
            try: os.kill(p, signal.SIGTERM)
            except OSError: pass
        t = time.monotonic() + 3
        while time.monotonic() < t and any(alive(p) for p in pids):
            time.sleep(0.05)
        for p in pids:
            if alive(p):
                try: os.kill(p, signal.SIGKILL)
                except OSError: pass
    try:
        with open(dirs_file) as f:
            for d in f.read().split("\n"):
                if d:
                    shutil.rmtree(d, ignore_errors=True)
    except OSError:
        pass
try: os.unlink(dirs_file)
except OSError: pass
"""


def _start_watchdog(token: str) -> subprocess.Popen | None:
    if not os.path.isdir("/proc"):
        return None
    fd, dirs_file = tempfile.mkstemp(prefix="secea-fast-dirs-", suffix=".txt")
    os.close(fd)
    _state["dirs_file"] = dirs_file
    env = {k: v for k, v in os.environ.items() if k != TOKEN_ENV}
    try:
        return subprocess.Popen([sys.executable, "-I", "-c", _WATCHDOG, str(os.getpid()), token, dirs_file,
                                 TOKEN_ENV], env=env, start_new_session=True, stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, close_fds=True)
    except OSError:
        os.unlink(dirs_file)
        _state["dirs_file"] = None
        return None


def _on_signal(signum, frame):
    if _state["raised"]:
        return                       # the cleanup of the first one runs: let it finish
    _state["raised"] = True
    # what the command had started, to say afterwards what was ended
    _state["snapshot"] = set(marked_processes()) | set(_children(os.getpid()))
    raise Interrupted(signum)


def run_guarded(name: str, command: Callable[[], int], *, watchdog: bool = True) -> int:
    """Run ``command()`` (it returns an exit status) so that a SIGTERM,
    SIGINT or SIGHUP ends it and everything it started: the signal raises
    :class:`Interrupted` in it, its cleanups run, :func:`reap` ends whatever
    is left, and the status is ``128 + signal`` after one line on stderr
    (``name`` leads it).  ``watchdog``: start the watchdog that cleans up
    after a ``command`` that was killed.  Main thread only."""
    import secrets
    token = secrets.token_hex(8)
    dog = _start_watchdog(token) if watchdog else None
    previous_token = os.environ.get(TOKEN_ENV)
    os.environ[TOKEN_ENV] = token
    _state.update(token=token, raised=False, snapshot=set(), dirs=[])
    old = {s: signal.signal(s, _on_signal) for s in _SIGNALS}
    t0 = time.monotonic()
    try:
        try:
            return command()
        except (Interrupted, KeyboardInterrupt) as exc:
            for s in _SIGNALS:
                signal.signal(s, signal.SIG_IGN)
            signum = exc.signum if isinstance(exc, Interrupted) else int(signal.SIGINT)
            if not _state["snapshot"]:
                _state["snapshot"] = set(marked_processes()) | set(_children(os.getpid()))
            reap(token)
            ended = [p for p in _state["snapshot"] if p != (dog.pid if dog else None) and not _alive(p)]
            removed = [d for d in _state["dirs"] if not os.path.exists(d)]
            what = f"ended {len(ended)} process{'es' if len(ended) != 1 else ''} it started"
            if removed:
                what += f", removed {', '.join(removed)}"
            try:
                print(f"{name}: stopped by {signal.Signals(signum).name} after {time.monotonic() - t0:.1f} s; "
                      f"{what}", file=sys.stderr, flush=True)
            except OSError:           # SIGHUP: the terminal may be gone
                pass
            return 128 + signum
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        if previous_token is None:
            os.environ.pop(TOKEN_ENV, None)
        else:
            os.environ[TOKEN_ENV] = previous_token
        if dog is not None:
            try:
                dog.send_signal(signal.SIGUSR1)
                dog.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                pass
        dirs_file = _state["dirs_file"]
        if dirs_file and os.path.exists(dirs_file):
            Path(dirs_file).unlink(missing_ok=True)
        _state.update(token=None, dirs_file=None)
