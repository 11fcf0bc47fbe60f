"""docs/internals.md's file list for one call stays true to the code.

Each numbered step names a file and, after it, the function the call enters
it by. A step whose file is gone, or no longer defines that function, fails
here, so the list cannot silently drift from the code it describes.
"""

import os
import re

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
STEP = re.compile(r"^\d+\. `([^`]+)`: `(\w+)`\.", re.M)


def steps():
    with open(os.path.join(ROOT, "docs", "internals.md")) as f:
        return STEP.findall(f.read())


def test_the_call_path_is_listed():
    found = steps()
    assert len(found) >= 10, found
    paths = [path for path, _ in found]
    assert len(paths) == len(set(paths)), "each file is listed once"


def defines(text, function):
    # A definition: the name (maybe qualified, `Bridge::Read`) then its
    # parameters, then a body or an initializer list, not a bare call.
    pattern = r"(^|[\s*&:])" + re.escape(function) + r"\([^;{]*\)\s*(const\s*)?(\{|:|->)"
    return re.search(pattern, text, re.M | re.S) is not None


@pytest.mark.parametrize("path,function", steps(), ids=lambda v: v)
def test_listed_file_defines_the_function(path, function):
    full = os.path.join(ROOT, path)
    assert os.path.isfile(full), f"docs/internals.md lists {path}, which is gone"
    with open(full) as f:
        text = f.read()
    assert defines(text, function), f"{path} no longer defines {function}(); update docs/internals.md"


def test_a_missing_function_is_caught():
    # The check can fail: a call is not a definition.
    assert not defines("  return Read(obj);\n", "Read")
    assert defines("bool Bridge::Read(PyObject* obj) const {\n", "Read")
