"""Fills an empty venv with torch and what torch requires, as hard links of
the files another venv's pip installed.

    SOURCE_VENV/bin/python tools/clone_torch_venv.py TARGET_VENV

Run by the source venv's Python (its distributions are the ones read). The
wheel stage tests the wheel in a venv that holds torch and nothing else; the
main stage's venv of the same torch already holds those files, unpacked from
the same wheels, so linking them costs seconds where pip's install of torch's
3-5 GB costs a core-minute or more. What is linked is what torch's metadata
requires (markers evaluated for this interpreter), each distribution whole as
its RECORD lists it, .dist-info included, so that pip and importlib.metadata
in the target see the same installs. Files outside site-packages (console
scripts, whose first line names the source venv's interpreter) are left out:
the wheel stage runs none of them. Python rewrites the file names compiled
into the linked .pyc files when it loads them, and replaces a .pyc by rename,
never in place, so the source venv's files are never changed.
"""

import importlib.metadata as md
import os
import shutil
import subprocess
import sys
import sysconfig

from pip._vendor.packaging.requirements import Requirement
from pip._vendor.packaging.utils import canonicalize_name


def closure(root):
    """The distributions `root` needs, itself included, by canonical name:
    what their metadata requires for this interpreter, with the extras each
    requirement names (torch 2.14's `cuda-toolkit[cufile, ...]` is where its
    CUDA libraries come from)."""
    seen, extras_done, todo = {}, {}, [(root, frozenset())]
    while todo:
        text_name, extras = todo.pop()
        name = canonicalize_name(text_name)
        done = extras_done.setdefault(name, set())
        if name in seen and extras <= done:
            continue
        dist = seen.get(name) or md.distribution(name)
        seen[name] = dist
        done |= extras
        wanted = {""} | {canonicalize_name(e) for e in done}
        for text in dist.requires or []:
            req = Requirement(text)
            if req.marker is None or any(req.marker.evaluate({"extra": e}) for e in wanted):
                todo.append((req.name, frozenset(req.extras)))
    return seen


def remove_older(dists, target):
    """Uninstalls what the new venv came with that torch needs too (the
    setuptools of ensurepip, say), as pip's install of torch would, so that
    no two versions of one distribution mix their files."""
    code = "import importlib.metadata as m; print('\\n'.join(d.metadata['Name'] for d in m.distributions()))"
    found = subprocess.run([os.path.join(target, "bin", "python"), "-c", code],
                           check=True, capture_output=True, text=True).stdout.split()
    older = [name for name in found if canonicalize_name(name) in dists]
    if older:
        subprocess.run([os.path.join(target, "bin", "python"), "-m", "pip", "uninstall",
                        "-q", "-y", *older], check=True)


def link_tree(dists, site, target_site):
    files = 0
    for dist in dists.values():
        if dist.files is None:
            sys.exit(f"{dist.metadata['Name']} has no RECORD: cannot clone it")
        for rel in dist.files:
            src = os.path.normpath(os.path.join(site, rel))
            if not src.startswith(site + os.sep) or not os.path.isfile(src):
                continue
            dst = os.path.join(target_site, os.path.relpath(src, site))
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            if os.path.lexists(dst):
                os.unlink(dst)
            try:
                os.link(src, dst)
            except OSError:  # another file system
                shutil.copy2(src, dst)
            files += 1
    return files


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    target = os.path.abspath(sys.argv[1])
    site = os.path.realpath(sysconfig.get_paths()["purelib"])
    rel_site = os.path.relpath(site, os.path.realpath(sys.prefix))
    target_site = os.path.join(target, rel_site)
    if not os.path.isdir(target_site):
        sys.exit(f"{target} is not a venv of this Python (no {target_site})")
    dists = closure("torch")
    remove_older(dists, target)
    files = link_tree(dists, site, target_site)
    names = ", ".join(sorted(f"{d.metadata['Name']} {d.version}" for d in dists.values()))
    print(f"linked {files} files of {len(dists)} distributions into {target_site}: {names}")


if __name__ == "__main__":
    main()
