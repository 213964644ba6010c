"""The tuning results as a Markdown table and two PNG plots, from schedules/tuned/<family>.jsonl
(tune/tune.py's records; per kernel and CPU model the latest summary, which builds take where it
beat the defaults):

    .venv/bin/python tune/report.py            # prints the table, writes tune/plots/*.png

- tuned_vs_baselines.png: each kernel's build (tuned, or the defaults) and each autoscheduler, as
  speed-ups over the default schedule (an autoscheduler's from the latest run that compiled them);
- best_vs_trials.png: the best time so far against the trials tried, per kernel, relative to the
  default schedule.
"""
import argparse
import json
import pathlib

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
SCHEDULERS = ("Adams2019", "Mullapudi2016", "Li2018")
APPLIED_BELOW = 0.97  # a record is built only if it beat the defaults by more than 3% (cmake/tuned_records.cmake)


def model(record):
    """The CPU model of a record's machine, which the build matches (cmake/tuned_records.cmake)."""
    return record["machine"].split(",")[0]


def applied(summaries):
    """Of one kernel's summaries on one CPU model (in the order recorded), the one
    cmake/tuned_records.cmake builds it with: the latest, where its time ratio to the defaults is
    below APPLIED_BELOW; None otherwise (a later run supersedes an earlier one)."""
    latest = summaries[-1]
    return latest if latest["ratio_to_default"] < APPLIED_BELOW else None


def ran_autoschedulers(record):
    return any(s in record["baselines"] for s in SCHEDULERS)


def summaries(family):
    """Per (kernel, machine model): the latest summary (a build uses its own CPU model's records,
    applied()), and the latest summary that ran the autoschedulers (None if none did)."""
    by_model = {}
    for line in (ROOT / "schedules" / "tuned" / f"{family}.jsonl").read_text().splitlines():
        record = json.loads(line)
        if record.get("best"):
            by_model.setdefault((record["kernel"], model(record)), []).append(record)
    return {key: (records[-1], next((r for r in reversed(records) if ran_autoschedulers(r)), None))
            for key, records in by_model.items()}


def baseline_text(b):
    """An autoscheduler's time; 'failed' (it did not compile or was wrong), or 'not run' (--no-baselines)."""
    if b is None:
        return "not run"
    return f"{b['ms']:.2f}" if "ms" in b else "failed"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--family", default="x86")
    parser.add_argument("--plots", type=pathlib.Path, default=ROOT / "tune" / "plots")
    args = parser.parse_args()
    rows = summaries(args.family)

    def speedups(r, b):
        """Over the defaults of each one's own run (a run times everything against them): the
        build's (the defaults where it takes no record) and each autoscheduler's that compiled."""
        baselines = (b or r)["baselines"]
        found = {"build": 1 / r["ratio_to_default"] if applied([r]) else 1.0}
        found.update({s: baselines["default"]["ms"] / baselines[s]["ms"] for s in SCHEDULERS if "ms" in baselines.get(s, {})})
        return found

    print("| kernel (shape class) | machine | trials | default ms | best found ms | best vs default | in builds for its model | "
          + " | ".join(f"{s} ms" for s in SCHEDULERS) + " | build vs best autoscheduler | best params |")
    print("|" + "---|" * (9 + len(SCHEDULERS)))
    for (kernel, _), (r, b) in sorted(rows.items()):
        default = r["baselines"]["default"]["ms"]
        found = speedups(r, b)
        autos = [found[s] for s in SCHEDULERS if s in found]
        versus = f"{found['build'] / max(autos):.2f}x" if autos else "-"
        params = ", ".join(f"{k}={v}" for k, v in r["params"].items())
        print(f"| {kernel} ({r['shape_class']}) | {model(r)} | {r['trials']} | {default:.2f} | {r['ms']:.2f} | "
              f"{default / r['ms']:.2f}x | {'tuned' if applied([r]) else 'defaults'} | "
              + " | ".join(baseline_text((b or r)["baselines"].get(s)) for s in SCHEDULERS)
              + f" | {versus} | {params} |")

    args.plots.mkdir(parents=True, exist_ok=True)
    names = sorted(rows)
    labels = {n: f"{n[0]} ({n[1]})" for n in names}
    fig, ax = plt.subplots(figsize=(10, 0.5 + 0.45 * len(names)))
    series = ["build", *SCHEDULERS]
    height = 0.8 / len(series)
    for k, label in enumerate(series):
        values = [(i, speedups(*rows[n]).get(label)) for i, n in enumerate(names)]
        values = [(i, v) for i, v in values if v]
        ax.barh([i + k * height for i, _ in values], [v for _, v in values], height, label=label)
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.set_yticks([i + 0.4 - height / 2 for i in range(len(names))], [labels[n] for n in names])
    ax.set_xscale("log")
    ax.set_xlabel("speed-up over the default schedule (log)")
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(args.plots / "tuned_vs_baselines.png", dpi=100)

    # One panel per CPU model, its legend beside it.
    models = sorted({m for _, m in names})
    fig, axes = plt.subplots(len(models), 1, figsize=(11, 0.5 + 4.5 * len(models)), squeeze=False)
    for ax, m in zip(axes[:, 0], models):
        for n in (n for n in names if n[1] == m):
            history, default = rows[n][0]["history"], rows[n][0]["baselines"]["default"]["ms"]
            ax.step([h["trial"] for h in history], [default / h["best_ms"] for h in history], where="post", label=n[0])
        ax.set_title(m)
        ax.set_xlabel("trials")
        ax.set_ylabel("best so far: speed-up over the defaults")
        ax.legend(fontsize=6, loc="center left", bbox_to_anchor=(1.01, 0.5))
    fig.tight_layout()
    fig.savefig(args.plots / "best_vs_trials.png", dpi=100)


if __name__ == "__main__":
    main()
