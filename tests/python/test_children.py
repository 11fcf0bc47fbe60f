"""The zygote's children (children.py) behave as the fresh interpreters they
stand in for: each probe runs both ways and must answer the same."""

import os
import subprocess

import pytest

import children
from conftest import HERE, clean_env, run_child

pytestmark = pytest.mark.subprocess

PROBES = {
    "argv and path": "import sys; print(sys.argv, sys.path[0] == '', __name__)",
    "environment": "import os; print(os.environ['TORCHFERRY_PROBE'], 'TORCHFERRY_OTHER' in os.environ, os.getcwd())",
    "torchferry imported here": "import sys; print('torchferry' in sys.modules); import torchferry; print(torchferry.STARTUP_ERROR)",
    "a bridge variable it refuses": "import torchferry",
    "exit status": "import sys; print('out'); sys.stderr.write('err\\n'); sys.exit(3)",
    "exit message": "raise SystemExit('a message')",
    "uncaught exception": "raise ValueError('boom')",
    "atexit runs": "import atexit; atexit.register(lambda: print('at exit'))",
    # SIGKILL: the sanitizers take SIGSEGV and report it.
    "killed by a signal": "import os, signal; os.kill(os.getpid(), signal.SIGKILL)",
    "-m": ["-m", "torchferry", "config", "--cflags"],
}


def both(args, **env):
    """(zygote's answer, a fresh interpreter's answer) for `args`."""
    full = clean_env(PYTHONPATH=HERE, TORCHFERRY_PROBE="yes", **env)
    forced = os.environ.pop("TF_TEST_FRESH_CHILDREN", None)
    try:
        served = run_child(args, full, text=True)
        os.environ["TF_TEST_FRESH_CHILDREN"] = "1"
        fresh = run_child(args, full, text=True)
    finally:
        os.environ.pop("TF_TEST_FRESH_CHILDREN")
        if forced is not None:
            os.environ["TF_TEST_FRESH_CHILDREN"] = forced
    return served, fresh


@pytest.mark.parametrize("name", sorted(PROBES))
def test_a_child_answers_as_a_fresh_interpreter(name):
    args = PROBES[name] if isinstance(PROBES[name], list) else ["-c", PROBES[name]]
    served, fresh = both(args, **({"TORCHFERRY_BRIDGE": "no-such-path"} if name.startswith("a bridge") else {}))
    assert (served.returncode, served.stdout) == (fresh.returncode, fresh.stdout)
    # A traceback names the zygote's frames too; its last line is the same.
    assert served.stderr.strip().splitlines()[-1:] == fresh.stderr.strip().splitlines()[-1:]


@pytest.mark.skipif(os.environ.get("TF_TEST_FRESH_CHILDREN") == "1", reason="every child is a fresh interpreter")
def test_children_come_from_the_zygote_each_with_its_own_seed():
    """A fresh interpreter seeds torch at random; so must each child."""
    full = clean_env(PYTHONPATH=HERE)
    args = ["-c", "import torch; print(torch.initial_seed())"]
    seeds = set()
    for _ in range(3):
        r = run_child(args, full, text=True)
        assert r.returncode == 0, r.stderr
        seeds.add(r.stdout)
    assert len(seeds) == 3
    assert children._zygote.serves(args, children._as_bytes(full))


def test_a_variable_torch_may_read_gets_a_fresh_interpreter():
    full = clean_env(PYTHONPATH=HERE, OMP_NUM_THREADS="1")
    assert not children._Zygote(clean_env(PYTHONPATH=HERE)).serves(["-c", ""], children._as_bytes(full))


@pytest.mark.skipif(os.environ.get("TF_TEST_FRESH_CHILDREN") == "1", reason="every child is a fresh interpreter")
def test_a_hung_child_is_killed_at_its_timeout_and_the_zygote_goes_on():
    with pytest.raises(subprocess.TimeoutExpired) as e:
        run_child(["-c", "import time; print('started', flush=True); time.sleep(600)"], clean_env(PYTHONPATH=HERE),
                  timeout=2, text=True)
    assert "started" in e.value.output
    r = run_child(["-c", "print('next')"], clean_env(PYTHONPATH=HERE), text=True)
    assert r.stdout == "next\n"
