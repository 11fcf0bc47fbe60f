"""The benchmark's thread columns and its thread sweep (section 8): which
counts are swept, that a run at several threads times the 1-thread pair
beside its own with each ratio over its own torch column, and that the
sweep times every workload at every count."""

import json

import pytest

from conftest import HERE, clean_env, run_child
from torchferry.bench import report, section_threads
from torchferry.bench.results import Case, Section, Target
from torchferry.bench.timing import Result

pytestmark = pytest.mark.subprocess


@pytest.mark.parametrize(
    "most, quick, want",
    [
        (1, False, [1]),
        (2, False, [1, 2]),
        (9, False, [1, 2, 3, 4, 5, 6, 7, 8, 9]),
        (16, False, [1, 2, 3, 4, 5, 6, 7, 8, 12, 16]),
        (100, False, [1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 24, 32, 48, 64, 96, 100]),
        (2, True, [1, 2]),
        (12, True, [1, 2, 4, 8, 12]),
    ],
)
def test_thread_counts_start_at_one_and_end_at_the_most(most, quick, want):
    assert section_threads.thread_counts(most, quick) == want


def _result(name, ns):
    return Result.from_samples(name, [ns])


def test_a_second_pair_takes_its_ratio_over_its_own_reference():
    case = Case(
        {"op": "add"},
        {n: _result(n, ns) for n, ns in [("tf", 50), ("torch", 100), ("tf 1", 90), ("torch 1", 60)]},
        reference="torch",
        targets=[Target("tf", "max_ratio", 0.5, "goal"), Target("tf 1", "max_ratio", 0.5, "goal at 1 thread")],
        ratio_over={"tf 1": "torch 1"},
    )
    assert case.ratio("tf") == 0.5
    assert case.ratio("tf 1") == 1.5
    assert [t.met(case) for t in case.targets] == [True, False]
    section = Section(4, "ops", "t", "m", layout="wide", cases=[case], headers={"tf": "tf, 2 threads"})
    text = "\n".join(report.section_lines(section))
    assert "tf, 2 threads (ns)" in text
    assert "60.0 ±0.0 (ref)" in text  # the second pair's reference is marked as one


def test_a_goal_over_a_group_says_whether_enough_met_it():
    cases = [
        Case({"op": f"op{i}"}, {"tf": _result("tf", ns), "torch": _result("torch", 100)}, "torch",
             [Target("tf", "max_ratio", 0.5, "≤ 0.5×", need=2)])
        for i, ns in enumerate((40, 45, 70))
    ]
    lines = report.targets_summary([Section(4, "ops", "t", "m", cases=cases)])
    assert any("met in 2 of 3 (goal: ≥ 2 of 3 ✓)" in line for line in lines), lines


def _bench(*args, threads="2", timeout=900):
    env = clean_env(PYTHONPATH=HERE, TORCHFERRY_BENCH_THREADS=threads)
    return run_child(["-m", "torchferry", "bench", "--quick", *args], env, timeout=timeout, text=True)


def test_a_quick_run_at_two_threads_times_both_pairs_and_sweeps(tmp_path):
    path = tmp_path / "bench.json"
    r = _bench("--sections", "call,ops,threads", "--max-threads", "2", "--json", str(path),
               "--out-dir", str(tmp_path))
    assert r.returncode == 0, r.stderr[-3000:]
    results = json.loads(path.read_text())
    assert results["meta"]["torch_threads"] == 2
    assert results["meta"]["torch_threads_source"] == "TORCHFERRY_BENCH_THREADS"
    assert "(2 threads, TORCHFERRY_BENCH_THREADS)" in r.stdout
    sections = {s["key"]: s for s in results["sections"]}

    ops = sections["ops"]
    assert not ops["skipped"], ops["skipped"]
    assert ops["headers"]["torchferry"] == "torchferry, 2 threads"
    paired = 0
    for case in ops["cases"]:
        res = case["results"]
        # Rows too small for torch to thread have no second pair.
        if "torch eager, 1 thread" not in res:
            assert case["extra"]["tensor_elements"] < 32768 and not case["ratio_over"], case["label"]
            continue
        paired += 1
        assert res["torch eager, 1 thread"]["status"] == "ok", case["label"]
        assert case["ratio_over"] == {"torchferry, 1 thread": "torch eager, 1 thread"}
        one = res["torchferry, 1 thread"]
        if one["status"] == "ok":
            assert one["ratio_to_reference"] == pytest.approx(
                one["median_ns"] / res["torch eager, 1 thread"]["median_ns"])
    assert paired >= 16, paired  # every op at [8, 4096], the GEMM and the linear rows
    (linear,) = [c for c in ops["cases"] if c["label"]["op"] == "linear"]
    assert linear["label"]["shape"] == "[64, 4096, 4096]" and linear["ratio_over"]
    texts = {t["text"] for c in ops["cases"] for t in c["targets"]}
    assert "within 10% of torch eager at 2 threads" in texts
    assert "within 10% of torch eager at 1 thread" in texts

    call = sections["call"]
    assert all(c["results"]["torchferry noop, 1 thread"]["status"] == "ok" for c in call["cases"])

    threads = sections["threads"]
    assert not threads["skipped"], threads["skipped"]
    seen = {}
    for case in threads["cases"]:
        # torchferry's decoders are timed only after their logits check out.
        assert case["results"]["torch"]["status"] == "ok", case
        assert case["results"]["torchferry"]["status"] == "ok", case["results"]["torchferry"]["reason"]
        seen.setdefault(case["label"]["workload"], []).append(case["label"]["threads"])
    assert len(seen) == 4 and all(counts == [1, 2] for counts in seen.values()), seen
    assert (tmp_path / "bench.png").stat().st_size > 0


def test_one_thread_runs_no_second_pair(tmp_path):
    path = tmp_path / "bench.json"
    r = _bench("--sections", "call", "--json", str(path), "--out-dir", str(tmp_path), threads="1")
    assert r.returncode == 0, r.stderr[-3000:]
    (call,) = json.loads(path.read_text())["sections"]
    assert all("torchferry noop, 1 thread" not in c["results"] for c in call["cases"])


def test_max_threads_below_one_is_refused():
    r = _bench("--sections", "threads", "--max-threads", "0", timeout=120)
    assert r.returncode == 2
    assert "--max-threads" in r.stderr and "Traceback" not in r.stderr
