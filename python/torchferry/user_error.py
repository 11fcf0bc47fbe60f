"""A user's mistake, as the command line reports it: one line that names what
was given (a variable, a path, an argument) and the fix, and exit status 2.

A fault of torchferry's own is not one: it keeps its traceback."""

import os
import tempfile


class UserError(Exception):
    """What the user gave cannot work; the text names it and the fix."""


def _blocking_file(path):
    """The first part of `path` that exists and is not a folder, or None."""
    probe = os.path.abspath(path)
    while True:
        if os.path.lexists(probe):
            return None if os.path.isdir(probe) else probe
        parent = os.path.dirname(probe)
        if parent == probe:
            return None
        probe = parent


def writable_dir(path, what, fix, create=True):
    """Creates folder `path` where missing and checks that a file can be made
    in it (root passes any mode check, so only a real file says: /proc or a
    read-only mount refuses root too). `what` names where the path came from
    ('--out', 'TORCHFERRY_CACHE'), `fix` says what to do instead."""
    shown = os.fsdecode(path)
    blocker = _blocking_file(path)
    if blocker is not None:
        raise UserError(f"{what} names {shown!r}, but {blocker!r} is a file, not a folder; {fix}")
    if not create and not os.path.isdir(path):
        raise UserError(f"{what} names {shown!r}, which does not exist; {fix}")
    try:
        os.makedirs(path, exist_ok=True)
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError as error:
        raise UserError(
            f"{what} names {shown!r}, a folder that cannot be written "
            f"({error.strerror or error}); {fix}"
        ) from None
    return path


def writable_file(path, what, fix, create=False):
    """Checks, before any work, that file `path` can be written: its folder
    (created where missing, with `create`) takes a file, and the path is no
    folder."""
    shown = os.fsdecode(path)
    if os.path.isdir(path):
        raise UserError(f"{what} names {shown!r}, which is a folder; {fix}")
    if os.path.exists(path):  # a file to replace, or /dev/stdout
        if os.access(path, os.W_OK):
            return path
        raise UserError(f"{what} names {shown!r}, which this user may not write; {fix}")
    writable_dir(os.path.dirname(os.path.abspath(path)), f"{what} {shown!r}: its folder", fix, create)
    return path
