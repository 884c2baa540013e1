#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Plots latency, bandwidth and (optionally) message rate versus message size from one or more
# JSON files written by `ndksim-perf --out_json`, one line per file, as PNG and/or SVG.
"""Plot ndksim-perf JSON results versus message size."""

import argparse
import json
import math
import os
import sys
import tempfile

try:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure  # noqa: E402  (the backend must be chosen first)
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter  # noqa: E402
except ImportError:  # reported by main() after the arguments, so that --help works without it
    matplotlib = None

FORMATS = ("png", "svg")
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


class PlotError(Exception):
    """A problem with the input or the arguments, reported without a traceback."""


# One chart per phase metric: (chart name, phase key in a result, y value key, y label).
CHARTS = {
    "latency": ("latency", "t_typical_us", "latency, typical (µs)"),
    "bandwidth": ("bandwidth", "bw_avg_gbps", "bandwidth, average (Gb/s)"),
    "rate": ("bandwidth", "msg_rate_mpps", "message rate (Mpps)"),
}


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog=os.path.basename(sys.argv[0]) or "plot.py",
        description="Plot ndksim-perf --out_json results versus message size. Writes "
        "PREFIX-latency and PREFIX-bandwidth (and PREFIX-rate with --rate) in each format.",
    )
    parser.add_argument("files", nargs="*", metavar="FILE.json", help="ndksim-perf JSON output")
    parser.add_argument("--out", default="ndksim-perf", metavar="PREFIX",
                        help="output path prefix (default: %(default)s)")
    parser.add_argument("--title", help="title prefix for every chart")
    parser.add_argument("--label", action="append", default=[], metavar="L",
                        help="legend label, once per file in order (default: from the file's config)")
    parser.add_argument("--format", default="png,svg", help="comma-separated: png, svg (default: %(default)s)")
    parser.add_argument("--rate", action="store_true", help="also plot the message rate")
    parser.add_argument("--self-test", action="store_true", help="plot synthetic data and check the outputs")
    args = parser.parse_args(argv)
    if not args.self_test:
        if not args.files:
            parser.error("at least one FILE.json is required")
        if args.label and len(args.label) != len(args.files):
            parser.error(f"{len(args.label)} --label given for {len(args.files)} files; give one per file")
        args.formats = parse_formats(parser, args.format)
    return args


def parse_formats(parser, text):
    formats = [f.strip().lower() for f in text.split(",") if f.strip()]
    bad = [f for f in formats if f not in FORMATS]
    if not formats or bad:
        parser.error(f"--format must list some of {', '.join(FORMATS)}; got {text!r}")
    return formats


def load(path):
    """Returns the parsed document, with its results sorted by message size."""
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except OSError as e:
        raise PlotError(f"{path}: cannot read: {e.strerror}") from e
    except json.JSONDecodeError as e:
        raise PlotError(f"{path}: not valid JSON: {e}") from e
    # ndksim-perf's own figures are in "ndksim"; the top level is perftest's schema, which holds the
    # last size only. Files of ndksim 0.2 had ndksim's figures at the top level.
    if isinstance(doc, dict) and isinstance(doc.get("ndksim"), dict):
        doc = doc["ndksim"]
    results = doc.get("results") if isinstance(doc, dict) else None
    if not isinstance(results, list) or not results:
        raise PlotError(f"{path}: no results (is it ndksim-perf --out_json output?)")
    if not all(isinstance(r, dict) and isinstance(r.get("bytes"), (int, float)) for r in results):
        raise PlotError(f"{path}: a result has no numeric \"bytes\"")
    doc["results"] = sorted(results, key=lambda r: r["bytes"])
    return doc


def default_label(doc, path):
    config = doc.get("config") or {}
    profile = config.get("profile") or (doc.get("profile") or {}).get("name")
    parts = [p for p in (config.get("op"), profile) if p]
    return ", ".join(parts) if parts else os.path.basename(path)


def make_labels(docs, paths, given):
    if given:
        return list(given)
    labels = [default_label(d, p) for d, p in zip(docs, paths)]
    # Several runs of the same op and profile would share a legend entry; name the file too.
    return [f"{lab} ({os.path.basename(p)})" if labels.count(lab) > 1 else lab
            for lab, p in zip(labels, paths)]


def series(doc, phase, key):
    """Returns (sizes, values, phase dicts) for the results that ran this phase."""
    points = [(r["bytes"], r[phase]) for r in doc["results"] if isinstance(r.get(phase), dict)]
    points = [(b, p) for b, p in points if isinstance(p.get(key), (int, float))]
    return [b for b, _ in points], [p[key] for _, p in points], [p for _, p in points]


def size_label(value, _pos=None):
    for unit, scale in (("M", 1 << 20), ("K", 1 << 10)):
        if value >= scale and value % scale == 0:
            return f"{int(value // scale)}{unit}"
    return f"{value:g}"


def setup_axes(ax, ylabel, title):
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_locator(LogLocator(base=2))
    ax.xaxis.set_major_formatter(FuncFormatter(size_label))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("message size (bytes)")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, which="major", alpha=0.4)


def plot_latency_band(ax, line, sizes, phases):
    """Shades t_min..p99 around the typical latency, where the file reports both."""
    low = [p.get("t_min_us", math.nan) for p in phases]
    high = [p.get("p99_us", math.nan) for p in phases]
    if all(math.isnan(v) for v in low + high):
        return
    ax.fill_between(sizes, low, high, color=line.get_color(), alpha=0.2, linewidth=0)


def draw_chart(chart, docs, labels, title):
    """Returns the figure, or None when no file has data for this chart."""
    phase, key, ylabel = CHARTS[chart]
    fig = Figure(figsize=(8, 5), layout="constrained")
    ax = fig.add_subplot()
    plotted = []
    for doc, label in zip(docs, labels):
        sizes, values, phases = series(doc, phase, key)
        if not sizes:
            continue
        (line,) = ax.plot(sizes, values, marker="o", markersize=4, label=label)
        if chart == "latency":
            plot_latency_band(ax, line, sizes, phases)
        plotted.extend(values)
    if not plotted:
        return None
    # Latency spans decades from small to large messages; a log axis keeps the small ones readable.
    if chart == "latency" and min(plotted) > 0 and max(plotted) / min(plotted) > 50:
        ax.set_yscale("log")
    else:
        ax.set_ylim(bottom=0)
    setup_axes(ax, ylabel, f"{title} — {chart}" if title else f"ndksim-perf {chart}")
    ax.legend(fontsize="small")
    return fig


def save(fig, prefix, chart, formats):
    paths = []
    for fmt in formats:
        path = f"{prefix}-{chart}.{fmt}"
        # No date in the metadata, so that the same input gives the same file.
        metadata = {"Date": None} if fmt == "svg" else {}
        fig.savefig(path, format=fmt, dpi=150, metadata=metadata)
        paths.append(path)
    return paths


def plot(paths, prefix="ndksim-perf", title=None, labels=(), formats=FORMATS, rate=False):
    """Loads the files and writes the charts; returns the written paths."""
    docs = [load(p) for p in paths]
    labels = make_labels(docs, paths, labels)
    directory = os.path.dirname(prefix)
    if directory:
        os.makedirs(directory, exist_ok=True)
    charts = ["latency", "bandwidth"] + (["rate"] if rate else [])
    written = []
    for chart in charts:
        fig = draw_chart(chart, docs, labels, title)
        if fig is None:
            print(f"plot.py: no {chart} results in any file; no {chart} chart", file=sys.stderr)
            continue
        written += save(fig, prefix, chart, formats)
    if not written:
        raise PlotError("no latency or bandwidth results in any file; nothing plotted")
    return written


def synthetic_doc(op, profile, link_gbps, latency=True):
    results = []
    for shift in range(1, 17, 3):
        size = 1 << shift
        wire_us = size * 8 / (link_gbps * 1000)
        result = {"bytes": size, "bandwidth": {
            "iterations": 5000, "bw_avg_gbps": link_gbps * size / (size + 64),
            "bw_peak_gbps": link_gbps, "msg_rate_mpps": link_gbps * 1000 / 8 / (size + 64)}}
        if latency:
            typical = 0.8 + wire_us
            result["latency"] = {"iterations": 1000, "t_min_us": typical * 0.98, "t_typical_us": typical,
                                 "p99_us": typical * 1.1}
        results.append(result)
    return {"tool": "ndksim-perf", "config": {"op": op, "profile": profile},
            "profile": {"name": profile, "link_gbps": link_gbps}, "results": results}


def check_output(path):
    with open(path, "rb") as f:
        data = f.read()
    if path.endswith(".png") and not data.startswith(PNG_MAGIC):
        raise PlotError(f"self-test: {path} is not a PNG")
    if path.endswith(".svg") and b"<svg" not in data:
        raise PlotError(f"self-test: {path} is not an SVG")


def self_test():
    with tempfile.TemporaryDirectory(prefix="ndksim-plot-") as tmp:
        inputs = []
        # The second file has no latency phase: it must still appear on the bandwidth chart.
        docs = [synthetic_doc("write", "connectx-100g-roce", 100.0),
                synthetic_doc("send", "connectx-25g-roce", 25.0, latency=False)]
        for i, doc in enumerate(docs):
            inputs.append(os.path.join(tmp, f"run{i}.json"))
            with open(inputs[-1], "w", encoding="utf-8") as f:
                json.dump(doc, f)
        prefix = os.path.join(tmp, "out", "self-test")
        written = plot(inputs, prefix, title="self-test")
        expected = [f"{prefix}-{c}.{f}" for c in ("latency", "bandwidth") for f in FORMATS]
        if sorted(written) != sorted(expected):
            raise PlotError(f"self-test: wrote {written}, expected {expected}")
        for path in expected:
            if not os.path.isfile(path) or os.path.getsize(path) == 0:
                raise PlotError(f"self-test: {path} is missing or empty")
            check_output(path)
        check_rejects_empty(tmp)
    print("plot.py: self-test passed")


def check_rejects_empty(tmp):
    empty = os.path.join(tmp, "empty.json")
    with open(empty, "w", encoding="utf-8") as f:
        json.dump({"tool": "ndksim-perf", "results": []}, f)
    try:
        plot([empty], os.path.join(tmp, "empty"))
    except PlotError as e:
        if empty not in str(e):
            raise PlotError(f"self-test: the error does not name the file: {e}") from e
        return
    raise PlotError("self-test: a JSON without results was accepted")


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if matplotlib is None:
        print("ndksim-plot: needs matplotlib (Debian: sudo apt-get install python3-matplotlib)", file=sys.stderr)
        return 2
    try:
        if args.self_test:
            self_test()
            return 0
        for path in plot(args.files, args.out, args.title, args.label, args.formats, args.rate):
            print(path)
    except PlotError as e:
        print(f"{os.path.basename(sys.argv[0]) or 'plot.py'}: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
