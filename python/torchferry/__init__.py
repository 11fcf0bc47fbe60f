"""torchferry: hand torch tensors to native kernels shipped as versioned plugins.

    import torch, torchferry
    x = torch.randn(8, 4096)
    out = torch.empty_like(x)
    torchferry.ops.silu(x, out=out)

`torchferry.ops` holds the ops, `torchferry.bridge` the tensor bridge and its
path counters, `torchferry.plugins` what was loaded and what was skipped.
`python -m torchferry info` shows all of it.
"""

import os as _os

from . import gil as _gil

# Before torch and the native core: the reason a free-threaded interpreter is
# refused is the same whatever torch it has.
_gil.check()

import torch as _torch  # noqa: E402

__version__ = "0.1.0"

# The first torch whose libtorch_cpu.so exports every AOTI C shim function the
# bridge needs. Three it uses where they exist came later
# (aoti_torch_get_layout in 2.9, aoti_torch_device_type_meta in 2.7,
# aoti_torch_layout_strided in 2.4); the bridge does without them.
MIN_TORCH = (2, 3)

# What core/bridge/libtorch_symbols.cc refuses to start without (a test keeps the two
# lists equal). Only an import that is refused reads it, to name what is
# missing.
REQUIRED_TORCH_SYMBOLS = (
    "aoti_torch_get_data_ptr",
    "aoti_torch_get_dim",
    "aoti_torch_get_sizes",
    "aoti_torch_get_strides",
    "aoti_torch_get_dtype",
    "aoti_torch_get_device_type",
    "aoti_torch_get_device_index",
    "aoti_torch_get_storage_offset",
    "aoti_torch_get_storage_size",
    "aoti_torch_delete_tensor_object",
    "aoti_torch_grad_mode_is_enabled",
    "aoti_torch_device_type_cpu",
    "aoti_torch_device_type_cuda",
)


def _release(version):
    """(major, minor) of a torch version string such as '2.14.1+cu130'."""
    parts = version.split("+")[0].split(".")
    try:
        return int(parts[0]), int(parts[1])
    except (IndexError, ValueError):
        raise ImportError(
            f"torchferry could not parse the torch version {version!r}; expected 'X.Y.Z'"
        ) from None


def _missing_symbols(library):
    """The names of REQUIRED_TORCH_SYMBOLS that `library` (a path) does not
    export, or a sentence saying why it could not be read."""
    import ctypes

    try:
        handle = ctypes.CDLL(library)  # already loaded by torch: no side effect
    except OSError as e:
        return [f"(could not open it: {e})"]
    return [name for name in REQUIRED_TORCH_SYMBOLS if not hasattr(handle, name)]


def _loaded_libtorch_cpu(torch_dir):
    """The libtorch_cpu that `import torch` loaded (a wheel keeps it in
    torch/lib, a distribution's package may not), else the wheel's path."""
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                path = line.split(None, 5)[-1].strip()
                if _os.path.basename(path).startswith("libtorch_cpu.so"):
                    return path
    except OSError:
        pass
    return _os.path.join(torch_dir, "lib", "libtorch_cpu.so")


def _refusal(version, torch_dir, library=None):
    """Why torch `version` at `torch_dir` is refused: the version, and the
    functions its libtorch_cpu (`library`, by default the loaded one) lacks."""
    floor = f"{MIN_TORCH[0]}.{MIN_TORCH[1]}"
    library = library or _loaded_libtorch_cpu(torch_dir)
    missing = _missing_symbols(library) if _os.path.exists(library) else []
    if missing:
        shown = ", ".join(missing[:3])
        if len(missing) > 3:
            shown += f" and {len(missing) - 3} more"
        why = f"its {library} lacks {shown}, which torchferry's bridge needs"
    elif _os.path.exists(library):
        why = f"it exports what the bridge needs, but torch below {floor} is untested"
    else:
        why = f"it has no {library}"
    return (
        f"torchferry needs torch >= {floor}, found torch {version} at {torch_dir}: "
        f"{why}; upgrade torch (pip install 'torch>={floor}')"
    )


if _release(_torch.__version__) < MIN_TORCH:
    raise ImportError(_refusal(_torch.__version__, _os.path.dirname(_torch.__file__)))

from . import _C  # noqa: E402  (torch must be loaded first: the bridge finds it)

from . import aten_build as _aten_build  # noqa: E402
from . import entry_points as _entry_points  # noqa: E402

PLUGIN_DIR = _os.path.join(_os.path.dirname(__file__), "plugins")
# Where `python -m torchferry build-aten` puts the ATen plugin for this
# torch; searched after PLUGIN_DIR when it exists.
BUILT_PLUGIN_DIR = _aten_build.user_plugin_dir(_torch.__version__)
_BUILT_PLUGIN_DIR_GIVEN = _os.path.isdir(BUILT_PLUGIN_DIR)
# Installed distributions' plugins (group torchferry.plugins), resolved before
# the loader starts: it searches them after TORCHFERRY_PLUGIN_PATH.
# While they resolve and load, a query (torchferry.plugins.loaded() from an
# entry point's module, say) is told that torchferry is still loading.
#
# The variables that choose the bridge's code (BRIDGE_VARIABLES) may hold a
# value this torch cannot honour. The import then succeeds with no plugins
# loaded and STARTUP_ERROR naming the variable: every use of the bridge, the
# ops or the plugins raises that ValueError, while `python -m torchferry
# info` and `config`, which run inside this import, still answer.
# The loader's environment table (loader/environment.h) says which they are.
BRIDGE_VARIABLES = tuple(e["name"] for e in _C._environment_table() if e["reader"] == "bridge")
STARTUP_ERROR = None


# Defined before the plugins load: an entry point's module may import
# torchferry.ops (which imports this) while they do.
def _require_started():
    """Raises STARTUP_ERROR's ValueError when the bridge did not start."""
    if STARTUP_ERROR is not None:
        raise ValueError(STARTUP_ERROR)


_C._set_loading(True)
try:
    _ENTRY_PATHS, _ENTRY_UNRESOLVED, ENTRY_POINTS = _entry_points.resolve()
    _C._init(
        _torch,
        _torch.__version__,
        PLUGIN_DIR,
        _ENTRY_PATHS,
        _ENTRY_UNRESOLVED,
        BUILT_PLUGIN_DIR if _BUILT_PLUGIN_DIR_GIVEN else None,
    )
except ValueError as _error:
    if not any(name in str(_error) for name in BRIDGE_VARIABLES):
        raise
    STARTUP_ERROR = str(_error)
finally:
    _C._set_loading(False)


if STARTUP_ERROR is not None:

    def __getattr__(name):
        if name in ("bridge", "ops", "plugins", "library"):
            _require_started()
        raise AttributeError(f"module 'torchferry' has no attribute {name!r}")

else:
    from . import bridge, ops, plugins  # noqa: E402

    # An entry point's module may have imported torchferry.ops before the
    # plugins loaded, and a reload finds it imported: export what loaded.
    ops.__all__ = ops._Export()
from .config import cflags, cmake_dir, include_dir, pkgconfig_dir, plugin_dir  # noqa: E402


# torch.compile integration (torchferry.library) needs torch >= 2.5: 2.3
# lacks torch.library.register_fake, 2.4 Dynamo's substitute_in_graph.
COMPILE_FLOOR = (2, 5)
# None where torchferry's ops are torch custom ops, else why not (`info`).
COMPILE_UNAVAILABLE = None


def _load_library():
    """torch.compile integration (torchferry.library). A torch that lacks an
    API it needs gets none of it; the eager ops work regardless, and `import
    torchferry.library` raises the same. A torch below COMPILE_FLOOR lacks
    them by design and is not warned about at every import; a newer one that
    lacks them is an odd build, and the warning names the API."""
    global COMPILE_UNAVAILABLE
    try:
        from . import library

        # Imported earlier (by an entry point's module, before the plugins
        # loaded; or before a reload): registers what it has not yet.
        library._register_all()
        COMPILE_UNAVAILABLE = None
    except ImportError as e:
        COMPILE_UNAVAILABLE = str(e)
        if _release(_torch.__version__) >= COMPILE_FLOOR:
            import warnings

            warnings.warn(str(e), RuntimeWarning, stacklevel=3)


if STARTUP_ERROR is None:
    _load_library()

__all__ = [
    "bridge",
    "ops",
    "plugins",
    "__version__",
    "include_dir",
    "plugin_dir",
    "cmake_dir",
    "pkgconfig_dir",
    "cflags",
]
