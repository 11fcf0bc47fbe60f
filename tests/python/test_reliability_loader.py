"""The loader and the plugins under things that used to hang, crash or lie.

Each case ends as a Python exception or a skipped plugin with its reason,
never a hang, a crash or a silently wrong answer; anything that could hang or
crash runs in a fresh interpreter with a timeout:

- the plugin search path names a FIFO, a socket, a device, a folder where a
  plugin file was expected, a symbolic link loop or a dangling link;
- a plugin's init rewrites the descriptor the host validated;
- loader text (folder and file names, a plugin's version, init and option
  messages, TORCHFERRY_PLUGINS) that is not UTF-8;
- negative strides (numpy views) reaching the ATen fallback;
- a misspelt TORCHFERRY_CPU_ISA;
- and a randomised plugin folder mixing all of the above.

The synthetic plugins are compiled here from tests/plugins/*.c (the sources
the Catch2 tests build too), so that this file needs no build folder.
"""

import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import textwrap

import pytest

import torchferry
from conftest import HERE, clean_env, run_child

ROOT = os.path.dirname(os.path.dirname(HERE))
SYNTHETIC_SRC = os.path.join(ROOT, "tests", "plugins")
ATEN_INSTALLED = os.path.exists(os.path.join(torchferry.PLUGIN_DIR, "torchferry_aten.so"))
# Longer than a loaded machine needs to import torch; a hang runs into it.
TIMEOUT = 120

pytestmark = pytest.mark.subprocess


# --- helpers -------------------------------------------------------------------


@pytest.fixture(scope="session")
def built(tmp_path_factory):
    """built(stem) -> path of tests/plugins/<stem>.c compiled as a plugin."""
    out = tmp_path_factory.mktemp("synthetic")
    cache = {}

    def build(stem):
        if stem not in cache:
            target = out / f"torchferry_{stem}.so"
            cc = os.environ.get("CC", "cc")
            subprocess.run(
                [cc, "-std=c11", "-shared", "-fPIC", "-O1", f"-I{ROOT}", f"-I{SYNTHETIC_SRC}",
                 os.path.join(SYNTHETIC_SRC, f"{stem}.c"), "-o", str(target)],
                check=True, capture_output=True, timeout=TIMEOUT,
            )  # fmt: skip
            cache[stem] = str(target)
        return cache[stem]

    return build


REPORT = """
import json, sys, torch, torchferry
from torchferry import plugins
print("REPORT" + json.dumps({
    "loaded": plugins.loaded(),
    "skipped": plugins.skipped(),
    "shadowed": plugins.shadowed(),
}))
"""


def run(code, timeout=TIMEOUT, **env):
    """`code` in a fresh interpreter with no TORCHFERRY_* setting but `env`
    (values may be bytes: the environment is bytes on POSIX). Returns the
    CompletedProcess; stdout and stderr decoded with backslashreplace. A
    hang fails the test with what the process printed so far."""
    full = clean_env(PYTHONPATH=HERE)
    for k, v in env.items():
        full[k] = v if isinstance(v, bytes) else str(v)
    try:
        r = run_child(["-c", textwrap.dedent(code)], full, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"hung for {timeout} s (import or call never returned); stderr: {e.stderr!r}")
    r.stdout = r.stdout.decode("utf-8", "backslashreplace")
    r.stderr = r.stderr.decode("utf-8", "backslashreplace")
    return r


def survived(r):
    """Fails with how the process died unless it exited 0."""
    if r.returncode < 0:
        name = signal.Signals(-r.returncode).name
        pytest.fail(f"the process died of {name}; stderr tail: {r.stderr[-2000:]}")
    assert r.returncode == 0, r.stderr[-3000:]


def report(extra="", **env):
    """What a fresh process loads and skips with `env`: (loaded, skipped,
    stdout, stderr), loaded and skipped keyed by path."""
    r = run(REPORT + textwrap.dedent(extra), **env)
    survived(r)
    line = [x for x in r.stdout.splitlines() if x.startswith("REPORT")][-1]
    data = json.loads(line[len("REPORT"):])
    return ({p["path"]: p for p in data["loaded"]}, {s["path"]: s for s in data["skipped"]}, r.stdout, r.stderr)


def names(loaded):
    return {p["name"] for p in loaded.values()}


def make_fifo(path):
    os.mkfifo(path)
    return str(path)


def make_socket(path):
    """A bound AF_UNIX socket at `path`; the caller keeps it open while the
    test runs. Bound by its name from inside its folder: a socket address
    holds at most 107 bytes, which a deep temporary folder can pass."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    before = os.getcwd()
    os.chdir(os.path.dirname(str(path)))
    try:
        s.bind(os.path.basename(str(path)))
    finally:
        os.chdir(before)
    return s


# --- A: only regular files are opened, never blocking -------------------------


def test_fifo_in_a_plugin_folder_is_skipped_not_waited_on(tmp_path):
    fifo = make_fifo(tmp_path / "torchferry_fifo.so")
    loaded, skipped, _, _ = report(TORCHFERRY_PLUGIN_PATH=tmp_path)
    assert fifo in skipped, list(skipped)
    reason = skipped[fifo]["reason"]
    assert "torchferry_fifo.so" in reason and "is a FIFO (named pipe)" in reason, reason
    assert "expected a regular file" in reason
    assert "cpu" in names(loaded)


def test_fifo_named_directly_on_the_path_is_skipped(tmp_path):
    fifo = make_fifo(tmp_path / "pipe")
    loaded, skipped, _, _ = report(TORCHFERRY_PLUGIN_PATH=fifo)
    assert "is a FIFO (named pipe)" in skipped[fifo]["reason"], skipped
    assert "cpu" in names(loaded)


def test_socket_folder_and_device_are_skipped_saying_what_they_are(tmp_path):
    sock = make_socket(tmp_path / "torchferry_sock.so")
    try:
        (tmp_path / "torchferry_dir.so").mkdir()
        path = f"{tmp_path}:/dev/null"
        loaded, skipped, _, _ = report(TORCHFERRY_PLUGIN_PATH=path)
    finally:
        sock.close()
    assert "is a socket" in skipped[str(tmp_path / "torchferry_sock.so")]["reason"]
    assert "is a folder" in skipped[str(tmp_path / "torchferry_dir.so")]["reason"]
    assert "is a character device" in skipped["/dev/null"]["reason"]
    assert "cpu" in names(loaded)


# --- B: every path error says what the path is --------------------------------


def test_symlink_loop_on_the_path_is_called_a_loop(tmp_path):
    loop = tmp_path / "loop"
    os.symlink("loop", loop)
    loaded, skipped, _, stderr = report(TORCHFERRY_PLUGIN_PATH=loop)
    reason = skipped[str(loop)]["reason"]
    assert "is a symbolic link loop" in reason and "does not exist" not in reason, reason
    assert "TORCHFERRY_PLUGIN_PATH" in reason
    assert "is a symbolic link loop" in stderr  # warned on import, too
    assert "cpu" in names(loaded)


def test_path_errors_in_a_folder_and_on_the_path(tmp_path):
    os.symlink("torchferry_loop.so", tmp_path / "torchferry_loop.so")
    os.symlink(tmp_path / "gone.so", tmp_path / "torchferry_dangling.so")
    a_file = tmp_path / "plain"
    a_file.write_text("x")
    missing = tmp_path / "missing"
    path = ":".join(map(str, [tmp_path, missing, a_file / "below"]))
    loaded, skipped, _, _ = report(TORCHFERRY_PLUGIN_PATH=path)
    why = {os.path.basename(p): s["reason"] for p, s in skipped.items()}
    assert "is a symbolic link loop" in why["torchferry_loop.so"], why
    assert "is a symbolic link to something that does not exist" in why["torchferry_dangling.so"], why
    assert "'" + str(missing) + "' does not exist" in why["missing"], why
    assert "is not a folder" in why["below"], why
    assert "cpu" in names(loaded)


# --- C: what the host keeps is what it validated -----------------------------


@pytest.mark.parametrize(
    "how, change",
    [
        ("fn", "it no longer validates: plugin 'initmutate': kernels[0] ('abs', cpu, float32): fn is NULL"),
        ("fn_swap", "kernels[0].fn changed from 0x"),
        ("kernel_data", "kernels[0].kernel_data changed from 0x"),
        ("count", "the kernels changed from 1 to 2"),
        ("op", "kernels[0] changed from (abs, cpu, float32) to (exp, cpu, float32)"),
        ("name", "name changed from 'initmutate' to 'renamed'"),
        ("version", "version changed from '0.0.1' to '6.6.6'"),
    ],
)
def test_init_that_rewrites_its_descriptor_is_skipped(built, how, change):
    plugin = built("initmutate")
    # First on the path, initmutate would serve (abs, cpu, float32) before the
    # cpu plugin; the call below would run whatever init left in kernels[0].
    r = run(
        """
        import json, torch, torchferry
        from torchferry import ops, plugins
        x = torch.tensor([-1.5, 2.0, -3.0])
        out = ops.abs(x)
        print("RESULT" + json.dumps({
            "abs": out.tolist(),
            "serves": plugins.kernel_for("abs", "cpu", "float32"),
            "skipped": plugins.skipped(),
        }))
        """,
        TORCHFERRY_PLUGIN_PATH=plugin,
        TF_TEST_INITMUTATE=how,
    )
    survived(r)
    d = json.loads([x for x in r.stdout.splitlines() if x.startswith("RESULT")][-1][6:])
    assert d["abs"] == [1.5, 2.0, 3.0]
    assert d["serves"] == "cpu"
    reason = [s["reason"] for s in d["skipped"] if s["path"] == plugin]
    assert reason, d["skipped"]
    assert "torchferry_initmutate.so: plugin 'initmutate' changed its descriptor during init" in reason[0]
    assert change in reason[0], reason[0]


# --- D: text that is not UTF-8 -----------------------------------------------

LATIN1 = b"caf\xe9"


def test_non_utf8_version_and_option_message(built):
    plugin = built("latin1")
    extra = """
    try:
        plugins.set_option("latin1", "k", "v")
        print("OPTION accepted")
    except ValueError as e:
        print("OPTION ValueError " + json.dumps(str(e)))
    except BaseException as e:
        print("OPTION " + type(e).__name__ + " " + json.dumps(str(e)))
    """
    loaded, skipped, stdout, _ = report(extra, TORCHFERRY_PLUGIN_PATH=plugin)
    assert loaded[plugin]["version"] == "caf\\xe9 1.0"
    option = [x for x in stdout.splitlines() if x.startswith("OPTION")][-1]
    assert option.startswith("OPTION ValueError "), option
    message = json.loads(option[len("OPTION ValueError "):])
    assert "latin1" in message and "refus\\xe9" in message, message
    kernel = run("""
import json, torch
from torchferry import ops
try:
    ops.noop(torch.ones(2, dtype=torch.float64))
    print("KERNEL accepted")
except ValueError as e:
    print("KERNEL " + json.dumps(str(e)))
""", TORCHFERRY_PLUGIN_PATH=plugin)
    survived(kernel)
    line = [x for x in kernel.stdout.splitlines() if x.startswith("KERNEL")][-1]
    assert line != "KERNEL accepted", line
    message = json.loads(line[len("KERNEL "):])
    assert message.startswith("latin1: noop(): ") and "refus\\xe9 (\\xff)" in message, message
    info_text = run("import sys; from torchferry import cli; sys.exit(cli.main(['info']))", TORCHFERRY_PLUGIN_PATH=plugin)
    survived(info_text)
    assert "latin1 caf\\xe9 1.0" in info_text.stdout


def test_non_utf8_init_failure_is_skipped_with_its_message(built):
    plugin = built("latin1")
    loaded, skipped, _, _ = report(TORCHFERRY_PLUGIN_PATH=plugin, TF_TEST_LATIN1_INIT="fail")
    assert plugin not in loaded
    assert "no caf\\xe9 machine found (\\xff\\xfe)" in skipped[plugin]["reason"], skipped[plugin]


def test_non_utf8_folder_and_file_names(built, tmp_path):
    folder = os.path.join(os.fsencode(tmp_path), LATIN1)
    os.mkdir(folder)
    shutil.copy(built("good"), os.path.join(folder, b"torchferry_good.so"))
    with open(os.path.join(folder, b"torchferry_" + LATIN1 + b".so"), "wb") as f:
        f.write(b"not a library\n")
    loaded, skipped, _, _ = report(TORCHFERRY_PLUGIN_PATH=folder)
    shown = str(tmp_path) + "/caf\\xe9"
    assert shown + "/torchferry_good.so" in loaded, list(loaded)
    junk = skipped[shown + "/torchferry_caf\\xe9.so"]
    assert "torchferry_caf\\xe9.so: cannot load the library" in junk["reason"], junk


def test_non_utf8_selection(built):
    loaded, skipped, _, _ = report(TORCHFERRY_PLUGINS=LATIN1)
    assert not loaded
    assert skipped and all("TORCHFERRY_PLUGINS='caf\\xe9'" in s["reason"] for s in skipped.values()), skipped


@pytest.mark.parametrize("as_json", [False, True])
def test_info_survives_non_utf8_everywhere(built, tmp_path, as_json):
    folder = os.path.join(os.fsencode(tmp_path), LATIN1)
    os.mkdir(folder)
    shutil.copy(built("latin1"), os.path.join(folder, b"torchferry_latin1.so"))
    env = clean_env()
    env["TORCHFERRY_PLUGIN_PATH"] = folder
    env["TORCHFERRY_PLUGINS"] = b"latin1,cpu," + LATIN1
    r = subprocess.run(
        [sys.executable, "-m", "torchferry", "info"] + (["--json"] if as_json else []),
        env=env, capture_output=True, timeout=TIMEOUT,
    )  # fmt: skip
    survived(r)
    text = r.stdout.decode("utf-8")  # whatever the input, the output is UTF-8
    if as_json:
        data = json.loads(text)
        assert {p["name"] for p in data["plugins"]} >= {"latin1", "cpu"}
        assert data["plugin_search"]["TORCHFERRY_PLUGINS"] == "latin1,cpu,caf\\xe9"
    else:
        assert "latin1 caf\\xe9 1.0" in text and "caf\\xe9/torchferry_latin1.so" in text
        assert "TORCHFERRY_PLUGINS=latin1,cpu,caf\\xe9" in text


# --- E: negative strides through the ATen fallback -----------------------------

NEGATIVE_STRIDES = """
import json
import numpy as np
import torch, torchferry
from torchferry import ops, plugins
results = {}
def check(name, got, want):
    results[name] = bool(np.array_equal(got, want)) or f"{got.tolist()} != {want.tolist()}"
x8 = np.arange(-5, 5, dtype=np.int8)[::-1]
out = np.zeros(10, np.int8)
ops.abs(x8, out=out)
check("abs int8 reversed", out, np.abs(x8))
u8 = np.arange(10, dtype=np.uint8)[::-1]
out = np.zeros(10, np.uint8)
ops.add(u8, np.arange(10, dtype=np.uint8), out=out)
check("add uint8 reversed", out, u8 + np.arange(10, dtype=np.uint8))
m = np.arange(24, dtype=np.int16).reshape(4, 6)[::-1, ::-2]
out = np.zeros(m.shape, np.int16)
ops.neg(m, out=out)
check("neg int16 2-D, both dims reversed", out, -m)
buf = np.zeros(10, np.int8)
ops.abs(x8, out=buf[::-1])
check("abs int8 into a reversed out", buf[::-1], np.abs(x8))
same = np.arange(-4, 4, dtype=np.int8)[::-1].copy()[::-1]
ref = np.abs(same)
ops.abs(same, out=same)
check("abs int8 in place on a reversed view", same, ref)
empty = np.zeros((0, 3), np.int8)[:, ::-1]
ops.abs(empty, out=np.zeros((0, 3), np.int8))
results["empty reversed"] = True
results["serves"] = plugins.kernel_for("abs", "cpu", "int8")
print("RESULT" + json.dumps(results))
"""


@pytest.mark.skipif(not ATEN_INSTALLED, reason="this build has no ATen plugin (-Daten=disabled)")
@pytest.mark.parametrize("strategy", ["source", "from_blob", "pool"])
def test_negative_strides_reach_aten_and_compute_right(strategy):
    r = run(NEGATIVE_STRIDES, TORCHFERRY_ATEN_STRATEGY=strategy)
    survived(r)
    d = json.loads([x for x in r.stdout.splitlines() if x.startswith("RESULT")][-1][6:])
    assert d.pop("serves") == "aten"
    assert all(v is True for v in d.values()), d


# --- F: TORCHFERRY_CPU_ISA ------------------------------------------------------


@pytest.mark.parametrize("value", ["Baseline", "BASELINE", " baseline", "AVX2", "avx512"])
def test_misspelt_cpu_isa_is_warned_about(value):
    r = run("import torch, torchferry; from torchferry import ops; print(ops.abs(torch.tensor([-2.0])).item())",
            TORCHFERRY_CPU_ISA=value)  # fmt: skip
    survived(r)
    assert r.stdout.strip().endswith("2.0")
    assert f"torchferry: [cpu] TORCHFERRY_CPU_ISA='{value}' is not an instruction-set choice" in r.stderr, r.stderr
    assert "expected 'baseline', 'avx2' or unset" in r.stderr


@pytest.mark.parametrize("value", ["baseline", "avx2", ""])
def test_valid_cpu_isa_is_quiet(value):
    r = run("import torchferry", TORCHFERRY_CPU_ISA=value)
    survived(r)
    assert "TORCHFERRY_CPU_ISA" not in r.stderr, r.stderr


def test_cpu_plugin_version_names_its_tier():
    # `python -m torchferry info` prints the version; a cap shows there.
    code = "from torchferry import plugins; print([p['version'] for p in plugins.loaded() if p['name'] == 'cpu'][0])"
    r = run(code, TORCHFERRY_CPU_ISA="baseline")
    survived(r)
    assert r.stdout.strip() == f"{torchferry.__version__} (baseline x86-64 kernels)", r.stdout
    r = run(code, TORCHFERRY_CPU_ISA="")
    survived(r)
    tiers = ("AVX-512", "AVX2, FMA and F16C", "baseline x86-64")
    assert r.stdout.strip() in [f"{torchferry.__version__} ({t} kernels)" for t in tiers], r.stdout


# --- G: a randomised plugin folder ----------------------------------------------

ENTRY_KINDS = ("good", "regular_junk", "empty", "truncated_elf", "fifo", "socket", "symlink_good",
               "symlink_loop", "symlink_dangling", "folder", "latin1_name", "initmutate")  # fmt: skip


def _populate(folder, kinds, built, rng, sockets):
    """One entry of each kind in `kinds` (a kind may repeat), with names that
    sort in random order. Returns {basename: kind}."""
    good = built("good")
    made = {}
    for i, kind in enumerate(kinds):
        stem = f"r{rng.randrange(1 << 30):08x}_{i}"
        name = f"torchferry_{stem}.so"
        path = os.path.join(folder, name)
        if kind == "good":
            # Same plugin name each time: the second copy is "already loaded".
            shutil.copy(good, path)
        elif kind == "regular_junk":
            with open(path, "wb") as f:
                f.write(bytes(rng.randrange(256) for _ in range(rng.randrange(1, 300))))
        elif kind == "empty":
            open(path, "wb").close()
        elif kind == "truncated_elf":
            with open(good, "rb") as f:
                data = f.read()
            with open(path, "wb") as f:
                f.write(data[: rng.randrange(16, min(len(data), 4096))])
        elif kind == "fifo":
            os.mkfifo(path)
        elif kind == "socket":
            sockets.append(make_socket(path))
        elif kind == "symlink_good":
            os.symlink(good, path)
        elif kind == "symlink_loop":
            os.symlink(name, path)
        elif kind == "symlink_dangling":
            os.symlink(os.path.join(folder, "nothing_here"), path)
        elif kind == "folder":
            os.mkdir(path)
        elif kind == "latin1_name":
            name = f"torchferry_{stem}\udce9.so"  # the byte 0xe9 as a file name
            shutil.copy(built("latin1"), os.path.join(folder, name))
        elif kind == "initmutate":
            shutil.copy(built("initmutate"), path)
        made[name] = kind
    return made


@pytest.mark.parametrize("seed", range(6))
def test_random_plugin_folder_loads_without_hanging_or_crashing(built, tmp_path, seed):
    rng = random.Random(seed)
    kinds = [rng.choice(ENTRY_KINDS) for _ in range(rng.randrange(3, 10))]
    if seed == 0:
        kinds = list(ENTRY_KINDS)  # every kind at least once
    folder = tmp_path / "plugins"
    folder.mkdir()
    sockets = []
    try:
        made = _populate(str(folder), kinds, built, rng, sockets)
        # The folder, and some of its entries named directly, in random order.
        direct = [str(folder / n) for n in made if rng.random() < 0.3 and "\udce9" not in n]
        entries = [str(folder)] + direct
        rng.shuffle(entries)
        path = os.fsencode(":".join(entries))
        loaded, skipped, _, _ = report(TORCHFERRY_PLUGIN_PATH=path, TORCHFERRY_LOG="off")
    finally:
        for s in sockets:
            s.close()
    assert "cpu" in names(loaded)
    seen = set(loaded) | set(skipped)
    for name, kind in made.items():
        shown = str(folder / name).encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        assert shown in seen, (kind, shown, sorted(seen))
        if kind in ("regular_junk", "empty", "truncated_elf", "fifo", "socket", "symlink_loop",
                    "symlink_dangling", "folder", "initmutate"):  # fmt: skip
            assert shown in skipped and skipped[shown]["reason"], (kind, shown)
            assert shown not in loaded
    for p in loaded.values():
        assert p["name"] in ("cpu", "good", "latin1", "example_c", "aten", "cuda"), p
