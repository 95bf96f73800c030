"""benchmarks/report.py: every renderer on its committed result files, the page, ``--check``.

Expected numbers are computed here from the JSON files themselves (not copied
from the page), so a new result file replacing an old one keeps these tests
meaningful. Benchmarks without a committed result (GPU, decode-only, dynamic
mode) are rendered from small records in the shape their scripts write.
Only the standard library runs: well under a second.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import re
import shutil
import statistics
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "benchmarks"
RESULTS = BENCH / "results"

_spec = importlib.util.spec_from_file_location("streamflow_bench_report", BENCH / "report.py")
assert _spec and _spec.loader
report = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = report  # dataclasses look their module up there
_spec.loader.exec_module(report)

HEADLINE, COMPARISONS = report.load_results(RESULTS)
BY_KEY = {b.key: b for b in report.BENCHMARKS}


def committed(key: str) -> list[tuple[Path, dict[str, Any]]]:
    files = HEADLINE.get(key, [])
    if not files:
        pytest.skip(f"no committed benchmarks/results/{key}-*.json")
    return files


def render(key: str, data: dict[str, Any], stem: str = "x") -> Any:
    return BY_KEY[key].render(data, stem)


def table_rows(text: str) -> list[list[str]]:
    """The body rows of every markdown table in ``text``."""
    rows = []
    for line in text.splitlines():
        if line.startswith("| ") and not line.startswith("|---"):
            rows.append([c.strip() for c in line.strip("|").split(" | ")])
    return rows


# --------------------------------------------------------------------------- the results folder


def test_every_committed_result_file_has_a_renderer() -> None:
    unrendered = {k: [p.name for p, _ in v] for k, v in HEADLINE.items() if k not in report.RENDERED}
    assert not unrendered, f"add a renderer to benchmarks/report.py for {unrendered}"


def test_before_after_files_live_in_comparisons_and_are_not_headlines() -> None:
    for path in RESULTS.glob("*.json"):
        assert not report.is_comparison(json.loads(path.read_text())), f"move {path.name} to results/comparisons/"
    for path, _ in COMPARISONS:
        assert path.parent.name == "comparisons"
    for files in HEADLINE.values():
        assert all(not report.is_comparison(d) for _, d in files)


def test_a_misplaced_comparison_file_does_not_empty_a_headline_table(tmp_path: Path) -> None:
    for name in ("cpu_pipeline-dev-2core.json",):
        shutil.copy(RESULTS / name, tmp_path / name)
    for path, _ in COMPARISONS:
        shutil.copy(path, tmp_path / path.name)  # at the top level, where they used to be
    found, comparisons = report.load_results(tmp_path)
    assert [p.name for p, _ in found["cpu_pipeline"]] == ["cpu_pipeline-dev-2core.json"]
    assert len(comparisons) == len(COMPARISONS)


# --------------------------------------------------------------------------- renderers on committed files


def test_cpu_pipeline() -> None:
    for path, data in committed("cpu_pipeline"):
        part = render("cpu_pipeline", data, path.stem)
        ok = {r["system"]: r["timing"]["rate_median"] for r in data["results"] if r.get("status") == "ok"}
        rows = table_rows(part.text)
        assert len(rows) == 1 + len(data["results"])  # header + one row per system: never an empty table
        if "streamflow" in ok and "dali" in ok:
            x = ok["streamflow"] / ok["dali"]
            assert f"{x:.2f}x" in part.text
            assert any("DALI" in b for b in part.behind) == (x < 1)


def test_python_step() -> None:
    for path, data in committed("python_step"):
        part = render("python_step", data, path.stem)
        x = data["summary"]["with_step_vs_dali"]
        assert f"{x:.2f}x DALI" in part.text
        assert any("Python step" in b for b in part.behind) == (x < 1)


def test_detection_pipeline() -> None:
    for path, data in committed("detection_pipeline"):
        part = render("detection_pipeline", data, path.stem)
        rates = {r["system"]: r["timing"]["rate_median"] for r in data["results"] if "timing" in r}
        x = rates["streamflow"] / rates["dali"]
        assert f"{x:.2f}x" in part.text and part.headline == f"{x:.2f}x DALI (CPU)"
        assert bool(part.behind) == (x < 1)
        if x < 1:
            assert f"{x:.2f}x the throughput of DALI" in part.behind[0]


def _augment_median(records: list[dict[str, Any]], system: str, op: str) -> float | None:
    """The median over rounds of one system's median rate for ``op`` (one round: that round's)."""
    values = [r["ops"][op]["rate_median"] for r in records
              if r.get("system") == system and "rate_median" in (r.get("ops") or {}).get(op, {})]
    return statistics.median(values) if values else None


def test_augment_ops() -> None:
    for path, data in committed("augment_ops"):
        part = render("augment_ops", data, path.stem)
        records = data["results"]
        sf_ops = dict.fromkeys(op for r in records if r.get("system") == "streamflow" for op in r.get("ops", {}))
        rows = {r[0]: r for r in table_rows(part.text)}
        slower = []
        for op in sf_ops:
            assert op in rows
            dali = _augment_median(records, "dali", op)
            if dali is None:
                assert rows[op][3] == "not run"
                continue
            x = _augment_median(records, "streamflow", op) / dali
            assert rows[op][5] == f"{x:.2f}x"
            if x < 1:
                slower.append(f"{op} {x:.2f}x")
        if slower:
            (line,) = part.behind
            assert all(s in line for s in slower) and f"{len(slower)} of" in line
        else:
            assert not part.behind
        assert "numpy separable Gaussian blur" in part.text


def test_augment_ops_rounds_and_reference_checkout() -> None:
    def record(system: str, round_: int, rates: dict[str, float]) -> dict[str, Any]:
        ops = {op: {"rate_median": v, "rate_best": v + 1} for op, v in rates.items()}
        return {"system": system, "round": round_, "ops": ops, **({"ref_root": "/ref"} if "ref" in system else {})}

    data = {"benchmark": "augment_ops", "config": {"rounds": 3}, "results": [
        record("streamflow", 1, {"a": 100, "b": 10}), record("streamflow-ref", 1, {"a": 50, "b": 10}),
        record("dali", 1, {"a": 80, "b": 20}),
        record("dali", 2, {"a": 90, "b": 30}), record("streamflow", 2, {"a": 120, "b": 12}),
        record("streamflow-ref", 2, {"a": 40, "b": 8}),
        record("streamflow-ref", 3, {"a": 60, "b": 9}), record("dali", 3, {"a": 100, "b": 10}),
        record("streamflow", 3, {"a": 80, "b": 14}),
    ]}
    part = render("augment_ops", data)
    rows = {r[0]: r for r in table_rows(part.text)}
    rate = report.rate  # medians of the 3 rounds, bests of all
    assert rows["a"][1:] == [rate(100), rate(121), rate(90), rate(101), "1.11x", rate(50), "2.00x"]
    assert rows["b"][5] == "0.60x" and rows["b"][6:] == [rate(9), "1.33x"]
    assert "3 rounds" in part.text and "`/ref`" in part.text
    (line,) = part.behind
    assert "b 0.60x" in line and "1 of 2" in line


def test_audio_pipeline() -> None:
    for path, data in committed("audio_pipeline"):
        part = render("audio_pipeline", data, path.stem)
        rates = {r["system"]: r["timing"]["rate_median"] for r in data["results"] if r.get("status") == "ok"}
        if "summary" in data:
            rates = {k: v["rate_median"] for k, v in data["summary"]["systems"].items()}
        x = rates["streamflow"] / rates["dali"]
        assert part.headline.startswith(f"{x:.2f}x DALI")
        assert any(f"{x:.2f}x the throughput of DALI" in b for b in part.behind) == (x < 1)
        per_s = rates["streamflow"] * data["audio_seconds"] / data["clips"]
        assert f"{per_s:,.0f}" in part.text


def test_audio_pipeline_with_rounds() -> None:
    """The ``--rounds`` format: one record per system and round, plus the rounds' summary."""
    base = committed("audio_pipeline")[0][1]
    ok = [r for r in base["results"] if r.get("status") == "ok" and r.get("round", 1) == 1]
    results = []
    for k, factor in ((1, 1.0), (2, 0.5), (3, 2.0)):
        for r in ok:
            r = copy.deepcopy(r)
            r["round"] = k
            r["timing"]["rate_median"] *= factor
            results.append(r)
    data = {**base, "results": results, "summary": {
        "systems": {r["system"]: {"rate_median": r["timing"]["rate_median"]} for r in ok},
        "ratios": {"dali": {"per_round": [0.4, 0.5, 0.45], "median": 0.45}}}}
    part = render("audio_pipeline", data)
    assert "3 rounds" in part.text and "0.40, 0.50, 0.45 (median 0.45x)" in part.text
    sf = next(r for r in ok if r["system"] == "streamflow")["timing"]["rate_median"]
    assert report.rate(sf * 0.5) in part.text  # each round's median is listed


def test_video_pipeline() -> None:
    for path, data in committed("video_pipeline"):
        part = render("video_pipeline", data, path.stem)
        expected = []
        groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for r in data["rows"]:
            groups.setdefault((r["codec"], r["order"]), []).append(r)
        for (codec, order), rows in groups.items():
            sf = next(r["rate_median"] for r in rows if r["system"] == "streamflow")
            expected += [f"{codec} {order}: streamflow reaches {sf / r['rate_median']:.2f}x the throughput of "
                         f"{r['system']}" for r in rows if "rate_median" in r and r["rate_median"] > sf]
        assert len(part.behind) == len(expected)
        assert all(e in b for e, b in zip(expected, part.behind, strict=True))
        for r in data["rows"]:
            if "unavailable" in r:
                assert r["unavailable"] in part.text


def test_shard_readers() -> None:
    files = committed("shard_readers")
    for path, data in files:
        part = render("shard_readers", data, path.stem)
        res = data["results"]
        rows = {r[0]: r for r in table_rows(part.text)}
        for name, r in res.items():
            base = report.shard_baseline(name)
            if base and r.get("rate_median") and res.get(base, {}).get("rate_median"):
                x = r["rate_median"] / res[base]["rate_median"]
                assert rows[name][4] == f"{x:.2f}x"
                assert any(f"`{path.stem}` {name}:" in b for b in part.behind) == (x < 1)


def test_numpy_roi() -> None:
    for path, data in committed("numpy_roi"):
        part = render("numpy_roi", data, path.stem)
        cases: dict[tuple[Any, ...], dict[str, float]] = {}
        for r in data["results"]:
            cases.setdefault((r["shape"], r["fraction"], r["cache"]), {})[r["method"]] = r["gbps_median"]
        losing = sum(1 for c in cases.values()
                     if max(v for k, v in c.items() if k.startswith("streamflow")) < c["np.load(mmap)"])
        assert len(part.behind) == losing


def test_serve_bench() -> None:
    for path, data in committed("serve_bench"):
        part = render("serve_bench", data, path.stem)
        speed = data["speedup_vs_baseline"]
        assert len(part.behind) == sum(1 for x in speed.values() if x < 1)
        assert all(f"{c} clients {x:.2f}x" in part.text for c, x in speed.items())


def test_soak() -> None:
    for path, data in committed("soak"):
        part = render("soak", data, path.stem)
        assert f"{data['rss_growth'] * 100:+.2f} %" in part.text
        assert ("| verdict | pass |" in part.text) == bool(data["passed"])
        assert bool(part.behind) == (not data["passed"])


def test_scaling() -> None:
    files = committed("scaling")
    part = report.scaling_section(files, draw=False)
    assert "![scaling_batch_size](img/scaling_batch_size.png)" in part.text
    assert len(table_rows(part.text)) > 1


def test_comparisons() -> None:
    if not COMPARISONS:
        pytest.skip("no before/after files")
    for path, data in COMPARISONS:
        text = report.comparison_table(path, data)
        rows = table_rows(text)
        assert rows[-1][0] == "median" and len(rows) >= 3
        assert str(path.relative_to(ROOT)) in text
        assert all(c not in ("", "-") for c in rows[-1])  # every version has a number


# --------------------------------------------------------------------------- renderers on scripts' shapes


def timing(rate: float) -> dict[str, Any]:
    return {"seconds": [1.0], "items": [int(rate)], "rates": [rate], "rate_median": rate, "rate_best": rate * 1.1,
            "warmup_seconds": 1.0, "seconds_median": 1.0, "seconds_min": 1.0}


def test_gpu_pipeline_shape() -> None:
    """gpu_pipeline.py writes {system: timing | {"skipped"} | {"error"}} and a ``gpu`` block."""
    data = {"benchmark": "gpu_pipeline", "when": "2026-01-01T00:00:00+00:00", "command": "python gpu_pipeline.py",
            "gpu": {"nvidia_smi": "NVIDIA H100, 570.1, 80 GiB", "cuda_driver": 13000},
            "config": {"images": 2000, "batch": 256}, "results": {
                "streamflow": timing(9000.0), "nvimgcodec-decode": timing(12000.0),
                "torchvision": {"skipped": "No module named 'torchvision'"}, "dali": timing(10000.0)}}
    part = render("gpu_pipeline", data, "gpu_pipeline-h100")
    rows = {r[0]: r for r in table_rows(part.text)}
    assert rows["streamflow"][3] == "0.90x" and rows["streamflow"][5] == "0.75x"
    assert rows["torchvision"][1] == "skipped" and "No module named 'torchvision'" in part.text
    assert part.behind == ["`gpu_pipeline-h100` (GPU): streamflow reaches 0.90x the throughput of DALI (GPU) "
                           "(9,000 vs 10,000 img/s)."]
    assert "NVIDIA H100" in report.provenance(RESULTS / "gpu_pipeline-h100.json", data)


def test_decode_micro_shape() -> None:
    data: dict[str, Any] = {"benchmark": "decode_micro", "date": "2026-01-01", "command": ["decode_micro.py"],
                            "images": 512, "repeats": 5, "results": {
                "streamflow": {"cpu_median": 0.85, "cpu_best": 0.84, "wall_median": 1.7},
                "pillow": {"cpu_median": 1.30, "cpu_best": 1.27, "wall_median": 2.6}}}
    part = render("decode_micro", data)
    assert table_rows(part.text)[1] == ["streamflow", "0.850", "0.840", "1.700", "1.53x"]
    assert not part.behind
    data["results"]["streamflow"]["cpu_median"] = 1.5
    assert "0.87x Pillow's speed" in render("decode_micro", data).behind[0]


def test_dynamic_overhead_shape() -> None:
    """dynamic_overhead.py (branch `dynamic`) writes {system: {median_us, best_us, p10_single_us} | skipped}."""
    def row(p10: float) -> dict[str, Any]:
        return {"seconds_per_call": [1e-5], "p10_single_us": p10, "median_us": p10 * 1.2, "best_us": p10 * 1.1}

    data: dict[str, Any] = {"benchmark": "dynamic_overhead", "config": {"size": 64, "out_size": [32, 32], "batch": 8},
            "results": {"kernel": row(11.6), "dynamic": row(45.2), "aio": row(20.0), "pillow": row(32.9),
                        "pipeline": row(1921.0)}}
    part = render("dynamic_overhead", data, "d")
    rows = {r[0]: r for r in table_rows(part.text)}
    assert rows["dynamic"][4] == "+33.6" and rows["dynamic"][5] == "0.73x"
    assert len(part.behind) == 1 and "`dynamic` call takes 45.2 µs" in part.behind[0]  # not the pipeline row
    data["results"]["pillow"] = {"skipped": "Pillow is not installed"}
    assert not render("dynamic_overhead", data).behind


def test_failed_and_skipped_systems_are_rows_not_crashes() -> None:
    det = {"results": [{"system": "streamflow", "timing": timing(40.0)},
                       {"system": "dali", "skipped": "No module named 'nvidia' (install it)"}]}
    part = render("detection_pipeline", det)
    assert "No module named 'nvidia'" in part.text and not part.behind and part.headline == ""
    shards = {"results": {"sf-wds": {"status": "failed", "error": "OSError: boom"}, "wds-torch": timing(70.0)}}
    part = render("shard_readers", shards)
    assert "OSError: boom" in part.text and table_rows(part.text)[1][2] == "failed"
    audio = {"clips": 10, "audio_seconds": 25.0, "results": [
        {"system": "streamflow", "status": "ok", "timing": timing(50.0), "build_s": 1.0},
        {"system": "dali", "status": "skipped", "reason": "nvidia.dali does not import"}]}
    part = render("audio_pipeline", audio)
    assert "nvidia.dali does not import" in part.text and not part.behind


# --------------------------------------------------------------------------- the page and --check


def test_page_has_every_section_and_every_file() -> None:
    page = report.render(RESULTS, draw=False)
    for bench in report.BENCHMARKS:
        assert f"## {bench.title}\n" in page
        files = HEADLINE.get(bench.key, [])
        for path, _ in files:
            assert f"`{path.relative_to(ROOT)}`" in page
        if not files:
            assert f"no `benchmarks/results/{bench.key}-*.json`. Run `{bench.command}`" in page
    for path, _ in COMPARISONS:
        assert f"`{path.relative_to(ROOT)}`" in page
    before, after = page.split("## Where streamflow is behind", 1)
    assert "## Before/after checks" in before
    # an empty table (header only) is what the before/after files used to make of the CPU section
    assert not re.search(r"\|---[-|]*\|\n\n", page)


def test_unknown_benchmark_is_listed_not_dropped(tmp_path: Path) -> None:
    (tmp_path / "brand_new-vm.json").write_text(json.dumps({"benchmark": "brand_new", "machine": {"tag": "vm"}}))
    page = report.render(tmp_path, draw=False)
    assert "## Result files without a renderer" in page and "brand_new-vm.json" in page
    assert "Not measured yet, so no claim either way" in page


def test_check_fails_on_a_stale_page_and_passes_after_regenerating(tmp_path: Path) -> None:
    results = tmp_path / "results"
    results.mkdir()
    shutil.copy(RESULTS / "cpu_pipeline-dev-2core.json", results)
    out = tmp_path / "performance.md"
    args = ["--results", str(results), "--out", str(out), "--no-plots"]
    assert report.main([*args, "--check"]) == 1  # missing
    assert report.main(args) == 0
    assert report.main([*args, "--check"]) == 0
    shutil.copy(RESULTS / "soak-dev-2core.json", results)  # a new result file: the page is stale
    assert report.main([*args, "--check"]) == 1


def test_committed_page_is_up_to_date() -> None:
    assert report.main(["--check"]) == 0, "run: python benchmarks/report.py"


def test_readme_lists_every_benchmark_with_its_command() -> None:
    readme = (BENCH / "README.md").read_text()
    scripts = [p.name for p in BENCH.glob("*.py") if not p.name.startswith("_")] + ["gpu_verify.sh"]
    assert [s for s in scripts if f"`{s}`" not in readme] == []
    for bench in [*report.BENCHMARKS, report.SCALING]:
        assert bench.command.split(" --")[0] in readme, bench.command
