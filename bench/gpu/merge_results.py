#!/usr/bin/env python3
"""Folds the steps of bench/gpu_check.sh into one JSON and a summary.

Reads the steps file (one JSON object a line: step, status, rc, seconds,
detail, and the path of the JSON the step wrote, if any), embeds each
step's JSON, writes the result and prints one line per step.

Exit status: 0 when every check that ran passed, 1 when one failed or
timed out, 2 when no check could run at all (no GPU, nothing built).

Usage: merge_results.py STEPS_FILE OUTPUT_JSON
"""

import json
import os
import sys
import time

CHECKS = ("plugin load", "ops (torchferry)", "bridge", "compile (cuda)", "bench")


def main(argv):
    steps_path, out_path = argv[1], argv[2]
    steps = []
    if os.path.exists(steps_path):
        with open(steps_path) as f:
            for line in f:
                line = line.strip()
                if line:
                    steps.append(json.loads(line))
    for step in steps:
        path = step.pop("json", None)
        if path and os.path.exists(path):
            try:
                with open(path) as f:
                    step["results"] = json.load(f)
            except ValueError as e:
                step["results"] = f"unreadable JSON at {path}: {e}"

    ran = [s for s in steps if s["step"] in CHECKS and s["status"] != "skipped"]
    bad = [s for s in steps if s["status"] in ("fail", "timeout")]
    if bad:
        overall, code = "fail", 1
    elif not ran:
        overall, code = "nothing ran", 2
    else:
        overall, code = "pass", 0
    report = {
        "overall": overall,
        "finished": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "steps": steps,
    }
    with open(out_path, "w") as f:
        json.dump(report, f, indent=1)

    print("\n==== gpu check summary ====")
    for s in steps:
        counts = ""
        results = s.get("results")
        if isinstance(results, dict) and isinstance(results.get("summary"), dict):
            counts = " " + json.dumps(results["summary"])
        print(f"  {s['step']:<18} {s['status']:<8} {s.get('seconds', 0):>6.1f} s"
              f"{counts}  {s.get('detail', '')}")
    print(f"overall: {overall} (results in {out_path})")
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv))
