"""``coreb compare``: paired significance test between two runs on the same queries."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from coreb_toolkit.cli.commands._common import ScoringArguments, load_judgments, score_run
from coreb_toolkit.cli.parsing import Command
from eval_metrics.significance import METHODS, paired_test

DESCRIPTION = """\
Evaluate two runs on the same qrels and test whether B's mean per-query metric differs from
A's: a seeded paired randomization test (or paired bootstrap) with a bootstrap confidence
interval of the mean difference B - A. Optionally plot the per-query differences.

example:
  coreb compare examples/run.trec examples/run_b.trec --qrels examples/qrels.trec \\
      --metric ndcg_at_10 --plot compare.png"""


@dataclass
class CompareArguments:
    """``coreb compare RUN_A RUN_B --qrels FILE``: the test and its plot."""

    run_a: Path = field(metadata={"positional": True, "help": "baseline TREC run (system A)"})
    run_b: Path = field(
        metadata={"positional": True, "help": "TREC run to compare against it (system B)"}
    )
    metric: str = field(default="ndcg_at_10", metadata={"help": "per-query metric to compare"})
    method: Literal[METHODS] = field(
        default="randomization",
        metadata={"help": "paired randomization test, or paired bootstrap"},
    )
    n_resamples: int = field(default=10_000, metadata={"help": "resamples of the test and CI"})
    confidence: float = field(default=0.95, metadata={"help": "confidence interval level"})
    seed: int = field(default=0, metadata={"help": "random seed"})
    plot: Path | None = field(
        default=None, metadata={"help": "write a PNG of the per-query differences"}
    )

    def __post_init__(self) -> None:
        if self.n_resamples < 1:
            raise ValueError(f"--n-resamples must be at least 1, got {self.n_resamples}")
        if not 0 < self.confidence < 1:
            raise ValueError(f"--confidence must be between 0 and 1, got {self.confidence}")


def _per_query(evaluations: dict, metric: str) -> dict[str, float]:
    values = {}
    for ev in evaluations.values():
        if metric not in ev.metric_keys:
            raise ValueError(f"metric {metric!r} was not computed; choose one of {ev.metric_keys}")
        values.update({q: v[metric] for q, v in ev.per_query.items()})
    return values


def run(args: CompareArguments, scoring: ScoringArguments) -> int:
    judgments = load_judgments(scoring)
    a = _per_query(score_run(args.run_a, scoring, judgments, progress=False), args.metric)
    b = _per_query(score_run(args.run_b, scoring, judgments, progress=False), args.metric)
    result = paired_test(
        a,
        b,
        method=args.method,
        n_resamples=args.n_resamples,
        confidence=args.confidence,
        seed=args.seed,
    )
    print(f"{args.metric} over {result.n_queries} queries ({result.method} test, seed {args.seed})")
    print(f"  A  {args.run_a}: {result.mean_a:.4f}")
    print(f"  B  {args.run_b}: {result.mean_b:.4f}")
    print(
        f"  B - A = {result.delta:+.4f}  "
        f"{result.confidence:.0%} CI [{result.ci_low:+.4f}, {result.ci_high:+.4f}]  "
        f"p = {result.p_value:.4g}"
    )
    verdict = "significant" if result.significant() else "not significant"
    print(f"  {verdict} at alpha = 0.05")
    if args.plot:
        _plot(a, b, result, args)
        print(f"  plot: {args.plot}")
    return 0


def _plot(a: dict, b: dict, result, args: CompareArguments) -> None:
    try:
        import matplotlib
    except ImportError:
        raise ImportError("--plot needs matplotlib: pip install 'coreb-toolkit[plot]'") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    diffs = sorted(b[q] - a[q] for q in a)
    fig, ax = plt.subplots(figsize=(8, 4))
    colors = ["tab:green" if d > 0 else "tab:red" if d < 0 else "tab:gray" for d in diffs]
    ax.bar(range(len(diffs)), diffs, color=colors, width=1.0)
    ax.axhline(0.0, color="black", linewidth=0.8)
    ax.axhspan(
        result.ci_low,
        result.ci_high,
        color="tab:blue",
        alpha=0.2,
        label=f"{result.confidence:.0%} CI of mean difference",
    )
    ax.axhline(result.delta, color="tab:blue", linewidth=1.2, label=f"mean {result.delta:+.4f}")
    ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
    ax.set_xlabel("queries (sorted by difference)")
    ax.set_ylabel(f"{args.metric}: B - A")
    ax.set_title(f"{args.run_b.name} vs {args.run_a.name}  (p = {result.p_value:.3g})")
    ax.legend(loc="upper left")
    fig.tight_layout()
    fig.savefig(args.plot, dpi=120)
    plt.close(fig)


COMMANDS = (
    Command(
        name="compare",
        help="paired significance test of run B against run A (p-value, bootstrap CI)",
        description=DESCRIPTION,
        arguments=(CompareArguments, ScoringArguments),
        run=run,
        mode="two run files (`coreb compare RUN_A RUN_B --qrels FILE`)",
    ),
)
