"""bench/issues_grouping.py's targets that need no timing: τ-bench airline's 73 failed tool
results group as a person would (purity >= 0.9, no issue mixing two tools), and the
seeded synthetic shapes are found one template each."""

from __future__ import annotations

from bench.issues_grouping import bench_grouping, bench_tau


def test_tau_bench_failures_group_as_a_person_would() -> None:
    got = bench_tau()
    assert got["failed_tool_results"] == 73
    assert got["purity"] >= 0.9 and got["issues_mixing_tools"] == 0
    titles = {(i["tool"], i["template"]) for i in got["issues"]}
    assert (
        "update_reservation_flights",
        "Error: flight <ID> not available on date <TIME>",
    ) in titles
    assert len(got["issues"]) <= 12  # 10 groups by hand (tool, cause): not one per message


def test_the_synthetic_shapes_are_one_template_each() -> None:
    got = bench_grouping(4000, runs=1)
    assert got["templates_found"] == got["shapes"] == 40
    assert got["purity"] == 1.0 and got["shapes_split"] == 0
