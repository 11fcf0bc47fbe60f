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
# The calls whose path docs/internals.md lists, each under its own heading.
ADD = "One call, file by file"
DECLARED = "A declared op, file by file"
# The most files one call may enter: a longer path is a layer doing another's
# job, or a hop that could be handed down.
MAX_FILES = 12


def section(title):
    with open(os.path.join(ROOT, "docs", "internals.md")) as f:
        text = f.read()
    parts = re.split(r"^## ", text, flags=re.M)
    found = [p for p in parts if p.startswith(title + "\n")]
    assert found, f"docs/internals.md has no section '## {title}'"
    return found[0]


def steps(title=None):
    if title is not None:
        return STEP.findall(section(title))
    found = steps(ADD) + steps(DECLARED)
    return sorted(set(found), key=found.index)


@pytest.mark.parametrize("title", [ADD, DECLARED])
def test_the_call_path_is_listed(title):
    found = steps(title)
    assert len(found) >= 10, found
    assert len(found) <= MAX_FILES, f"{title}: {len(found)} files"
    paths = [path for path, _ in found]
    assert len(paths) == len(set(paths)), "each file is listed once"


def test_the_declared_path_goes_through_its_rule_and_plugin():
    found = dict(steps(DECLARED))
    assert found.get("core/prepare/prepare_declared.cc") == "PrepareDeclared"
    assert "plugins/example_c/example_c.c" in found, found


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
