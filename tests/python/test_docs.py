"""Every code block of README.md and docs/ stays true to the code.

A ```python block runs, whole, in a fresh interpreter (with the example
plugin, which the README's example calls). A block of shell commands is
checked line by line: `python -m torchferry ...` must parse with the real
command line (and `info`, `config` and `--help` forms run), `./dev ...`
must name a command and stages that `./dev` has, and a file or folder a
command names in this repository must exist. Commands that install
packages or run the whole test suite are not run here: `./dev test` is
what runs them.
"""

import os
import re
import shlex
import subprocess
import sys

import pytest

from conftest import clean_env
from torchferry import cli

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DOCS = ["README.md"] + sorted(
    os.path.join("docs", f) for f in os.listdir(os.path.join(ROOT, "docs")) if f.endswith(".md")
)
BLOCK = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)


def blocks(kind):
    found = []
    for doc in DOCS:
        with open(os.path.join(ROOT, doc)) as f:
            text = f.read()
        for match in BLOCK.finditer(text):
            lang, body = match.group(1), match.group(2)
            line = text.count("\n", 0, match.start()) + 1
            if (lang == "python") == (kind == "python"):
                found.append(pytest.param(body, id=f"{doc}:{line}"))
    return found


def dev_commands_and_stages():
    with open(os.path.join(ROOT, "dev")) as f:
        text = f.read()
    commands = set(re.findall(r"^  (\w+)\) shift; cmd_\w+", text, re.M))
    stages = set(re.search(r"stages=\(([\w ]+)\)", text).group(1).split())
    return commands, stages


def test_there_are_blocks_to_check():
    assert blocks("python") and blocks("shell")


@pytest.mark.subprocess
@pytest.mark.parametrize("code", blocks("python"))
def test_python_block_runs(code, tmp_path):
    r = subprocess.run(
        [sys.executable, "-c", code],
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert r.returncode == 0, r.stderr[-3000:]


def commands_of(block):
    """The block's command lines, comments and continuations joined."""
    joined = block.replace("\\\n", " ")
    for line in joined.splitlines():
        line = line.split(" #")[0].strip()
        if line and not line.startswith("#"):
            yield line


@pytest.mark.parametrize("block", blocks("shell"))
def test_shell_block_names_what_exists(block):
    commands, stages = dev_commands_and_stages()
    parser = cli.build_parser()
    for line in commands_of(block):
        words = shlex.split(line)
        if words[:3] == ["python", "-m", "torchferry"]:
            try:
                parser.parse_args(words[3:])
            except SystemExit as e:
                assert e.code == 0, f"`{line}` does not parse with torchferry's command line"
            if words[3:4] in (["info"], ["config"]) or "--help" in words:
                r = subprocess.run([sys.executable, *words[1:]], env=clean_env(), capture_output=True,
                                   text=True, timeout=300)
                assert r.returncode == 0, f"`{line}`: {r.stderr[-2000:]}"
        elif words[0] == "./dev":
            assert words[1] in commands, f"`{line}`: ./dev has no command {words[1]} ({sorted(commands)})"
            if words[1] == "test":
                unknown = [w for w in words[2:] if w not in stages]
                assert not unknown, f"`{line}`: ./dev test has no stage {unknown} ({sorted(stages)})"
        for word in words[1:]:
            # A path in this repository that a command names.
            if re.fullmatch(r"(tests|bench|docs|abi|plugins|core|loader|python|examples|templates)/[\w./-]+", word):
                assert os.path.exists(os.path.join(ROOT, word)), f"`{line}` names {word}, which does not exist"
