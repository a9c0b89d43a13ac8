#!/usr/bin/env python3
"""Benchmark: size of roofline.html and time until it is interactive in headless Chromium, for
synthetic inputs of growing launch counts, against a baseline measured in the same run: a bare
plotly page (plotly.js embedded, one trace) holding as many dots as the page's per-launch view.

Targets (issue 4): a 10,000-launch input gives a page under 20 MB that is interactive within 3 s.

    .venv/bin/python scripts/bench_page.py [--launches 100,1000,10000] [--kernels 300]

Needs playwright and Chromium (Debian's ``chromium``; or set NCUROOF_CHROMIUM).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "helpers"))

ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--enable-unsafe-swiftshader",
]
READY = (
    "() => { const gd = document.getElementById('roofline'); return !!(gd && gd._fullLayout &&"
    " gd._fullData && (!document.getElementById('controls') || document.querySelector('#controls"
    " input'))); }"
)
SWITCH = """async () => { const gd = document.getElementById('roofline');
  const done = new Promise(r => gd.once('plotly_afterplot', r)); const t0 = performance.now();
  document.querySelector('input[name="ctl-mode"][value="launch"]').click(); await done; return performance.now() - t0; }"""  # noqa: E501


def interactive_s(browser, path: Path, switch: bool) -> tuple[float, float]:
    """Seconds from navigation start until the plot is drawn (and the per-launch switch takes)."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(path.as_uri(), wait_until="commit")
    page.wait_for_function(READY, polling=10, timeout=60_000)
    ready = page.evaluate("() => performance.now()") / 1e3
    took = page.evaluate(SWITCH) / 1e3 if switch else float("nan")
    page.close()
    return ready, took


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--launches", default="100,1000,10000")
    ap.add_argument("--kernels", type=int, default=300)
    ap.add_argument("--repeat", type=int, default=3, help="page loads per measurement (best kept)")
    args = ap.parse_args()

    from playwright.sync_api import sync_playwright

    chromium = os.environ.get("NCUROOF_CHROMIUM") or shutil.which("chromium")
    if chromium is None:
        sys.exit("bench_page: Chromium not found (apt install chromium, or set NCUROOF_CHROMIUM)")
    tmp = Path(tempfile.mkdtemp(prefix="ncuroof-bench-page."))
    rows = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=ARGS)
        for n in (int(x) for x in args.kernels.split(",")):
            rows.append(measure(browser, tmp, n, args.kernels, args.repeat))
        browser.close()
    shutil.rmtree(tmp, ignore_errors=True)
    print_table(rows)


def measure(browser, tmp: Path, n: int, kernels: int, repeat: int) -> tuple:
    """One row of the table: our page and the bare plotly page of ``n`` launches, written to
    ``tmp`` and each loaded ``repeat`` times (the best kept)."""
    import plotly.graph_objects as go
    import synthetic

    import ncuroof
    from ncuroof.model import summary
    from ncuroof.render import figure as plot
    from ncuroof.render import page as report

    k = synthetic.kernels_table(n, min(kernels, n))
    pts = ncuroof.points(k)
    t0 = time.perf_counter()
    summ = summary.kernel_summary(k, pts)
    fig = plot.plot_roofline(pts, k, title=f"{n} launches", summary=summ)
    html = report.render_html(fig, k, {"inputs": "synthetic"}, summary=summ)
    build = time.perf_counter() - t0
    page = tmp / f"page-{n}.html"
    page.write_text(html, encoding="utf-8")
    dots = fig.layout.meta["view"]["counts"]["launch/main/focus"]
    base = go.Figure(
        go.Scattergl(
            x=pts["ai_flop_per_byte"].head(dots),
            y=pts["flop_per_s"].head(dots),
            mode="markers",
        )
    )
    base_path = tmp / f"base-{n}.html"
    base_path.write_text(base.to_html(include_plotlyjs=True, div_id="roofline"), encoding="utf-8")
    ours = min((interactive_s(browser, page, True) for _ in range(repeat)), key=lambda x: x[0])
    theirs = min(interactive_s(browser, base_path, False)[0] for _ in range(repeat))
    page_mb, base_mb = len(html.encode()) / 1e6, base_path.stat().st_size / 1e6
    return (n, page_mb, base_mb, build, ours[0], theirs, ours[1])


def print_table(rows: list[tuple]) -> None:
    """The measurements as a Markdown table, with the ratio to the bare plotly page."""
    head = (
        "launches",
        "page MB",
        "bare MB",
        "build s",
        "interactive s",
        "bare plotly s",
        "ratio",
        "per-launch switch s",
    )
    print(" | ".join(head))
    print(" | ".join("---" for _ in head))
    for n, mb, bmb, build, ready, base, switch in rows:
        print(
            f"{n} | {mb:.1f} | {bmb:.1f} | {build:.2f} | {ready:.2f} | {base:.2f} |"
            f" {ready / base:.2f}x | {switch:.2f}"
        )


if __name__ == "__main__":
    main()
