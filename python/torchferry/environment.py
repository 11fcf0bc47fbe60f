"""The TORCHFERRY_* variables, as the loader's table (loader/environment.h)
lists them: the one place that says what each is, who reads it and whether a
privileged process ignores it."""

from . import _C


def entry(name):
    """The table's entry for a variable (name, selects_code, reader, values,
    meaning); None for a name it does not list (a misspelling, say)."""
    return next((e for e in _C._environment_table() if e["name"] == name), None)


def describe(e):
    """'values: meaning', or the meaning alone where the values are free."""
    return f"{e['values']}: {e['meaning']}" if e["values"] else e["meaning"]


def help_text():
    """'NAME (values: meaning), ...' for every variable."""
    return ", ".join(f"{e['name']} ({describe(e)})" for e in _C._environment_table())
