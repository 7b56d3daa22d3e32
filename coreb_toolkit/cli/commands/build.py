"""``coreb build``: turn a CoREB release into the Hub dataset folder, one config per subtask."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import coreb_dataset
from coreb_toolkit.cli.commands._common import qrels_spellings
from coreb_toolkit.cli.parsing import Command

DESCRIPTION = """\
Read a CoREB release as published -- the 8 official configs code_corpus, text_corpus,
text2code_queries, text2code_qrels, code2code_queries, code2code_qrels, code2text_queries,
code2text_qrels, one split per release (release_v2603), rows as the Hub serves them (meta
nested or flattened into meta_* columns) -- from the Hub (hq-bench/coreb), from the Hub's
layout <config>/<split>[-00000-of-00001].jsonl|parquet, or from one folder per release holding
<config>.jsonl -- check all of it, and write a folder of Parquet files with a dataset card
whose configs make

  load_dataset("coreb", "t2c_full_retro_any")

work with any `datasets` version: one config per subtask (queries with positive_ids,
hard_negative_ids, exclude_ids, corpus), the corpus views corpus_code, corpus_text,
corpus_text_abbreviated, and the 8 official configs. Every problem in the release is reported
at once, with file and line, and nothing is written unless all of it is sound. Both
destinations are checked before either is written: neither may be, contain or lie inside the
release (symlinks resolved), and --force replaces only a folder that holds what a build writes.

Ids are unique within a release only: each release is its own split, never merged. A family
shipped without qrels gets them derived from the execution metadata (protocol §1.3), by the
qrels options below (coreb_dataset.QrelsOptions); --qrels derived derives them for every
family. The shipped qrels are audited against the execution metadata and the paper's rules
(printed, and in the dataset card): the published t2c_search qrels grade failed solutions 2.

examples:
  coreb build hq-bench/coreb --out coreb      # the published releases, from the Hub
  coreb build path/to/release                 # writes ./coreb
  coreb build path/to/release --out my_coreb --force --mteb my_coreb_mteb

--mteb DIR also writes one release (--mteb-release, default the latest) in the layout of MTEB's
own CoREB datasets: DIR/coreb-{t2c,c2t,c2c}-retrieval/, each pooling one main task (configs
corpus, queries, default; split test) so that MTEB's stock CorebT2CRetrieval,
CorebC2TRetrieval and CorebC2CRetrieval evaluate it with only the dataset path and revision
overridden, plus {subtask}-corpus/-queries/-qrels configs. Qrels hold the positives only (MTEB
credits any score > 0); each folder's card says where MTEB's protocol differs from CoREB's. It
also writes MTEB's three reranking tasks, DIR/coreb-{t2c,c2t,c2c}-reranking/ (configs corpus,
queries, default, top_ranked: 17 candidates per query, CorebT2CReranking and kin, MAP@10): every
judged document of a query with a positive and a hard negative, and easy negatives of other
problems (coreb_toolkit.builders.coreb.reranking says how, and what mteb's statistics fix).

--reranking-records DIR writes every release's records -- one per (query, positive), with its
hard negatives: the official reranker dataset's (v2602: 4,173, its train split) -- to
DIR/<release>.jsonl, which `coreb train reranker --train-sources pairs_jsonl:FILE` reads."""


@dataclass
class BuildArguments:
    """``coreb build RELEASE``: what to read and where to write; how qrels are derived for a
    family shipped without them is the :class:`coreb_dataset.QrelsOptions` that comes with it."""

    release: str = field(
        metadata={
            "positional": True,
            "help": "release folder in the official layout, or a Hub dataset id",
        }
    )
    out: Path = field(default=Path("coreb"), metadata={"help": "output folder"})
    force: bool = field(
        default=False,
        metadata={"help": "replace --out / --mteb if they exist (only folders a build wrote)"},
    )
    mteb: Path | None = field(
        default=None,
        metadata={
            "metavar": "DIR",
            "help": "also write the release in the layout of MTEB's CoREB datasets to DIR",
        },
    )
    mteb_release: str | None = field(
        default=None,
        metadata={
            "metavar": "RELEASE",
            "help": "the release --mteb exports (MTEB has one split); default the latest",
        },
    )
    reranking_records: Path | None = field(
        default=None,
        metadata={
            "metavar": "DIR",
            "help": "also write every release's reranking records (one per query and positive, "
            "the official reranker dataset's) to DIR/<release>.jsonl, in the pairs_jsonl "
            "format `coreb train reranker` reads",
        },
    )
    license: str = field(default="apache-2.0", metadata={"help": "license in the card"})

    def __post_init__(self) -> None:
        self.out = Path(self.out)
        if self.reranking_records is not None:
            self.reranking_records = Path(self.reranking_records)
        if self.mteb is not None:
            self.mteb = Path(self.mteb)
        elif self.mteb_release is not None:
            raise ValueError(
                f"--mteb-release needs --mteb DIR (got --mteb-release {self.mteb_release} alone)"
            )


def run(args: BuildArguments, options: coreb_dataset.QrelsOptions) -> int:
    targets = [("--out", args.out)] + [
        (flag, path)
        for flag, path in (("--mteb", args.mteb), ("--reranking-records", args.reranking_records))
        if path is not None
    ]
    for _, target in targets:
        if os.path.lexists(target) and not args.force:
            raise ValueError(f"{target} exists; add --force to replace it")
    # Both destinations are checked before either is written: a failure on the second must
    # not come after the first was replaced. Once now, before the (long) read, and once
    # against every file the read found.
    local = coreb_dataset.local_inputs(args.release)
    # the MTEB export is a folder of Hub folders, with its own destination rules
    records_keep = [] if args.reranking_records is None else _records_files(args.reranking_records)
    check = {
        "--out": coreb_dataset.check_destination,
        "--mteb": coreb_dataset.check_mteb_destination,
        "--reranking-records": lambda target, **kw: coreb_dataset.check_destination(
            target, keep=records_keep, **kw
        ),
    }
    for flag, target in targets:
        check[flag](target, overwrite=args.force, inputs=local, label=flag)
    for i, (flag_a, a) in enumerate(targets):
        for flag_b, b in targets[i + 1 :]:
            ra, rb = a.resolve(), b.resolve()
            if ra == rb or ra in rb.parents or rb in ra.parents:
                raise ValueError(
                    f"{flag_b} and {flag_a} must be separate folders, neither inside the other: "
                    f"{flag_a} {a}, {flag_b} {b}"
                )
    release = coreb_dataset.read_release(args.release, options)
    if args.mteb_release is not None and args.mteb_release not in release.releases:
        raise ValueError(
            f"--mteb-release: release {args.mteb_release!r} is not in {args.release}; it holds "
            f"{', '.join(sorted(release.releases))}"
        )
    for flag, target in targets:
        check[flag](
            target, overwrite=args.force, inputs=(*release.inputs, release.path), label=flag
        )
    report = coreb_dataset.build(
        release, args.out, options=options, overwrite=args.force, license=args.license
    )
    for warning in report.warnings:
        print(f"warning: {warning}")
    for line in audit_lines(report.qrels_audit):
        print(line)
    n_sub = len(release.subtasks)
    print(
        f"wrote {args.out}: {n_sub} subtask configs, {len(report.rows) - n_sub} corpus and "
        f"official configs, releases {', '.join(release.releases)}"
    )
    if args.mteb is not None:
        export = coreb_dataset.export_mteb(
            release, args.mteb, release_name=args.mteb_release, overwrite=args.force
        )
        counts = {folder: export.folders[folder].get("queries", 0) for folder in export.tasks}
        tasks = ", ".join(
            f"{folder} ({n} quer{'y' if n == 1 else 'ies'}, {task})"
            for folder, task in export.tasks.items()
            for n in (counts[folder],)
        )
        print(f"wrote {args.mteb}: release {export.release} as {tasks}")
        for folder, ids in export.left_out.items():
            print(
                f"note: {folder}: {len(ids)} quer{'y' if len(ids) == 1 else 'ies'} without a "
                "positive left out (an MTEB task cannot hold them; CoREB scores them 0)"
            )
    if args.reranking_records is not None:
        counts = coreb_dataset.write_reranking_records(
            release, args.reranking_records, overwrite=args.force
        )
        written = ", ".join(f"{name}.jsonl ({n:,} records)" for name, n in counts.items())
        print(f"wrote {args.reranking_records}: {written}")
    return 0


def _records_files(folder: Path) -> list[str]:
    """The files a records folder may hold (what an earlier --reranking-records wrote)."""
    if not folder.is_dir():
        return []
    return [p.name for p in folder.iterdir() if p.suffix == ".jsonl"]


def audit_lines(audit: dict[str, dict[str, dict]]) -> list[str]:
    """The build report's qrels audit, a line per release and main task."""
    lines = []
    for release, families in audit.items():
        for family, a in families.items():
            failed = a["failed_positives"]
            line = (
                f"qrels audit {release} {family}: {a['positives']:,} positives, "
                f"{a['hard_negatives']:,} hard negatives shipped"
            )
            if "positives_by_rule" in a:
                line += (
                    f"; the paper's rules grade {a['positives_by_rule']:,} of the positives 2 "
                    f"and {a['hard_negatives_by_rule']:,} of the hard negatives 1 "
                    f"({a['hard_negatives_in_pool']:,} lie in the pool they draw from)"
                )
            else:
                line += f"; {a['note']}"
            if failed:
                line += (
                    f"; {sum(failed.values()):,} positives failed execution ("
                    + ", ".join(f"{k} {v}" for k, v in sorted(failed.items()))
                    + "): the paper grades only verified-correct code 2; --qrels derived "
                    "rebuilds by its rules"
                )
            lines.append(line)
    return lines


COMMANDS = (
    Command(
        name="build",
        help="build the Hub dataset folder (one config per subtask) from a CoREB release",
        description=DESCRIPTION,
        arguments=(BuildArguments, coreb_dataset.QrelsOptions),
        run=run,
        mode="`coreb build RELEASE`",
        extra_arguments=qrels_spellings,
    ),
)
