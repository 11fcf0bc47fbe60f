"""The GIL check made before torchferry's native core is imported.

The bridge and the call path assume the GIL: the bridge's counters are plain
loads and stores, the offset path reads a tensor's TensorImpl words with no
lock against another thread resizing it, and the op functions keep per-call
state in static storage. On a free-threaded CPython (3.13t, 3.14t, ...) none
of that holds, so the import is refused with a reason rather than allowed to
race. The build refuses such an interpreter as well (meson.build).
"""

import sys
import sysconfig


def refusal(free_threaded_build, gil_enabled):
    """Why torchferry cannot be imported under this interpreter, or None.

    `free_threaded_build`: the interpreter was built with Py_GIL_DISABLED;
    `gil_enabled`: sys._is_gil_enabled() at this import (True where that
    function does not exist, as on every CPython before 3.13)."""
    if not free_threaded_build and gil_enabled:
        return None
    version = f"{sys.version_info[0]}.{sys.version_info[1]}"
    state = "with the GIL disabled" if not gil_enabled else "with the GIL re-enabled"
    return (
        f"torchferry does not support free-threaded CPython (this is {version}t, running {state}): "
        "its tensor bridge and call path assume the GIL; use the default (GIL) build of "
        f"CPython {version}"
    )


def check():
    """Raises ImportError where refusal() gives a reason for this interpreter."""
    free_threaded = bool(sysconfig.get_config_var("Py_GIL_DISABLED"))
    is_enabled = getattr(sys, "_is_gil_enabled", None)
    why = refusal(free_threaded, True if is_enabled is None else bool(is_enabled()))
    if why is not None:
        raise ImportError(why)
