"""Fails when today's abi/torchferry.h changes anything a frozen minor defined.

For each frozen header (tests/abi/v1_N/torchferry.h) and today's, the build
makes a probe library (make_probe.py) with debug info; libabigail's abidw
reads each into its ABI description, which this script compares under the
rules of abi/ABI.md "Versions and growth":

- every struct, union and typedef of the frozen minor is still there, with
  the same members at the same offsets, of the same types (function pointer
  types by their whole signature); the structs that may grow (they start with
  struct_size) may only gain members after their last one;
- every constant keeps its value (from the probes' enums; a string's by its
  text), except
  TF_ABI_VERSION_MINOR and, of the open minor (today's), its own
  TF_*_V1_N_SIZE, which grow as the minor appends;
- what the frozen minor defines is dated 1.N or earlier in today's header,
  and, for a released minor, what today's header dates 1.N is all in its
  frozen copy (nothing was added to it after its release).

On a failure it also prints abidiff's report of the two probes, which names
every change libabigail sees.

Usage: check_frozen.py ABIDW ABIDIFF CURRENT_HEADER CURRENT_PROBE
                       (FROZEN_HEADER FROZEN_PROBE)...
"""
import importlib.util
import pathlib
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

ROOT = pathlib.Path(__file__).resolve().parents[3]
GROWING = {"tf_call", "tf_host_api", "tf_plugin", "tf_kernel", "tf_op_decl"}


def abi_history():
    path = ROOT / "python" / "torchferry" / "abi_history.py"
    spec = importlib.util.spec_from_file_location("abi_history", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Corpus:
    """The types of one probe, as abidw describes them."""

    def __init__(self, abidw, probe):
        xml = subprocess.run([abidw, "--no-corpus-path", str(probe)], check=True, capture_output=True,
                             text=True).stdout
        self.by_id = {}
        self.records = {}  # struct/union name -> element
        self.typedefs = {}  # typedef name -> element
        self.values = {}  # constant name -> its value, from the probe's enums
        for el in ET.fromstring(xml).iter():
            if "id" in el.attrib:
                self.by_id[el.get("id")] = el
            if el.tag in ("class-decl", "union-decl") and el.get("is-anonymous") != "yes" and \
                    el.get("is-declaration-only") != "yes" and el.get("name", "").startswith("tf_"):
                self.records[el.get("name")] = el
            if el.tag == "typedef-decl" and el.get("name", "").startswith("tf_"):
                self.typedefs[el.get("name")] = el
            if el.tag == "enum-decl" and el.get("name", "").startswith("tf_value_"):
                for enumerator in el.iter("enumerator"):
                    self.values[el.get("name")[len("tf_value_"):]] = int(enumerator.get("value"))

    def spell(self, type_id, depth=0):
        """A type as a string that differs when the type's ABI does."""
        el = self.by_id.get(type_id)
        if el is None:
            return f"?{type_id}"
        tag = el.tag
        if tag == "type-decl":
            return f"{el.get('name')}:{el.get('size-in-bits')}"
        if tag == "typedef-decl":
            name = el.get("name")
            # tf_ typedefs are compared on their own; others are spelled out.
            if name.startswith("tf_") and depth > 0:
                return name
            return f"{name}={self.spell(el.get('type-id'), depth + 1)}"
        if tag == "pointer-type-def":
            return self.spell(el.get("type-id"), depth + 1) + "*"
        if tag == "qualified-type-def":
            quals = " ".join(q for q in ("const", "volatile") if el.get(q) == "yes")
            return f"{quals} {self.spell(el.get('type-id'), depth + 1)}"
        if tag == "array-type-def":
            return f"{self.spell(el.get('element-type-id'), depth + 1)}[{el.get('size-in-bits')}]"
        if tag == "function-type":
            params = [self.spell(p.get("type-id"), depth + 1) for p in el if p.tag == "parameter"]
            ret = next((self.spell(r.get("type-id"), depth + 1) for r in el if r.tag == "return"), "void")
            return f"{ret}({', '.join(params)})"
        if tag in ("class-decl", "union-decl"):
            if el.get("is-anonymous") == "yes":
                return f"{tag}{{{'; '.join(self.members(el))}}}"
            return el.get("name")
        return f"{tag}:{el.get('name')}"

    def members(self, record):
        out = []
        for dm in record:
            if dm.tag != "data-member":
                continue
            var = dm.find("var-decl")
            out.append(f"{var.get('name')} at {dm.get('layout-offset-in-bits')}: {self.spell(var.get('type-id'), 1)}")
        return out


def compare_types(old, new, label):
    problems = []
    for name, rec in old.records.items():
        if name not in new.records:
            problems.append(f"{label}: struct {name} is gone")
            continue
        before, after = old.members(rec), new.members(new.records[name])
        old_size, new_size = int(rec.get("size-in-bits")), int(new.records[name].get("size-in-bits"))
        if after[: len(before)] != before:
            for i, member in enumerate(before):
                now = after[i] if i < len(after) else "nothing"
                if now != member:
                    problems.append(f"{label}: {name} member {i} was `{member}`, is `{now}`")
                    break
        elif name not in GROWING and (after != before or new_size != old_size):
            problems.append(f"{label}: {name} is frozen for major 1 but changed from {old_size} bits "
                            f"{before} to {new_size} bits {after}")
        elif new_size < old_size:
            problems.append(f"{label}: {name} shrank from {old_size} to {new_size} bits")
    for name, td in old.typedefs.items():
        if name not in new.typedefs:
            problems.append(f"{label}: typedef {name} is gone")
            continue
        before = old.spell(td.get("id"))
        after = new.spell(new.typedefs[name].get("id"))
        if before != after:
            problems.append(f"{label}: typedef {name} was `{before}`, is `{after}`")
    return problems


def string_constants(text):
    return dict(re.findall(r'^#define (TF_\w+) ("[^"]*")', text, re.M))


def compare_values(old, new, old_text, new_text, old_items, open_minor, frozen_minor, label):
    problems = []
    own_size = re.compile(rf"^TF_\w+_V1_{frozen_minor}_SIZE$")
    old_strings, new_strings = string_constants(old_text), string_constants(new_text)
    for item in old_items:
        if item.kind != "constant" or item.name == "TF_ABI_VERSION_MINOR":
            continue
        if item.name in old_strings:
            before, after = old_strings[item.name], new_strings.get(item.name)
        elif item.name in old.values:
            before, after = old.values[item.name], new.values.get(item.name)
        else:
            problems.append(f"{label}: constant {item.name} has no value in the probe")
            continue
        if after is None:
            problems.append(f"{label}: constant {item.name} is gone")
            continue
        if before == after:
            continue
        if frozen_minor == open_minor and own_size.match(item.name) and after > before:
            continue  # the open minor appends to its own structs
        problems.append(f"{label}: {item.name} was {before!r}, is {after!r}")
    return problems


def compare_dates(old_items, new_items, frozen_minor, open_minor, label):
    problems = []
    dated = {(i.kind, i.name): i.minor for i in new_items}
    frozen = {(i.kind, i.name) for i in old_items}
    for key in sorted(frozen):
        if key not in dated:
            continue  # reported above as gone
        if dated[key] > frozen_minor:
            problems.append(f"{label}: {key[0]} {key[1]} is in ABI 1.{frozen_minor} but today's header dates it "
                            f"since 1.{dated[key]}")
    for key, minor in sorted(dated.items()):
        # Frozen headers older than the dating convention list no dtypes or
        # keys; those dates are checked against loader/dtype_table.h instead.
        if key[0] in ("dtype", "key"):
            continue
        if minor == frozen_minor and key not in frozen and frozen_minor < open_minor:
            problems.append(f"{label}: {key[0]} {key[1]} is dated since 1.{minor}, but ABI 1.{minor} was "
                            f"released without it; date it 1.{open_minor}")
    return problems


def main():
    abidw, abidiff, current_header, current_probe = sys.argv[1:5]
    for tool in (abidw, abidiff):
        if not pathlib.Path(tool).is_file():
            print(f"{tool} not found: install libabigail's abigail-tools (./dev installs it), which this "
                  f"check reads the probes with")
            return 1
    pairs = list(zip(sys.argv[5::2], sys.argv[6::2]))
    history = abi_history()
    current_text = pathlib.Path(current_header).read_text(encoding="utf-8")
    new_items = history.header_items(current_text)
    open_minor = history.header_minor(current_text)
    new = Corpus(abidw, current_probe)
    failed = False
    for header, probe in pairs:
        text = pathlib.Path(header).read_text(encoding="utf-8")
        minor = history.header_minor(text)
        label = f"ABI 1.{minor} ({pathlib.Path(header).name if not pathlib.Path(header).resolve().is_relative_to(ROOT) else pathlib.Path(header).resolve().relative_to(ROOT)})"
        old_items = history.header_items(text)
        old = Corpus(abidw, probe)
        problems = compare_types(old, new, label)
        problems += compare_values(old, new, text, current_text, old_items, open_minor, minor, label)
        problems += compare_dates(old_items, new_items, minor, open_minor, label)
        if minor > open_minor:
            problems.append(f"{label}: frozen, but today's header says 1.{open_minor}")
        status = "FAILED" if problems else "ok"
        print(f"{label}: {status}")
        for p in problems:
            print(f"  {p}")
        if problems:
            failed = True
            report = subprocess.run([abidiff, "--no-added-syms", str(probe), current_probe], capture_output=True,
                                    text=True).stdout
            print("  abidiff's report (appending to a growing struct is allowed, the rest is not):")
            print("\n".join("    " + line for line in report.splitlines()))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
