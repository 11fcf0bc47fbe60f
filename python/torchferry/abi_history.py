"""The minor that brought each thing of the ABI, read from where it is defined:
abi/torchferry.h (constants, types, fields, host services, query keys, with
the header's `since 1.N` marks), loader/op_table.h (ops, through
ops.schemas()) and loader/dtype_table.h (dtypes). `./dev generate` writes
abi/ABI.md's history from it; tests/python/test_abi_history.py and
tests/abi/check_frozen.py fail when the two disagree or a frozen header does.

The header's convention (abi/torchferry.h says it too): what has no date is
1.0; `since 1.N` on a declaration's first line, or at the start of the comment
right above it, dates that declaration and those after it up to the next
blank line; a `--- since 1.N ---` line inside a
struct dates every field after it; comment lines `dtype a, b: since 1.N` and
`key "name": since 1.N` date dtypes and query keys.
"""

import re
from collections import namedtuple

Item = namedtuple("Item", "kind name minor")  # kind: constant type field dtype key

_SINCE = re.compile(r"since 1\.(\d+)")
_LEAD_SINCE = re.compile(r"^\s*/?\*?\s*since 1\.(\d+)")
_GROUP = re.compile(r"---\s*since 1\.(\d+)\s*---")
_DTYPE_LINE = re.compile(r"dtype ([^:]+): since 1\.(\d+)")
_KEY_LINE = re.compile(r'key "([^"]+)": since 1\.(\d+)')
_DEFINE = re.compile(r"^#define (TF_\w+)(?!\()\s*(.*)$")
_STRUCT_OPEN = re.compile(r"^(?:typedef )?(?:struct|union) ?(\w*) *\{")
_TYPEDEF_FN = re.compile(r"^typedef [^(]*\(\*(\w+)\)")
_TYPEDEF = re.compile(r"^typedef [^;{]*\b(\w+);")
_FN_FIELD = re.compile(r"\(\*(\w+)\)")
_FIELD = re.compile(r"(\w+)\s*(?:\[[^\]]*\])?\s*;")

# Macros that are spelling, not values a plugin and a host share.
NOT_VALUES = {"TF_PLUGIN_EXPORT"}


def _strip_comments(line, in_comment):
    """The code of `line` without comments, and whether a comment stays open."""
    code = []
    i = 0
    while i < len(line):
        if in_comment:
            end = line.find("*/", i)
            if end < 0:
                return "".join(code), True
            i, in_comment = end + 2, False
        else:
            start = line.find("/*", i)
            if start < 0:
                code.append(line[i:])
                break
            code.append(line[i:start])
            i, in_comment = start + 2, True
    return "".join(code), in_comment


def header_items(text):
    """Every dated thing `text` (a torchferry.h) defines, in its order."""
    items = []
    lines = text.splitlines()
    in_comment = False
    pending = None  # the minor of a `/* since 1.N ...` comment right above
    struct_stack = []  # [name, group minor]
    paren_depth = 0  # inside a declaration that spans lines
    i = 0
    while i < len(lines):
        line = lines[i]
        # A macro's continuation lines belong to its first.
        while line.endswith("\\") and i + 1 < len(lines):
            i += 1
            line = line[:-1] + " " + lines[i].strip()
        i += 1
        was_comment = in_comment
        code, in_comment = _strip_comments(line, in_comment)
        code = code.strip()
        for m in _DTYPE_LINE.finditer(line):
            for name in m.group(1).split(","):
                name = re.sub(r"\(.*?\)", "", name).strip()
                items.append(Item("dtype", name, int(m.group(2))))
        for m in _KEY_LINE.finditer(line):
            items.append(Item("key", m.group(1), int(m.group(2))))
        group = _GROUP.search(line)
        if group and struct_stack:
            struct_stack[-1][1] = int(group.group(1))
        if not code:
            if not was_comment and line.strip().startswith("/*"):
                lead = _LEAD_SINCE.match(line)
                pending = int(lead.group(1)) if lead else None
            elif not line.strip():
                pending = None
            continue
        own = _SINCE.search(line[len(line) - len(line.lstrip()):])
        if own and "/*" in line and line.index("/*") < own.start():
            minor = int(own.group(1))
        else:
            minor = pending
        if paren_depth > 0:
            paren_depth += code.count("(") - code.count(")")
            continue
        if code.startswith("#"):
            m = _DEFINE.match(code)
            if m and m.group(1) not in NOT_VALUES and m.group(2):
                items.append(Item("constant", m.group(1), minor or 0))
            continue
        opened = _STRUCT_OPEN.match(code)
        if opened:
            if not struct_stack:
                struct_stack.append([opened.group(1), minor or 0])
                if opened.group(1):
                    items.append(Item("type", opened.group(1), minor or 0))
            else:
                struct_stack.append([struct_stack[-1][0], struct_stack[-1][1]])
            continue
        if code.startswith("}"):
            if not struct_stack:
                continue
            owner, group_minor = struct_stack.pop()
            name = code.strip("}; ").strip()
            if struct_stack and name:  # a nested union's member
                items.append(Item("field", f"{owner}.{name}", group_minor))
            continue
        if struct_stack:
            owner, group_minor = struct_stack[-1]
            fn = _FN_FIELD.search(code)
            field = fn or _FIELD.search(code)
            if field and len(struct_stack) == 1:
                items.append(Item("field", f"{owner}.{field.group(1)}", minor or group_minor))
            paren_depth = code.count("(") - code.count(")")
            continue
        fn = _TYPEDEF_FN.match(code)
        if fn:
            items.append(Item("type", fn.group(1), minor or 0))
            paren_depth = code.count("(") - code.count(")")
            continue
        td = _TYPEDEF.match(code)
        if td:
            items.append(Item("type", td.group(1), minor or 0))
    seen = set()
    return [x for x in items if (x.kind, x.name) not in seen and not seen.add((x.kind, x.name))]


_DTYPE_ENTRY = re.compile(r'\{\{TF_DTYPE_\w+, \d+, 1\}, "(\w+)", [^}]*?(?:, (\d+))?\},')


def dtype_table_minors(text):
    """{dtype name: minor} from loader/dtype_table.h's kDtypes entries."""
    return {m.group(1): int(m.group(2) or 0) for m in _DTYPE_ENTRY.finditer(text)}


def header_minor(text):
    return int(re.search(r"#define TF_ABI_VERSION_MINOR (\d+)", text).group(1))


HISTORY_BEGIN = (
    "<!-- history: generated by `./dev generate` from the dates in abi/torchferry.h, loader/op_table.h and "
    "loader/dtype_table.h; do not edit -->"
)
HISTORY_END = "<!-- end of history -->"


def _codes(names):
    return ", ".join(f"`{n}`" for n in names) if names else "none"


def history_table(header_text, dtype_table_text, op_minors):
    """ABI.md's history: per minor, whether it is released and what it
    brought. `op_minors` is [(op name, minor)] in the op table's order."""
    items = header_items(header_text)
    current = header_minor(header_text)
    dtypes = dtype_table_minors(dtype_table_text)
    types = {i.name: i.minor for i in items if i.kind == "type"}
    rows = [
        HISTORY_BEGIN,
        "",
        "| minor | status | frozen copy | what it brought |",
        "|---|---|---|---|",
    ]
    for minor in range(current + 1):
        parts = []
        ops = [name for name, m in op_minors if m == minor]
        parts.append(f"{len(ops)} built-in ops: {_codes(ops)}" if ops else "no built-in ops")
        new_types = [i.name for i in items if i.kind == "type" and i.minor == minor]
        # Fields of a type from an older minor: what was appended to it.
        fields = [i.name for i in items if i.kind == "field" and i.minor == minor
                  and types.get(i.name.split(".")[0], 0) < minor]
        constants = [i.name for i in items if i.kind == "constant" and i.minor == minor]
        keys = [f'"{i.name}"' for i in items if i.kind == "key" and i.minor == minor]
        minor_dtypes = [name for name, m in dtypes.items() if m == minor]
        for label, names in (("types", new_types), ("fields appended", fields), ("constants", constants),
                             ("dtypes", minor_dtypes), ("query keys", keys)):
            if names:
                parts.append(f"{label}: {_codes(names)}")
        status = "released" if minor < current else "open: it may still append, until released"
        rows.append(f"| 1.{minor} | {status} | `tests/abi/v1_{minor}/torchferry.h` | {'; '.join(parts)} |")
    rows += ["", HISTORY_END]
    return "\n".join(rows)


def with_history(text, table):
    """`text` (ABI.md) with the part between the history markers replaced."""
    begin = text.index(HISTORY_BEGIN)
    end = text.index(HISTORY_END) + len(HISTORY_END)
    return text[:begin] + table + text[end:]
