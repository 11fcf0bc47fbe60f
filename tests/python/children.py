"""Fresh interpreters for the tests, `python -c CODE` and `python -m MODULE`,
at a fraction of their start-up: run_child() asks a zygote (zygote.py), an
interpreter of this worker's that has imported torch, to fork the child, when
the child's environment differs from the zygote's only in TORCHFERRY_*
variables (and pytest's PYTEST_CURRENT_TEST); anything else, or
TF_TEST_FRESH_CHILDREN=1, gets a real interpreter. Either way the caller gets subprocess.run's CompletedProcess, or
its TimeoutExpired after the child is killed.
"""

import io
import os
import pickle
import select
import signal
import struct
import subprocess
import sys
import tempfile
import threading

HERE = os.path.dirname(os.path.abspath(__file__))


def _as_bytes(env):
    return {os.fsencode(k): os.fsencode(v) for k, v in env.items()}


def _text(data):
    """Bytes decoded as subprocess.run(text=True) decodes them."""
    return io.TextIOWrapper(io.BytesIO(data)).read()


def _read_after_import(name):
    """Whether torch's import cannot have read variable `name` (bytes): the
    child sets its environment after that import."""
    return name.startswith(b"TORCHFERRY_") or name == b"PYTEST_CURRENT_TEST"  # pytest's, per test


class _Zygote:
    def __init__(self, env):
        self.env = _as_bytes(env)
        self.lock = threading.Lock()
        self.process = None

    def _start(self):
        if self.process is None or self.process.poll() is not None:
            self.process = subprocess.Popen(
                [sys.executable, os.path.join(HERE, "zygote.py")],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=self.env, cwd=HERE,
            )  # fmt: skip
        return self.process

    def serves(self, args, env):
        """Whether a child of `args` in `env` (bytes) may come from here."""
        if os.environ.get("TF_TEST_FRESH_CHILDREN") == "1" or args[0] not in ("-c", "-m"):
            return False
        keys = set(env) | set(self.env)
        return all(env.get(k) == self.env.get(k) or _read_after_import(k) for k in keys)

    def run(self, args, env, cwd, timeout):
        """(returncode, stdout bytes, stderr bytes) of the forked child."""
        with tempfile.TemporaryDirectory(prefix="tf-child-") as scratch:
            out, err = os.path.join(scratch, "out"), os.path.join(scratch, "err")
            request = pickle.dumps({"args": list(args), "env": env, "cwd": str(cwd), "out": out, "err": err})
            zygote = self._start()
            zygote.stdin.write(struct.pack("<I", len(request)) + request)
            zygote.stdin.flush()
            answers = zygote.stdout.fileno()
            pid = struct.unpack("<q", os.read(answers, 8))[0]
            ready, _, _ = select.select([answers], [], [], timeout)
            killed = not ready
            if killed:
                os.kill(pid, signal.SIGKILL)
            status = struct.unpack("<q", os.read(answers, 8))[0]
            with open(out, "rb") as f:
                stdout = f.read()
            with open(err, "rb") as f:
                stderr = f.read()
        if killed:
            raise subprocess.TimeoutExpired([sys.executable, *args], timeout, output=stdout, stderr=stderr)
        return os.waitstatus_to_exitcode(status), stdout, stderr


_zygote = None


def run_child(args, env, cwd=HERE, timeout=180, text=False, zygote_env=None):
    """subprocess.run([sys.executable, *args], env=env, cwd=cwd,
    capture_output=True, timeout=timeout, text=text), served by the zygote
    where it may be. `zygote_env` is the environment the zygote runs in (the
    suite's clean one: conftest.clean_env(PYTHONPATH=HERE))."""
    global _zygote
    if _zygote is None and zygote_env is not None:
        _zygote = _Zygote(zygote_env)
    benv = _as_bytes(env)
    if _zygote is not None and _zygote.serves(args, benv) and _zygote.lock.acquire(blocking=False):
        try:
            code, stdout, stderr = _zygote.run(args, benv, cwd, timeout)
        except subprocess.TimeoutExpired as e:
            if text:
                e.output, e.stderr = _text(e.output), _text(e.stderr)
            raise
        finally:
            _zygote.lock.release()
        if text:
            stdout, stderr = _text(stdout), _text(stderr)
        return subprocess.CompletedProcess([sys.executable, *args], code, stdout, stderr)
    return subprocess.run([sys.executable, *args], env=env, cwd=cwd, capture_output=True, timeout=timeout, text=text)
