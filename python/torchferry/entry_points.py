"""Plugins that installed distributions register, found without environment
variables.

A vendor's wheel names its plugin folder or file in the `torchferry.plugins`
entry point group of its pyproject.toml:

    [project.entry-points."torchferry.plugins"]
    myvendor = "myvendor_torchferry"               # a package: its own folder
    other = "myvendor_torchferry.paths:plugin_dir" # a str/PathLike, or a callable returning one

A value that names a package alone stands for the package's folder, found
without running any of its code; `module:attr` imports the module (only the
modules of this group's entry points are imported, never other
distributions') and takes `attr`, calling it when it is callable. The paths
go to the loader at import, after TORCHFERRY_PLUGIN_PATH and before the
package's own plugins, and are then found, selected (TORCHFERRY_PLUGINS),
shadowed and listed like any other. An entry point that names nothing usable
(its module fails to import, the module or the callable raises, even a
BaseException such as SystemExit, KeyboardInterrupt aside; a value of the
wrong type, a path that does not exist) is a skipped plugin with the reason,
never an import failure of torchferry. Code that runs here runs inside
`import torchferry`, before plugins are loaded: it may import torchferry's
modules, and a query such as torchferry.plugins.loaded() raises saying that
torchferry is still loading its plugins.
"""

import importlib.util
import os

GROUP = "torchferry.plugins"


def _text(value):
    """`value` as str that the loader can hold: undecodable bytes escaped,
    NUL shown as \\x00 (a C string would end there)."""
    text = value if isinstance(value, str) else repr(value)
    return text.encode("utf-8", "backslashreplace").decode("utf-8").replace("\0", "\\x00")


def _message(error):
    """str(error), or a stand-in when the vendor's exception cannot say."""
    try:
        return str(error)
    except BaseException:  # noqa: B036  (its __str__ is the vendor's code too)
        return "(its message could not be read)"


def _group():
    from importlib import metadata

    found = metadata.entry_points()
    if hasattr(found, "select"):  # Python >= 3.10
        return list(found.select(group=GROUP))
    return list(found.get(GROUP, ()))  # Python 3.9: a dict of groups


def _distribution(entry):
    dist = getattr(entry, "dist", None)  # Python >= 3.10
    if dist is None:
        return "an installed distribution"
    try:
        return f"{dist.metadata['Name']} {dist.version}"
    except Exception:  # a distribution with broken metadata still names itself
        return "an installed distribution"


def _package_folder(module):
    """The folder of package `module`, found without executing it (a dotted
    name imports its parents, as any import would)."""
    spec = importlib.util.find_spec(module)
    if spec is None:
        raise LookupError(f"no module named '{module}' is installed")
    if not spec.submodule_search_locations:
        raise TypeError(
            f"'{module}' is a module, not a package; expected a package (its folder holds the "
            "plugin) or 'module:attr' naming the plugin's path"
        )
    return list(spec.submodule_search_locations)[0]


def _path_of(entry):
    """The plugin path `entry` names; raises with why it names none."""
    if entry.attr is None:
        value = _package_folder(entry.module)
    else:
        value = entry.load()
        if callable(value) and not isinstance(value, (str, os.PathLike)):
            value = value()
    if not isinstance(value, (str, os.PathLike)):
        raise TypeError(
            f"expected a str or os.PathLike naming a plugin folder or file "
            f"(or a callable returning one), got {type(value).__name__}"
        )
    path = os.fspath(value)
    if not isinstance(path, str):
        raise TypeError(f"expected a str path, got {type(path).__name__}")
    if "\0" in path:
        raise ValueError(f"the path {_text(path)!r} holds a NUL character")
    if not os.path.isabs(path):
        raise ValueError(
            f"expected an absolute path, got {path!r} (it would depend on the current folder)"
        )
    if not os.path.exists(path):
        raise FileNotFoundError(f"it names {_text(path)}, which does not exist")
    return path


def resolve():
    """(resolved, unresolved): [(label, path)] for the loader's search path,
    and [(where, name, reason)] for its skipped list, and the same as dicts
    for torchferry.plugins.entry_points()."""
    resolved, unresolved, records = [], [], []
    try:
        entries = _group()
    except Exception as e:  # a broken metadata file must not break the import
        reason = f"could not read the '{GROUP}' entry points: {type(e).__name__}: {e}"
        unresolved.append((f"entry points ({GROUP})", "", _text(reason)))
        records.append({"name": "", "value": "", "distribution": "", "path": None, "error": _text(reason)})
        return resolved, unresolved, records
    for entry in entries:
        dist = _distribution(entry)
        label = _text(f"{entry.name} = {entry.value} ({dist})")
        record = {"name": _text(entry.name), "value": _text(entry.value), "distribution": _text(dist)}
        try:
            path = _path_of(entry)
        except KeyboardInterrupt:
            raise  # the user's, not the vendor's
        except BaseException as e:  # a vendor's import may even call sys.exit
            reason = _text(
                f"entry point {entry.name} = {entry.value} of {dist} in group '{GROUP}' names no "
                f"usable plugin: {type(e).__name__}: {_message(e)}"
            )
            unresolved.append((_text(f"entry point {entry.name} = {entry.value}"), "", reason))
            records.append({**record, "path": None, "error": reason})
            continue
        resolved.append((label, path))
        records.append({**record, "path": path, "error": None})
    return resolved, unresolved, records
