"""A stand-in for `python -c CODE` and `python -m MODULE` that starts in
milliseconds: an interpreter that has imported torch forks a child for each
request (children.py sends them). About a quarter of the suite's tests run a
fresh interpreter, and `import torch` is about 2 s of each here (more under the
sanitizers); torchferry itself is imported by each child, as in a fresh one.

What a child shares with the interpreter it replaces: the same executable, the
requested environment (as bytes), working directory, sys.argv and sys.path
('' for -c, the working directory for -m, then PYTHONPATH and the site
directories), a __main__ of its own, stdin from /dev/null, stdout and stderr
into files, a random torch seed, and a normal interpreter exit (atexit, the
sanitizers' exit checks, SystemExit's status and an uncaught exception's
traceback and status 1). What it does not: torch was imported before the
environment was set. children.py sends here only requests whose environment
differs from this one's in TORCHFERRY_* variables alone (which torch never
reads); anything else gets a real interpreter.

Protocol, on stdin and stdout: a request is a 4-byte length and a pickled dict
(args, env, cwd, out, err); the answer is the child's pid, then its wait
status, each as 8 bytes. End of input ends the zygote.
"""

import gc
import os
import pickle
import runpy
import struct
import sys
import types

import torch  # noqa: F401  (what every child would otherwise pay for)

REQUESTS = 0
ANSWERS = 1


def _read_exact(fd, n):
    data = b""
    while len(data) < n:
        chunk = os.read(fd, n - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def serve():
    """Answers requests until end of input (then exits); returns only in a
    forked child, with its request."""
    requests = os.dup(REQUESTS)
    answers = os.dup(ANSWERS)
    null = os.open(os.devnull, os.O_RDWR)
    # A child's exit decrefs every object it inherited, and its collections
    # walk them: each write copies a page of this process. Frozen, the
    # collector leaves them alone (an exit took 0.65 s, then 0.39 s).
    gc.freeze()
    os.dup2(null, REQUESTS)
    os.dup2(null, ANSWERS)  # nothing printed here can reach the protocol
    while True:
        head = _read_exact(requests, 4)
        if head is None:
            os._exit(0)
        request = pickle.loads(_read_exact(requests, struct.unpack("<I", head)[0]))
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            os.close(requests)
            os.close(answers)
            os.close(null)
            return request
        os.write(answers, struct.pack("<q", pid))
        _, status = os.waitpid(pid, 0)
        os.write(answers, struct.pack("<q", status))


def become(request):
    """Turns this forked process into the requested interpreter's state: its
    streams, environment, directory, sys.path, argv and a __main__ of its own."""
    stdin = os.open(os.devnull, os.O_RDONLY)
    os.dup2(stdin, 0)
    os.close(stdin)
    for fd, path in ((1, request["out"]), (2, request["err"])):
        f = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(f, fd)
        os.close(f)
    os.environb.clear()
    os.environb.update(request["env"])
    os.chdir(request["cwd"])
    flag, target, *rest = request["args"]
    # sys.path[0] is this file's folder here; -c puts '' there, -m the
    # working directory. PYTHONPATH is the same (children.py checks).
    sys.path[0] = "" if flag == "-c" else os.getcwd()
    sys.argv = [flag, *rest]
    sys.modules["__main__"] = types.ModuleType("__main__")
    torch.seed()  # a fresh interpreter's seed is random too
    return flag, target


request = serve()
# Only a forked child gets here; from now on it is the requested interpreter.
flag, target = become(request)
del request
if flag == "-c":
    exec(compile(target, "<string>", "exec"), sys.modules["__main__"].__dict__)
else:
    runpy._run_module_as_main(target)
