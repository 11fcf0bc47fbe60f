"""Free-threaded CPython is refused at import, with a reason (gil.py): the
rule over every combination, and the import's wiring in a fresh interpreter
that reports itself as a free-threaded build."""

import subprocess
import sys

import pytest

from torchferry import gil


def test_a_gil_build_is_accepted():
    assert gil.refusal(free_threaded_build=False, gil_enabled=True) is None


@pytest.mark.parametrize("gil_enabled", [False, True])
def test_a_free_threaded_build_is_refused(gil_enabled):
    why = gil.refusal(free_threaded_build=True, gil_enabled=gil_enabled)
    assert why is not None
    assert "free-threaded CPython" in why
    assert "assume the GIL" in why
    assert ("GIL disabled" in why) == (not gil_enabled)


def test_gil_disabled_at_run_time_is_refused():
    # PYTHON_GIL=0 on a free-threaded build: the case that races.
    why = gil.refusal(free_threaded_build=False, gil_enabled=False)
    assert why is not None and "GIL disabled" in why


def test_this_interpreter_imports():
    gil.check()  # the interpreter the tests run on has the GIL


def test_import_refused_on_a_free_threaded_build():
    # The config variable is what a free-threaded CPython reports; setting
    # it before the import checks that __init__ consults gil.check() first,
    # before torch or the native core load.
    code = (
        "import sys, sysconfig\n"
        "sysconfig.get_config_vars()['Py_GIL_DISABLED'] = 1\n"
        "try:\n"
        "    import torchferry\n"
        "except ImportError as e:\n"
        "    print('refused:', e)\n"
        "    print('torch loaded:', 'torch' in sys.modules)\n"
        "else:\n"
        "    print('imported')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "refused: torchferry does not support free-threaded CPython" in out, out
    assert "torch loaded: False" in out, out
