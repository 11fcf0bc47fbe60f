"""One progress line on stderr, rewritten in place with a carriage return,
so that stdout carries nothing but the report."""

import sys
import time


class Progress:
    def __init__(self, stream=None):
        self.stream = stream or sys.stderr
        self.start = time.monotonic()
        self.width = 0
        self.section = ""

    def begin(self, section):
        self.section = section
        self.update("starting")

    def update(self, what, done=None, total=None):
        count = f" ({done}/{total})" if total else ""
        line = f"[bench {time.monotonic() - self.start:5.0f}s] {self.section}: {what}{count}"
        line = line[:150]
        pad = max(0, self.width - len(line))
        self.stream.write("\r" + line + " " * pad)
        self.stream.flush()
        self.width = len(line)

    def forget_width(self, width=160):
        """After a child process drew its own line here: clear all of it."""
        self.width = max(self.width, width)

    def done(self):
        self.stream.write("\r" + " " * self.width + "\r")
        self.stream.flush()
        self.width = 0

    def elapsed(self):
        return time.monotonic() - self.start
