"""`python -m torchferry build-aten`: the ATen fallback plugin, built for the
torch this Python runs.

The ATen plugin is the one part of torchferry that includes torch's C++
headers, so one binary serves one torch release; a wheel built with build
isolation (as `pip wheel .` and every index's wheels are) holds none. Its
sources travel in the package (share/torchferry/aten/); this module compiles
them with the system's C++ compiler against the headers and libraries inside
the torch wheel, into a per-user folder that `import torchferry` searches
after the package's own plugins:

    $TORCHFERRY_CACHE/aten/torch-<torch.__version__>/torchferry_aten.so
    (TORCHFERRY_CACHE defaults to $XDG_CACHE_HOME/torchferry, else
    ~/.cache/torchferry)

So a package that carries an ATen plugin for this torch keeps it, and one
whose plugin was built for another torch (which refuses to load) gives way
to the one built here. The plugin checks at load that it runs under the
torch release it was built for.

What the in-tree build (plugins/aten/meson.build) probes, this does too, by
compiling the same files (plugins/aten/probes/, carried in the package): the
C++ standard torch's headers need (from what torch's build config asks, as
plugins/aten/find_torch.py reads it, upward), c10::AcceleratorError (torch
>= 2.8) and scaled_dot_product_attention's enable_gqa (torch >= 2.5). The
C++ ABI (_GLIBCXX_USE_CXX11_ABI) is torch's own answer.
"""

import os
import pathlib
import runpy
import shutil
import subprocess
import sys

from .user_error import UserError, writable_dir

PLUGIN_FILE = "torchferry_aten.so"
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


class BuildError(Exception):
    """A build that cannot go on, with what was expected and what was found."""


def cache_root():
    """Where torchferry keeps per-user files."""
    explicit = os.environ.get("TORCHFERRY_CACHE")
    if explicit:
        return explicit
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "torchferry")


def user_plugin_dir(torch_version):
    """The folder the ATen plugin built for `torch_version` goes to, and that
    `import torchferry` under that torch searches."""
    return os.path.join(cache_root(), "aten", f"torch-{torch_version}")


def source_dir():
    """The ATen plugin's sources as the package carries them."""
    return os.path.join(_PACKAGE_DIR, "share", "torchferry", "aten")


def _compiler():
    """The C++ compiler: $CXX, else c++, g++ or clang++ on PATH."""
    named = os.environ.get("CXX")
    if named is not None:
        words = named.split()
        if not words:
            raise UserError(
                f"CXX is set to {named!r}, which names no compiler; set CXX to a C++17 compiler "
                "(CXX=g++) or unset it to use c++ from PATH"
            )
        if shutil.which(words[0]) is None:
            raise UserError(
                f"CXX names {words[0]!r}, which is not on PATH; set CXX to an "
                "installed C++17 compiler (CXX=g++) or unset it to use c++ from PATH"
            )
        # A relative path (CXX=./bin/g++) still names it from the temporary
        # folder the compiles run in.
        if os.sep in words[0]:
            words[0] = os.path.abspath(words[0])
        return words
    for name in ("c++", "g++", "clang++"):
        path = shutil.which(name)
        if path:
            return [path]
    raise UserError(
        "found no C++ compiler (looked for $CXX, c++, g++ and clang++ on PATH); the ATen plugin "
        "compiles against torch's C++ headers: install one (Debian/Ubuntu: apt install g++; "
        "Fedora/RHEL: dnf install gcc-c++; conda: conda install gxx_linux-64)"
    )


def _torch_layout(torch):
    """torch's package folder, checked for what a C++ build needs."""
    root = os.path.dirname(os.path.abspath(torch.__file__))
    needed = {
        "C++ headers": os.path.join(root, "include", "ATen", "core", "Tensor.h"),
        "libc10": os.path.join(root, "lib", "libc10.so"),
        "libtorch_cpu": os.path.join(root, "lib", "libtorch_cpu.so"),
    }
    missing = [f"{what} ({path})" for what, path in needed.items() if not os.path.exists(path)]
    if missing:
        raise BuildError(
            f"torch {torch.__version__} at {root} lacks {', '.join(missing)}: expected a torch wheel "
            "from the index, which carries its C++ headers and libraries"
        )
    return root


def _config_cxx_standard(root):
    """The standard torch's build config asks of code that includes its
    headers: plugins/aten/find_torch.py's answer, the in-tree build's, from
    the copy the package carries beside the sources."""
    path = os.path.join(source_dir(), "find_torch.py")
    if not os.path.exists(path):
        raise BuildError(f"this torchferry package lacks {path}; expected it beside the ATen plugin's sources")
    # run_path writes no bytecode beside it, in a package folder that may be read-only.
    found = runpy.run_path(path, run_name="torchferry_aten_find_torch")
    return found["cxx_standard"](pathlib.Path(root))


def _probe(name):
    """One of plugins/aten/probes/, as the package carries it: the files the
    in-tree build compiles too."""
    path = os.path.join(source_dir(), "probes", f"{name}.cc")
    if not os.path.exists(path):
        raise BuildError(f"this torchferry package lacks {path}; expected it beside the ATen plugin's sources")
    return path


def _compiles(cxx, flags, probe):
    run = subprocess.run([*cxx, *flags, "-fsyntax-only", probe], capture_output=True, text=True)
    return run.returncode == 0, run.stderr


def _plan(torch, cxx, log):
    """The flags every source compiles with, after the probes."""
    root = _torch_layout(torch)
    abi = int(bool(torch._C._GLIBCXX_USE_CXX11_ABI))
    base = [
        "-isystem", os.path.join(root, "include"),
        "-isystem", os.path.join(root, "include", "torch", "csrc", "api", "include"),
        f"-D_GLIBCXX_USE_CXX11_ABI={abi}",
    ]
    asks = _config_cxx_standard(root)
    std = None
    errors = ""
    for candidate in (17, 20, 23):
        if candidate < asks:
            continue
        ok, errors = _compiles(cxx, [*base, f"-std=c++{candidate}"], _probe("torch_headers"))
        log(f"torch's headers as C++{candidate}: {'yes' if ok else 'no'}")
        if ok:
            std = candidate
            break
    if std is None:
        first = "\n".join(errors.strip().splitlines()[:8])
        raise BuildError(
            f"the C++ headers of torch {torch.__version__} at {root} compile as none of C++17, C++20, "
            f"C++23 with {' '.join(cxx)} (torch's build config asks for C++{asks}); a newer compiler "
            f"is needed. The compiler said:\n{first}"
        )
    flags = [*base, f"-std=c++{std}"]
    accelerator_error, _ = _compiles(cxx, flags, _probe("accelerator_error"))
    sdpa_gqa, _ = _compiles(cxx, flags, _probe("sdpa_gqa"))
    log(f"c10::AcceleratorError: {'yes' if accelerator_error else 'no'}; "
        f"scaled_dot_product_attention(enable_gqa): {'yes' if sdpa_gqa else 'no'}")
    defines = [
        f'-DTORCHFERRY_ATEN_TORCH_VERSION="{torch.__version__}"',
        f"-DTORCHFERRY_ATEN_HAS_ACCELERATOR_ERROR={int(accelerator_error)}",
        f"-DTORCHFERRY_ATEN_HAS_SDPA_GQA={int(sdpa_gqa)}",
    ]
    if os.path.exists(os.path.join(root, "lib", "libc10_cuda.so")):
        defines.append("-DTORCHFERRY_ATEN_WITH_CUDA=1")
    return root, std, flags + defines


def build(out_dir=None, jobs=None, log=print):
    """Builds the ATen plugin for the imported torch into `out_dir` (default
    user_plugin_dir(torch.__version__)); returns the plugin's path."""
    import concurrent.futures
    import tempfile

    import torch

    # The user's own mistakes first (where the plugin goes, which compiler),
    # before what only a broken install explains.
    if out_dir is not None:
        writable_dir(out_dir, "--out", "name a folder you can write to")
    else:
        out_dir = user_plugin_dir(torch.__version__)
        source = next((v for v in ("TORCHFERRY_CACHE", "XDG_CACHE_HOME") if os.environ.get(v)), "HOME")
        writable_dir(
            out_dir,
            f"the plugin folder from {source}",
            "set TORCHFERRY_CACHE to a folder you can write to, or pass --out DIR",
        )
    cxx = _compiler()
    sources = source_dir()
    units = sorted(f for f in os.listdir(sources) if f.endswith(".cc")) if os.path.isdir(sources) else []
    if not units:
        raise BuildError(f"found no ATen plugin sources in {sources}; this torchferry package is incomplete")
    log(f"building the ATen plugin for torch {torch.__version__} with {' '.join(cxx)}")
    with tempfile.TemporaryDirectory(prefix="torchferry-aten-") as work:
        root, std, flags = _plan(torch, cxx, log)
        # The sources include "abi/torchferry.h", the header the package
        # carries for plugin builds.
        os.makedirs(os.path.join(work, "include", "abi"))
        shutil.copy(os.path.join(_PACKAGE_DIR, "include", "torchferry.h"),
                    os.path.join(work, "include", "abi", "torchferry.h"))
        # Compiled from inside the temporary folder, which the command line
        # names only relatively: two builds of the same sources give the same
        # command, so that a compiler cache (CXX="ccache c++") reuses objects.
        common = [*cxx, "-O2", "-DNDEBUG", "-fPIC", "-fvisibility=hidden",
                  "-fvisibility-inlines-hidden", "-I", "include", "-I", sources, *flags]

        def compile_one(unit):
            obj = os.path.join(work, unit + ".o")
            run = subprocess.run([*common, "-c", os.path.join(sources, unit), "-o", obj],
                                 capture_output=True, text=True, cwd=work)
            return unit, obj, run

        jobs = jobs or os.cpu_count() or 1
        log(f"compiling {len(units)} files as C++{std}, {jobs} at a time")
        objects = []
        with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
            for unit, obj, run in pool.map(compile_one, units):
                if run.returncode != 0:
                    raise BuildError(f"{unit} failed to compile:\n{run.stderr.strip()}")
                objects.append(obj)
        lib = os.path.join(root, "lib")
        staged = os.path.join(work, PLUGIN_FILE)
        link = [*cxx, "-shared", "-o", staged, *objects,
                f"-Wl,--version-script={os.path.join(sources, 'exports.map')}",
                f"-L{lib}", "-lc10", "-ltorch_cpu", f"-Wl,-rpath,{lib}"]
        run = subprocess.run(link, capture_output=True, text=True)
        if run.returncode != 0:
            raise BuildError(f"linking {PLUGIN_FILE} failed:\n{run.stderr.strip()}")
        # Into place by rename, so that a process importing torchferry
        # meanwhile sees the old plugin or the new one, never half of one.
        target = os.path.join(out_dir, PLUGIN_FILE)
        moving = os.path.join(out_dir, f".{PLUGIN_FILE}.{os.getpid()}")
        shutil.copy(staged, moving)
        os.replace(moving, target)
    return target


def main(args):
    try:
        path = build(out_dir=args.out, jobs=args.jobs)
    except BuildError as error:
        print(f"build-aten: {error}", file=sys.stderr)
        return 1
    print(f"built {path}")
    if args.out:
        print("it is found through TORCHFERRY_PLUGIN_PATH, or as the default folder's plugin "
              "when built without --out")
    else:
        print("new processes that import torchferry under this torch load it "
              "(`python -m torchferry info` lists it)")
    return 0
