"""``coreb build``: turn a CoREB release into the Hub dataset folder, one config per subtask."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

NAME = "build"
HELP = "build the Hub dataset folder (one config per subtask) from a CoREB release"
DESCRIPTION = """\
Read a CoREB release in the official layout -- <config>/<split>.jsonl or .parquet for
code_corpus, text_corpus, text2code_queries, text2code_qrels, code2code_queries,
code2code_qrels, code2text_queries, code2text_qrels, one split per release (release_v2603) --
check all of it, and write a folder of Parquet files with a dataset card whose configs make

  load_dataset("coreb", "t2c_full_retro_any")

work with any `datasets` version: one config per subtask (queries with positive_ids,
hard_negative_ids, exclude_ids, corpus), the corpus views corpus_code, corpus_text,
corpus_text_abbreviated, and the 8 official configs. Every problem in the release is reported
at once, with file and line, and nothing is written unless all of it is sound. Both
destinations are checked before either is written: neither may be, contain or lie inside the
release (symlinks resolved), and --force replaces only a folder that holds what a build writes.

A family shipped without qrels gets them derived from the execution metadata (SPEC §1.3).

examples:
  coreb build path/to/release                 # writes ./coreb
  coreb build path/to/release --out my_coreb --force --mteb my_coreb_mteb"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "release", help="release folder in the official layout, or a Hub dataset id"
    )
    parser.add_argument("--out", type=Path, default=Path("coreb"), help="output folder (./coreb)")
    parser.add_argument(
        "--force",
        action="store_true",
        help="replace --out / --mteb if they exist (only folders a build wrote)",
    )
    parser.add_argument(
        "--mteb", type=Path, metavar="DIR", help="also write an MTEB-layout export to DIR"
    )
    parser.add_argument(
        "--qrels-scheme",
        choices=("v2", "v1"),
        default="v2",
        help="for releases without qrels: v2 graded (default) or v1 binary",
    )
    parser.add_argument(
        "--min-hard-negatives",
        type=int,
        default=1,
        help="derived T2C/C2C qrels: supplement the failed pool with non-qualifying correct "
        "solutions up to this many hard negatives (1)",
    )
    parser.add_argument(
        "--c2t-hard-negatives",
        type=int,
        default=4,
        help="derived C2T qrels: noise descriptions per query, other problems' fill in (4)",
    )
    parser.add_argument(
        "--original-text-style",
        default="original",
        help="text_style of original descriptions in the text corpus ('original')",
    )
    parser.add_argument("--license", default="apache-2.0", help="license in the card (apache-2.0)")


def run(args: argparse.Namespace) -> int:
    import coreb_dataset

    options = coreb_dataset.QrelsOptions(
        args.qrels_scheme,
        args.min_hard_negatives,
        args.c2t_hard_negatives,
        args.original_text_style,
    )
    targets = [("--out", args.out)] + ([("--mteb", args.mteb)] if args.mteb is not None else [])
    for _, target in targets:
        if os.path.lexists(target) and not args.force:
            raise ValueError(f"{target} exists; add --force to replace it")
    # Both destinations are checked before either is written: a failure on the second must
    # not come after the first was replaced. Once now, before the (long) read, and once
    # against every file the read found.
    local = coreb_dataset.local_inputs(args.release)
    for flag, target in targets:
        coreb_dataset.check_destination(target, overwrite=args.force, inputs=local, label=flag)
    if args.mteb is not None:
        out, mteb = args.out.resolve(), args.mteb.resolve()
        if out == mteb or out in mteb.parents or mteb in out.parents:
            raise ValueError(
                f"--mteb and --out must be separate folders, neither inside the other: "
                f"--out {args.out}, --mteb {args.mteb}"
            )
    release = coreb_dataset.read_release(args.release, options)
    for flag, target in targets:
        coreb_dataset.check_destination(
            target, overwrite=args.force, inputs=(*release.inputs, release.path), label=flag
        )
    report = coreb_dataset.build(
        release, args.out, options=options, overwrite=args.force, license=args.license
    )
    for warning in report.warnings:
        print(f"warning: {warning}")
    n_sub = len(release.subtasks)
    print(
        f"wrote {args.out}: {n_sub} subtask configs, {len(report.rows) - n_sub} corpus and "
        f"official configs, releases {', '.join(release.releases)}"
    )
    if args.mteb is not None:
        written = coreb_dataset.export_mteb(release, args.mteb, overwrite=args.force)
        print(f"wrote {args.mteb}: {len(written)} MTEB configs")
    return 0
