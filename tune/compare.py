"""The tuner's search strategies compared at equal trial budgets: every kernel tuned by each strategy
with each seed (tune/tune.py on this machine, no baselines, into a records file of its own; the
strategies alternate within a seed, so that the machine's drift falls on both), then per kernel and
strategy the best so far against the trials (each trial measured beside the defaults), the median
over the seeds, and the summaries' re-measured best. Each run has a records file of its own (DIR/
<strategy>-<seed>.jsonl), so that no run starts from what another found. Prints a Markdown table and writes
tune/plots/strategies.png.

    PYTHONPATH=build/python .venv/bin/python tune/compare.py posattn_linear_f32 posattn_rope_f32 \\
        --trials 20 --seeds 3 --records build/strategies

--analyse-only reads an earlier comparison's records and tunes nothing.
"""
import argparse
import json
import pathlib
import statistics
import subprocess
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
STRATEGIES = ("local", "tpe")


def runs(records):
    """{(kernel, strategy, seed): (its trials' ratios to the defaults in trial order, None where
    invalid; its summary's re-measured ratio)}."""
    found = {}
    for r in records:
        key = (r["kernel"], r["strategy"], r["seed"])
        trials, summary = found.get(key, ([], None))
        if r.get("best"):
            summary = r["ratio_to_default"]
        else:
            trials = trials + [r.get("ratio_to_default")]
        found[key] = (trials, summary)
    return found


def best_so_far(ratios):
    """The speed-up over the defaults of the best trial so far, after each trial (1 before any
    beats them)."""
    best, curve = 1.0, []
    for ratio in ratios:
        best = min(best, ratio) if ratio else best
        curve.append(1 / best)
    return curve


def medians(found, kernel, strategy):
    """The median over seeds of the best-so-far curve, and of the re-measured summary speed-up."""
    curves = [best_so_far(t) for (k, s, _), (t, _) in found.items() if (k, s) == (kernel, strategy)]
    length = min(map(len, curves))
    summaries = [1 / m for (k, s, _), (_, m) in found.items() if (k, s) == (kernel, strategy) and m]
    return [statistics.median(c[i] for c in curves) for i in range(length)], statistics.median(summaries)


def report(records, plot):
    found = runs(records)
    kernels = sorted({k for k, _, _ in found})
    seeds = len({seed for _, _, seed in found})
    longest = max(len(t) for t, _ in found.values())
    marks = [m for m in (5, 10, 20, 40, 80) if m <= longest]
    print(f"| kernel | strategy | seeds | " + " | ".join(f"best after {m}" for m in marks) + " | best re-measured |")
    print("|" + "---|" * (4 + len(marks)))
    fig, axes = plt.subplots(len(kernels), 1, figsize=(7, 2.6 * len(kernels)), squeeze=False)
    for ax, kernel in zip(axes[:, 0], kernels):
        for strategy in STRATEGIES:
            if not any((k, s) == (kernel, strategy) for k, s, _ in found):
                continue
            curve, remeasured = medians(found, kernel, strategy)
            cells = [f"{curve[m - 1]:.3f}x" if m <= len(curve) else "-" for m in marks]
            print(f"| {kernel} | {strategy} | {seeds} | " + " | ".join(cells) + f" | {remeasured:.3f}x |")
            line, = ax.step(range(1, len(curve) + 1), curve, where="post", label=f"{strategy}: as each trial measured")
            ax.plot([len(curve)], [remeasured], marker="o", color=line.get_color(),
                    label=f"{strategy}: its best re-measured")
        ax.set_title(kernel, fontsize=9)
        ax.set_ylabel("best so far\n(x the defaults)", fontsize=8)
        ax.legend(fontsize=6)
    axes[-1, 0].set_xlabel(f"trials (median over {seeds} seeds)")
    fig.tight_layout()
    fig.savefig(plot, dpi=100)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("kernels", nargs="*")
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--records", type=pathlib.Path, default=ROOT / "build" / "strategies", help="a directory")
    parser.add_argument("--plot", type=pathlib.Path, default=ROOT / "tune" / "plots" / "strategies.png")
    parser.add_argument("--analyse-only", action="store_true")
    args = parser.parse_args()
    if not args.analyse_only:
        for seed in range(1, args.seeds + 1):
            for strategy in STRATEGIES if seed % 2 else reversed(STRATEGIES):
                subprocess.run([sys.executable, str(ROOT / "tune" / "tune.py"), *args.kernels, "--strategy", strategy,
                                "--seed", str(seed), "--trials", str(args.trials), "--minutes", "1e9", "--repeats",
                                str(args.repeats), "--no-baselines", "--records",
                                str(args.records / f"{strategy}-{seed}.jsonl")], check=True)
    report([json.loads(line) for path in sorted(args.records.glob("*.jsonl")) for line in path.read_text().splitlines()],
           args.plot)


if __name__ == "__main__":
    main()
