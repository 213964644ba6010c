"""The tuning results as a Markdown table and PNG plots, from schedules/tuned/<family>.jsonl
(tune/tune.py's records), measured truth only: per kernel, CPU model and ISA level the latest
summary made for the kernel's current schedule version (a tuning run's best, re-measured beside the
defaults, or tune.py --remeasure's: the params, the defaults and the autoschedulers in one run,
alternated call by call); the summaries of other versions, which builds no longer take, are listed
under the table, not shown as results.

    .venv/bin/python tune/report.py            # prints the table, writes tune/plots/*.png

- tuned_vs_baselines.png: each kernel's build (tuned, or the defaults) and each autoscheduler, as
  speed-ups over the default schedule of the same run;
- best_vs_trials.png: where current summaries come from tuning runs, the best so far against the
  trials tried (each trial measured beside the defaults), per kernel.
"""
import argparse
import json
import pathlib

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from spaces import ROOT, version_of  # noqa: E402

SCHEDULERS = ("Adams2019", "Mullapudi2016", "Li2018")
APPLIED_BELOW = 0.97  # a record is built only if it beat the defaults by more than 3% (cmake/tuned_records.cmake)


def model(record):
    """The CPU model of a record's machine, which the build matches (cmake/tuned_records.cmake)."""
    return record["machine"].split(",")[0]


def level(record):
    """A record's x86 ISA level, as the build groups records (cmake/tuned_records.cmake)."""
    return next((name for name in ("avx512", "avx2", "sse41") if name in record["target"]), record["target"])


def applied(summaries):
    """Of one kernel's summaries on one CPU model (in the order recorded), the one
    cmake/tuned_records.cmake builds it with: the latest, where its time ratio to the defaults is
    below APPLIED_BELOW; None otherwise (a later run supersedes an earlier one)."""
    latest = summaries[-1]
    return latest if latest["ratio_to_default"] < APPLIED_BELOW else None


def summaries(path):
    """Per (kernel, machine model, ISA level): the latest summary of the kernel's current schedule
    version in the records file `path` (a build uses its own CPU model's, applied()); and the latest
    summaries of other versions where no current one exists (builds do not take them)."""
    current, stale = {}, {}
    for line in path.read_text().splitlines():
        record = json.loads(line)
        if record.get("best"):
            key = (record["kernel"], model(record), level(record))
            (current if record.get("schedule_version") == version_of(record) else stale)[key] = record
    return current, {key: r for key, r in stale.items() if key not in current}


def baseline_text(b):
    """An autoscheduler's time; its call's time where that alone was timed (over tune.py's
    --baseline-call-limit); 'failed' (it did not compile, or was wrong), or 'not run' (--no-baselines)."""
    if b is None:
        return "not run"
    if "ms" in b:
        return f"{b['ms']:.2f}"
    return b["error"] if b["error"].startswith("over ") else "failed"  # ("over 10 s a call (79 s)")


def speedups(r):
    """Over the defaults of the record's own run: the build's (the defaults where it takes no
    record) and each autoscheduler's that ran."""
    baselines = r["baselines"]
    found = {"build": 1 / r["ratio_to_default"] if applied([r]) else 1.0}
    found.update({s: baselines["default"]["ms"] / baselines[s]["ms"] for s in SCHEDULERS if "ms" in baselines.get(s, {})})
    return found


def table(rows):
    lines = ["| kernel (shape class) | machine | ISA level | measured | trials | default ms | tuned ms | tuned vs default | "
             "in builds for its model | " + " | ".join(f"{s} ms" for s in SCHEDULERS) + " | build vs best autoscheduler | params |",
             "|" + "---|" * (11 + len(SCHEDULERS))]
    for (kernel, machine, isa), r in sorted(rows.items()):
        default = r["baselines"]["default"]["ms"]
        found = speedups(r)
        autos = [found[s] for s in SCHEDULERS if s in found]
        versus = f"{found['build'] / max(autos):.2f}x" if autos else "-"
        how = f"{r['date']} (re-measured; tuned {r['remeasured']})" if r.get("remeasured") else r["date"]
        params = ", ".join(f"{k}={v}" for k, v in r["params"].items())
        lines.append(f"| {kernel} ({r['shape_class']}) | {machine} | {isa} | {how} | {r['trials']} | {default:.2f} | "
                     f"{r['ms']:.2f} | {default / r['ms']:.2f}x | {'tuned' if applied([r]) else 'defaults'} | "
                     + " | ".join(baseline_text(r["baselines"].get(s)) for s in SCHEDULERS) + f" | {versus} | {params} |")
    return lines


def plot_speedups(rows, path):
    names = sorted(rows)
    fig, ax = plt.subplots(figsize=(10, 0.5 + 0.45 * len(names)))
    series = ["build", *SCHEDULERS]
    height = 0.8 / len(series)
    for k, label in enumerate(series):
        values = [(i, speedups(rows[n]).get(label)) for i, n in enumerate(names)]
        values = [(i, v) for i, v in values if v]
        ax.barh([i + k * height for i, _ in values], [v for _, v in values], height, label=label)
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.set_yticks([i + 0.4 - height / 2 for i in range(len(names))], [" ".join(n) for n in names])
    ax.set_xscale("log")
    ax.set_xlabel("speed-up over the default schedule, same run (log)")
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def plot_histories(rows, path):
    """One panel per CPU model, its legend beside it; only tuning runs have a history."""
    runs = {n: r for n, r in rows.items() if r.get("history")}
    path.unlink(missing_ok=True)
    if not runs:
        return
    models = sorted({m for _, m, _ in runs})
    fig, axes = plt.subplots(len(models), 1, figsize=(11, 0.5 + 4.5 * len(models)), squeeze=False)
    for ax, m in zip(axes[:, 0], models):
        for n, r in sorted(runs.items()):
            if n[1] == m:
                default = r["baselines"]["default"]["ms"]
                ax.step([h["trial"] for h in r["history"]], [default / h["best_ms"] for h in r["history"]],
                        where="post", label=f"{n[0]} ({n[2]})")
        ax.set_title(m)
        ax.set_xlabel("trials")
        ax.set_ylabel("best so far: speed-up over the defaults")
        ax.legend(fontsize=6, loc="center left", bbox_to_anchor=(1.01, 0.5))
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--family", default="x86")
    parser.add_argument("--plots", type=pathlib.Path, default=ROOT / "tune" / "plots")
    args = parser.parse_args()
    rows, stale = summaries(ROOT / "schedules" / "tuned" / f"{args.family}.jsonl")
    print("\n".join(table(rows)))
    if stale:
        print("\nNot shown: summaries made for another schedule version (or before records had one), which builds "
              "no longer take until re-measured: "
              + "; ".join(f"{k} ({m}, {isa}, {r['date']})" for (k, m, isa), r in sorted(stale.items())) + ".")
    args.plots.mkdir(parents=True, exist_ok=True)
    plot_speedups(rows, args.plots / "tuned_vs_baselines.png")
    plot_histories(rows, args.plots / "best_vs_trials.png")


if __name__ == "__main__":
    main()
