"""Prints "RUN FAILED" summed over pytest's JUnit XML files: tests that ran
(skipped ones left out) and those that failed or errored. A file that is
missing or cut short (its pytest died) counts nothing."""

import sys
import xml.etree.ElementTree as ET

ran = bad = 0
for path in sys.argv[1:]:
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        continue
    for suite in [root] if root.tag == "testsuite" else root.findall("testsuite"):
        ran += int(suite.get("tests", 0)) - int(suite.get("skipped", 0))
        bad += int(suite.get("failures", 0)) + int(suite.get("errors", 0))
print(ran, bad)
