"""A command's processes end with it (secea_fast._lifetime): SIGTERM, SIGINT
and SIGHUP end every process it started and remove its temporary files,
exit status 128 + signal and one line saying what was stopped; a SIGKILL of
the command leaves the cleanup to its watchdog.  Real processes throughout:
the fast tests use a command that starts marked processes in sessions of
their own (as Flower does), the slow ones ``secea-fast flower local`` and
``secea-fast run`` with forked workers."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from secea_fast._lifetime import TOKEN_ENV

ROOT = Path(__file__).resolve().parents[1]
SIGNALS = [signal.SIGTERM, signal.SIGINT, signal.SIGHUP]


def _stat(pid) -> list[bytes]:
    """The fields of /proc/<pid>/stat after the command name (state, ppid,
    ...; field k of proc(5) at k - 3), [] if the process is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()
    except OSError:
        return []


def _alive(pid: int) -> bool:
    st = _stat(pid)
    return bool(st) and st[0] != b"Z"


def _started(pid: int) -> int:
    """A process's start time in clock ticks since boot (-1 if it is gone)."""
    st = _stat(pid)
    return int(st[19]) if st else -1


def _descendants(pid: int) -> list[int]:
    """Every process beneath ``pid``, from one reading of the parent links
    in /proc (nothing checked or cached between calls, as psutil's process
    objects are)."""
    kids: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        st = _stat(name) if name.isdigit() else []
        if st:
            kids.setdefault(int(st[1]), []).append(int(name))
    out, todo = [], [pid]
    while todo:
        for c in kids.get(todo.pop(), ()):
            out.append(c)
            todo.append(c)
    return out


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _token(pids) -> str | None:
    for p in pids:
        try:
            for kv in Path(f"/proc/{p}/environ").read_bytes().split(b"\0"):
                if kv.startswith(TOKEN_ENV.encode() + b"="):
                    return kv.split(b"=", 1)[1].decode()
        except OSError:
            pass
    return None


def _marked(token: str) -> list[int]:
    mark = f"{TOKEN_ENV}={token}".encode()
    out = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                if mark in Path(f"/proc/{name}/environ").read_bytes().split(b"\0") and _alive(int(name)):
                    out.append(int(name))
            except OSError:
                pass
    return out


def _env(tmp: Path) -> dict:
    tmp.mkdir(exist_ok=True)
    env = dict(os.environ, PYTHONPATH=str(ROOT), TMPDIR=str(tmp), PYTHONUNBUFFERED="1")
    env.pop(TOKEN_ENV, None)
    return env


class _TimedOut(AssertionError):
    pass


def _wait(cond, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = cond()
        if got:
            return got
        time.sleep(0.1)
    raise _TimedOut(f"timed out after {timeout:g} s waiting for {what}")


def _gone(pids, timeout: float = 15.0) -> list[int]:
    """The pids still alive after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.1)
    return [p for p in pids if _alive(p)]


# A command like Flower's launchers: a child in a session of its own that
# starts a grandchild in yet another one (neither a process group nor the
# parent link reaches it), and a temporary directory registered for removal.
_COMMAND = textwrap.dedent("""
    import subprocess, sys, tempfile, time
    from secea_fast._lifetime import remove_on_exit, run_guarded
    def command():
        with tempfile.TemporaryDirectory(prefix="secea-test-") as d:
            remove_on_exit(d)
            open(d + "/big", "wb").write(bytes(1 << 20))
            inner = "import subprocess, time; subprocess.Popen(['sleep', '300'], start_new_session=True); time.sleep(300)"
            subprocess.Popen([sys.executable, "-c", inner], start_new_session=True)
            print("ready", flush=True)
            time.sleep(300)
        return 0
    sys.exit(run_guarded("test-command", command))
""")


def _start_command(tmp_path):
    env = _env(tmp_path / "tmp")
    p = subprocess.Popen([sys.executable, "-c", _COMMAND], env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, start_new_session=True)
    assert p.stdout.readline().strip() == "ready"
    tok = _wait(lambda: _token(_descendants(p.pid)), 20, "a marked child")
    marked = _wait(lambda: (lambda m: m if len(m) >= 2 else None)(_marked(tok)), 20, "two marked processes")
    return p, tok, marked, tmp_path / "tmp"


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: s.name)
def test_a_signal_ends_every_process_the_command_started(tmp_path, sig):
    p, tok, marked, tmp = _start_command(tmp_path)
    os.kill(p.pid, sig)
    out, err = p.communicate(timeout=30)
    assert p.returncode == 128 + sig, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and f"stopped by {sig.name}" in lines[0] and "removed" in lines[0], err
    assert "Traceback" not in err
    assert _gone(marked, 5) == []
    assert _marked(tok) == []
    assert list(tmp.iterdir()) == [], "temporary files left behind"


def test_sigkill_of_the_command_leaves_the_cleanup_to_its_watchdog(tmp_path):
    p, tok, marked, tmp = _start_command(tmp_path)
    os.kill(p.pid, signal.SIGKILL)
    p.wait(timeout=10)
    assert _gone(marked, 20) == []
    assert _wait(lambda: _marked(tok) == [], 20, "no marked process")
    assert _wait(lambda: list(tmp.iterdir()) == [], 20, "the temporary files removed")


def test_weakened_control_without_the_guard_leaks(tmp_path):
    """The same command with Python's default SIGTERM action (no guard):
    its session-detached processes survive it; the tests above have power."""
    env = _env(tmp_path / "tmp")
    code = _COMMAND.replace('sys.exit(run_guarded("test-command", command))',
                            'import os; os.environ["' + TOKEN_ENV + '"] = "leak-" + str(os.getpid()); '
                            'sys.exit(command())')
    p = subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, start_new_session=True)
    assert p.stdout.readline().strip() == "ready"
    tok = f"leak-{p.pid}"
    marked = _wait(lambda: (lambda m: m if len(m) >= 2 else None)(_marked(tok)), 20, "marked processes")
    try:
        os.kill(p.pid, signal.SIGTERM)
        p.wait(timeout=10)
        time.sleep(1.0)
        assert p.returncode == -signal.SIGTERM
        assert [q for q in marked if _alive(q)], "expected the unguarded command to leak"
        assert any(tmp_path.joinpath("tmp").iterdir())
    finally:
        for q in _marked(tok):
            os.kill(q, signal.SIGKILL)


# ------------------------------------------------------------- real commands
def _flower_local(tmp_path):
    env = _env(tmp_path / "tmp")
    p = subprocess.Popen([sys.executable, "-m", "secea_fast", "flower", "local", "--set", "entities=100",
                          "--set", "num-clients=3", "--set", "d=8"], env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, start_new_session=True)
    nodes = _wait(lambda: (lambda s: s if len(s) >= 3 else None)(
        [q for q in _descendants(p.pid) if "flower-supernode" in _cmdline(q)]), 180, "three SuperNodes")
    tok = _token(nodes)
    assert tok
    time.sleep(2.0)              # let the SuperNodes start their own processes
    return p, tok, set(_marked(tok)) | set(_descendants(p.pid)), tmp_path / "tmp"


@pytest.mark.slow     # a real federation per signal (30-60 s each on 2 shared cores)
@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: s.name)
def test_flower_local_ends_its_federation_on_a_signal(tmp_path, sig):
    p, tok, seen, tmp = _flower_local(tmp_path)
    try:
        os.kill(p.pid, sig)
        out, err = p.communicate(timeout=60)
        assert p.returncode == 128 + sig, err[-2000:]
        assert f"stopped by {sig.name}" in err.strip().splitlines()[-1]
        assert "Traceback" not in err
        assert _gone(seen, 10) == []
        assert _marked(tok) == []
        assert list(tmp.iterdir()) == []
    finally:
        for q in _marked(tok):
            os.kill(q, signal.SIGKILL)


@pytest.mark.slow
def test_flower_local_killed_takes_its_federation_with_it(tmp_path):
    p, tok, seen, tmp = _flower_local(tmp_path)
    try:
        os.kill(p.pid, signal.SIGKILL)
        p.wait(timeout=10)
        assert _gone(seen, 30) == []
        assert _marked(tok) == []
        assert _wait(lambda: list(tmp.iterdir()) == [], 20, "the temporary files removed")
    finally:
        for q in _marked(tok):
            os.kill(q, signal.SIGKILL)


def _run_workers(tmp_path):
    env = _env(tmp_path / "tmp")
    p = subprocess.Popen([sys.executable, "-m", "secea_fast", "run", "--processes", "2"], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    workers = _wait(lambda: (lambda s: s if len(s) >= 2 else None)(
        [q for q in _descendants(p.pid) if "-m secea_fast run" in _cmdline(q)]), 120, "two forked workers")
    return p, workers


@pytest.mark.slow     # the default workload's encoding before the workers fork (~10-20 s)
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=lambda s: s.name)
def test_run_workers_end_with_the_command(tmp_path, sig):
    p, workers = _run_workers(tmp_path)
    os.kill(p.pid, sig)
    _, err = p.communicate(timeout=60)
    assert p.returncode == (128 + sig if sig != signal.SIGKILL else -sig)
    if sig != signal.SIGKILL:
        assert "Traceback" not in err and f"stopped by {sig.name}" in err.strip().splitlines()[-1], err[-2000:]
    assert _gone(workers, 10) == []


@pytest.mark.slow     # Flower's simulation runtime and Ray (40-150 s on 2 shared cores)
def test_flower_sim_ends_its_simulation_and_ray_on_sigterm(tmp_path):
    env = _env(tmp_path / "tmp")
    p = subprocess.Popen([sys.executable, "-m", "secea_fast", "flower", "sim", "--set", "entities=100",
                          "--set", "num-clients=3", "--set", "d=8"], env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, start_new_session=True)
    link = _wait(lambda: [q for q in _descendants(p.pid) if "flower-superlink" in _cmdline(q)], 120,
                 "the simulation SuperLink")
    tok = _wait(lambda: _token(link), 30, "the command's mark")
    # Ray's raylet is started beneath flwr-simulation, in a session of its own
    _wait(lambda: [q for q in _marked(tok) if "raylet" in _cmdline(q)], 600, "Ray's raylet")
    seen = set(_marked(tok)) | set(_descendants(p.pid))
    try:
        os.kill(p.pid, signal.SIGTERM)
        out, err = p.communicate(timeout=60)
        assert p.returncode == 128 + signal.SIGTERM, err[-2000:]
        assert "stopped by SIGTERM" in err.strip().splitlines()[-1]
        assert _gone(seen, 10) == []
        assert _marked(tok) == []
        assert list((tmp_path / "tmp").iterdir()) == []
    finally:
        for q in _marked(tok):
            os.kill(q, signal.SIGKILL)


# ------------------------------------------------------------- run --executor ray
# a driver that runs the command as it was before the executor put the command's signal
# handlers back after ray.init: the weakened control below
_RAY_HANDLERS = textwrap.dedent("""
    import sys
    from secea_fast import cli, executor
    executor._restore_signal_handlers = lambda handlers: None
    sys.exit(cli.main(sys.argv[1:]))
""")


class _NotSeen(AssertionError):
    """The command ran, but the test could not see its Ray actors."""


def _run_ray(tmp_path, weakened=False):
    """:func:`_run_ray_once`, once more if the first command's actors were
    not seen (the command SIGKILLed first, so its watchdog ends what it
    started, and what was seen reported as a warning): two of three
    clean-clone CI runs once missed them for a whole round, with nothing to
    say why.  Ray actors seen outside the command (another cluster) fail at
    once."""
    try:
        return _run_ray_once(tmp_path, weakened)
    except _NotSeen as e:
        import warnings
        warnings.warn(f"the first command's Ray actors were not seen: {e}")
    return _run_ray_once(tmp_path, weakened)


def _run_ray_once(tmp_path, weakened):
    """``secea-fast run --executor ray`` on the default workload, once its
    Ray cluster and both actors are up: (process, token, every process seen,
    the directory of Ray's session files, a function that waits for the
    command's end and returns its stderr).

    The executor is made before the command's first stage line and waits
    for every actor to answer, so that line on stderr says the actors are
    up; only then are the processes looked for (each read of /proc only
    at that point, so a slow poll cannot outlast the command's round)."""
    import re
    import threading
    env = _env(tmp_path / "tmp")
    argv = ["run", "--executor", "ray", "--processes", "2"]
    head = [sys.executable, "-c", _RAY_HANDLERS] if weakened else [sys.executable, "-m", "secea_fast"]
    p = subprocess.Popen([*head, *argv], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    born = _started(p.pid)
    lines: list[str] = []
    ready = threading.Event()

    def read():
        for line in p.stderr:
            lines.append(line)
            if "run secea: generate the workload" in line:
                ready.set()
        ready.set()
    reader = threading.Thread(target=read, daemon=True)
    reader.start()

    def err(timeout=120.0) -> str:
        p.wait(timeout=timeout)
        reader.join(timeout=30)
        p.stderr.close()
        return "".join(lines)

    seen_ever: set[str] = set()
    polls: list[float] = []

    def report() -> str:
        return f"{len(polls)} polls, the longest {max(polls, default=0):.2f} s; processes seen: {sorted(seen_ever)}"

    def actors():
        if p.poll() is not None:
            raise _NotSeen(f"the command ended ({p.returncode}) before two Ray actors were seen; "
                           f"{report()}\n{err()[-2000:]}")
        t0 = time.monotonic()
        below = _descendants(p.pid)
        tok = _token(below)
        # Ray's processes start in sessions of their own, beneath the command (raylet's workers) and
        # marked with its token; either way of finding them counts; its actors name themselves
        # ray::<class>
        procs = set(below) | (set(_marked(tok)) if tok else set())
        found = [q for q in procs if "ray::_RayWorker" in _cmdline(q)]
        seen_ever.update(f"{'below' if q in below else 'marked'}: {_cmdline(q)[:50]!r} "
                         f"token={_token([q]) == tok}" for q in procs)
        elsewhere = [q for q in map(int, filter(str.isdigit, os.listdir("/proc")))
                     if q not in procs and "ray::_RayWorker" in _cmdline(q) and _started(q) >= born]
        assert not elsewhere, f"Ray actors outside the command: {[_cmdline(q)[:60] for q in elsewhere]}"
        polls.append(time.monotonic() - t0)
        return (tok, found) if tok and len(found) >= 2 else None
    if not ready.wait(300):
        raise AssertionError(f"no stage line after 300 s: {''.join(lines)[-2000:]}")
    try:
        tok, _ = _wait(actors, 30, "the executor's two Ray actors")
    except _TimedOut as e:
        detail = f"{e}; {report()}"
        tok = _token(_descendants(p.pid))
        os.kill(p.pid, signal.SIGKILL)           # its watchdog ends the rest and removes its files
        err(30)
        assert _gone(_marked(tok) if tok else [], 30) == [], "the watchdog left processes behind"
        raise _NotSeen(detail) from None
    seen = set(_marked(tok)) | set(_descendants(p.pid))
    dirs = {m.group(1) for q in seen for m in [re.search(r"(/\S*?secea-ray-[^/\s]+)", _cmdline(q))] if m}
    assert len(dirs) == 1, dirs            # Ray's session files in a directory of the command's own
    return p, tok, seen, Path(dirs.pop()), err


@pytest.mark.slow     # a Ray cluster on 2 shared cores (30-120 s)
def test_run_on_ray_ends_its_cluster_and_removes_its_files_on_sigterm(tmp_path):
    pytest.importorskip("ray")
    p, tok, seen, ray_dir, stderr = _run_ray(tmp_path)
    try:
        assert any("raylet" in _cmdline(q) for q in seen) and ray_dir.is_dir()
        os.kill(p.pid, signal.SIGTERM)
        err = stderr()
        assert p.returncode == 128 + signal.SIGTERM, err[-2000:]
        assert "Traceback" not in err and "stopped by SIGTERM" in err.strip().splitlines()[-1], err[-2000:]
        assert _gone(seen, 15) == []
        assert _marked(tok) == []
        assert list((tmp_path / "tmp").iterdir()) == [], "temporary files left behind"
        assert not ray_dir.exists(), "Ray's session files left behind"
    finally:
        for q in _marked(tok):
            os.kill(q, signal.SIGKILL)


@pytest.mark.slow
def test_weakened_control_ray_keeping_its_sigterm_handler_skips_every_cleanup(tmp_path):
    """The same command with Ray's SIGTERM handler left in place (as before
    the fix): the core worker's fatal-signal handler aborts the command, so
    no cleanup of its own runs and no verdict line is printed (the watchdog,
    which sees a killed command, is left to clean up): the test above has
    power."""
    pytest.importorskip("ray")
    p, tok, seen, ray_dir, stderr = _run_ray(tmp_path, weakened=True)
    try:
        os.kill(p.pid, signal.SIGTERM)
        err = stderr()
        assert p.returncode != 128 + signal.SIGTERM and "stopped by SIGTERM" not in err, err[-2000:]
        assert "SIGTERM received" in err                  # Ray's handler, not the command's
    finally:
        for q in _marked(tok):
            os.kill(q, signal.SIGKILL)
        import shutil
        shutil.rmtree(ray_dir, ignore_errors=True)
