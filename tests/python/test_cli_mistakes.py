"""A user's mistake at any door of `python -m torchferry` (a bad environment
variable, a path that cannot be written, a blank compiler, a bad argument)
gets one line on stderr naming what was given and the fix, and exit status 2:
never a traceback. `info` still prints what it knows when the bridge's
variables are bad, and `config` needs no bridge at all."""

import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile

import pytest
import torch

import torchferry
from conftest import HERE, clean_env, run_child

pytestmark = pytest.mark.subprocess


def cli(*args, env=None, timeout=300):
    """`python -m torchferry ARGS` with a clean TORCHFERRY_* environment plus
    `env` (bytes values pass as they are: not every value is UTF-8)."""
    # A cache of its own: a command that wrongly goes on must not write to
    # (or find plugins in) the user's.
    cache = tempfile.mkdtemp(prefix="torchferry-cache-")
    full = {os.fsencode(k): os.fsencode(v) for k, v in clean_env(PYTHONPATH=HERE, TORCHFERRY_CACHE=cache).items()}
    for k, v in (env or {}).items():
        if v is None:
            full.pop(os.fsencode(k), None)
        else:
            full[os.fsencode(k)] = os.fsencode(v)
    try:
        return run_child(["-m", "torchferry", *args], full, timeout=timeout)
    finally:
        shutil.rmtree(cache, ignore_errors=True)


def one_line_mistake(r, *named):
    """Exit status 2, no traceback, and a last stderr line that names each of
    `named`; returns that line."""
    err = r.stderr.decode("utf-8", "backslashreplace")
    assert r.returncode == 2, (r.returncode, err[-3000:])
    assert "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    for text in named:
        assert text in lines[0], (text, lines[0])
    assert lines[0].startswith("python -m torchferry ")
    return lines[0]


@pytest.fixture
def a_file(tmp_path):
    path = tmp_path / "a-file"
    path.write_text("not a folder")
    return path


# --- build-aten: its folder, its compiler ---------------------------------------------


def test_build_aten_cache_naming_a_file(a_file):
    line = one_line_mistake(cli("build-aten", env={"TORCHFERRY_CACHE": str(a_file)}), "TORCHFERRY_CACHE",
                            str(a_file))
    assert "is a file, not a folder" in line and "--out" in line


def test_build_aten_xdg_cache_naming_a_file(a_file):
    line = one_line_mistake(cli("build-aten", env={"XDG_CACHE_HOME": str(a_file), "TORCHFERRY_CACHE": None}),
                            "XDG_CACHE_HOME")
    assert "set TORCHFERRY_CACHE to a folder you can write to" in line


@pytest.mark.parametrize("where", ["under_a_file", "under_proc", "proc_itself", "empty"])
def test_build_aten_out_that_cannot_be_written(where, a_file):
    out = {"under_a_file": f"{a_file}/deeper/out", "under_proc": "/proc/torchferry-out",
           "proc_itself": "/proc", "empty": ""}[where]
    line = one_line_mistake(cli("build-aten", "--out", out), "--out")
    assert "name a folder you can write to" in line


def test_build_aten_out_not_utf8(a_file):
    out = os.fsencode(str(a_file)) + b"/caf\xe9"
    r = subprocess.run([sys.executable, "-m", "torchferry", "build-aten", "--out", out], capture_output=True,
                       env=clean_env(PYTHONPATH=HERE, TORCHFERRY_CACHE=a_file.parent / "cache"), cwd=HERE,
                       timeout=300)
    assert "caf\\udce9" in one_line_mistake(r, "--out", "is a file")


@pytest.mark.parametrize("cxx", ["  ", "\t", " \n "])
def test_build_aten_blank_cxx(cxx, tmp_path):
    line = one_line_mistake(cli("build-aten", "--out", str(tmp_path / "out"), env={"CXX": cxx}), "CXX")
    assert "names no compiler" in line and "unset it" in line


def test_build_aten_jobs_not_positive(tmp_path):
    r = cli("build-aten", "--out", str(tmp_path / "out"), "--jobs", "0")
    assert r.returncode == 2 and b"Traceback" not in r.stderr and b"--jobs" in r.stderr


# Root writes anywhere, so as root the command drops to `nobody` first. This
# Python may live where `nobody` cannot reach (under /root): the child starts
# as root, imports what the command needs, then drops its uid, gid and
# groups for good before the command runs.
AS_NOBODY = """
import concurrent.futures, os, pwd, shutil, subprocess, sys, tempfile
import torch, torchferry, torchferry.aten_build, torchferry.cli, torchferry.user_error
if os.getuid() == 0:
    nobody = pwd.getpwnam("nobody")
    os.setgroups([])
    os.setgid(nobody.pw_gid)
    os.setuid(nobody.pw_uid)
assert os.getuid() != 0
sys.exit(torchferry.cli.main(sys.argv[1:]))
"""


def test_build_aten_read_only_cache_as_a_normal_user():
    if os.getuid() == 0:
        try:
            pwd.getpwnam("nobody")
        except KeyError:
            pytest.skip("running as root and this system has no 'nobody' user to drop to")
    top = tempfile.mkdtemp(prefix="torchferry-ro-")
    cache = os.path.join(top, "cache")
    try:
        os.chmod(top, 0o755)
        os.mkdir(cache)
        os.chmod(cache, 0o555)
        r = subprocess.run([sys.executable, "-c", AS_NOBODY, "build-aten"], capture_output=True, cwd="/",
                           env=clean_env(PYTHONPATH=HERE, TORCHFERRY_CACHE=cache), timeout=300)
        line = one_line_mistake(r, "TORCHFERRY_CACHE", cache)
        assert "cannot be written" in line and "Permission denied" in line
    finally:
        os.chmod(cache, 0o755)
        os.rmdir(cache)
        os.rmdir(top)


# --- the other doors' paths ---------------------------------------------------------


@pytest.mark.parametrize("command", ["check", "bench"])
@pytest.mark.parametrize("where", ["under_a_file", "a_folder", "under_proc"])
def test_output_paths_that_cannot_be_written_are_refused_before_the_run(command, where, a_file, tmp_path):
    path = {"under_a_file": f"{a_file}/report.json", "a_folder": str(tmp_path),
            "under_proc": "/proc/torchferry/report.json"}[where]
    args = ["check", "example_c", "--json", path] if command == "check" else ["bench", "--quick", "--json", path]
    one_line_mistake(cli(*args, timeout=120), "--json", path)


def test_bench_out_dir_under_a_file(a_file):
    one_line_mistake(cli("bench", "--quick", "--out-dir", f"{a_file}/results", timeout=120), "--out-dir")


# --- the bridge's variables -----------------------------------------------------------

SHIM = torchferry.bridge.shim_available()

BAD_BRIDGE_SETTINGS = [
    ("TORCHFERRY_BRIDGE", "fastest"),
    ("TORCHFERRY_BRIDGE", b"caf\xe9"),
    ("TORCHFERRY_TENSOR_META", "getter"),
    ("TORCHFERRY_TENSOR_META", b"\xff"),
] + ([] if SHIM else [("TORCHFERRY_BRIDGE", "shim")])


@pytest.mark.parametrize("name,value", BAD_BRIDGE_SETTINGS)
def test_info_names_a_bad_bridge_variable_and_prints_what_it_can(name, value):
    r = cli("info", env={name: value})
    one_line_mistake(r, name, "unset it")
    out = r.stdout.decode()
    assert f"torch {torch.__version__}" in out and "the bridge did not start" in out
    assert name in out


@pytest.mark.parametrize("name,value", BAD_BRIDGE_SETTINGS[:3])
def test_info_json_names_a_bad_bridge_variable(name, value):
    r = cli("info", "--json", env={name: value})
    one_line_mistake(r, name)
    data = json.loads(r.stdout)
    assert name in data["startup_error"] and data["torch"] == torch.__version__
    assert name in data["environment"]


@pytest.mark.parametrize("name,value", BAD_BRIDGE_SETTINGS)
def test_config_needs_no_bridge(name, value):
    r = cli("config", "--cflags", env={name: value})
    assert r.returncode == 0, r.stderr.decode()[-2000:]
    assert r.stdout.decode().startswith("-I") and b"Traceback" not in r.stderr


@pytest.mark.parametrize("name,value", BAD_BRIDGE_SETTINGS[:3])
def test_check_refuses_a_bad_bridge_variable_in_one_line(name, value):
    one_line_mistake(cli("check", "example_c", env={name: value}), name)


@pytest.mark.parametrize("name,value", BAD_BRIDGE_SETTINGS[:3])
def test_the_ops_refuse_a_bad_bridge_variable_naming_it(name, value):
    code = ("import torchferry\n"
            "assert torchferry.STARTUP_ERROR\n"
            "for use in ('torchferry.ops.exp', 'torchferry.bridge.path()', 'torchferry.plugins.loaded()'):\n"
            "    try:\n"
            "        eval(use)\n"
            "    except ValueError as e:\n"
            f"        assert {name!r} in str(e), e\n"
            "    else:\n"
            "        raise AssertionError(use)\n"
            "try:\n"
            "    import torchferry.ops\n"
            "except ValueError as e:\n"
            f"    assert {name!r} in str(e), e\n"
            "else:\n"
            "    raise AssertionError('import torchferry.ops')\n"
            "print('ok')\n")
    env = {os.fsencode(k): os.fsencode(v) for k, v in clean_env(PYTHONPATH=HERE).items()}
    env[os.fsencode(name)] = os.fsencode(value)
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, cwd=HERE,
                       timeout=180)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr[-3000:]


def test_help_and_info_explain_the_variables_from_the_loaders_table():
    # One table (loader/environment.h) says what every TORCHFERRY_* variable
    # is; --help lists them all from it, and `info` explains a bad one by it.
    table = torchferry._C._environment_table()
    names = [e["name"] for e in table]
    assert len(set(names)) == len(names) and "TORCHFERRY_CPU_ISA" in names
    assert [e["name"] for e in table if e["selects_code"]] == [
        "TORCHFERRY_PLUGIN_PATH", "TORCHFERRY_PLUGINS", "TORCHFERRY_BRIDGE", "TORCHFERRY_TENSOR_META",
        "TORCHFERRY_PARALLEL",
    ]  # fmt: skip
    assert torchferry.BRIDGE_VARIABLES == ("TORCHFERRY_BRIDGE", "TORCHFERRY_TENSOR_META", "TORCHFERRY_PARALLEL")
    r = cli("--help")
    assert r.returncode == 0, r.stderr.decode()[-2000:]
    out = " ".join(r.stdout.decode().split())
    for name in names:
        assert name in out
    assert "TORCHFERRY_BRIDGE (auto|shim|offset|exchange: the bridge path)" in out
    r = cli("info", env={"TORCHFERRY_TENSOR_META": "sometimes"})
    assert "TORCHFERRY_TENSOR_META=sometimes (auto|getters: how tensor metadata is read)" in r.stdout.decode()
