"""The Hub folder every builder writes, and reading it back.

A Hub dataset folder is ``<config>/<split>.parquet`` plus a ``README.md`` whose ``configs:``
declare them, so that ``load_dataset(folder, config)`` works with any ``datasets`` version.
Writing is atomic and reproducible (fixed Parquet settings; the folder appears in one rename),
and the destination is checked before anything is written. The readers (:func:`is_hub_folder`,
:func:`hub_folder_configs`, :func:`read_hub_config`) read such a folder, or a Hub dataset id,
without the ``datasets`` cache where they can.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import shutil
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from coreb_toolkit.builders.scratch import reclaim_leftovers, scratch_folder, scratch_prefix
from coreb_toolkit.hub_access import is_hub_id

RowFiles = Mapping[str, Mapping[str, tuple[Callable[[], Iterable[dict[str, Any]]], Any]]]
"""``config -> split -> (rows factory, datasets.Features)``: what :func:`write_hub_folder`
writes."""


def write_parquet(rows: Iterable[dict[str, Any]], features: Any, path: Path) -> int:
    """Write ``rows`` as one Parquet file with the schema of ``features`` (a
    ``datasets.Features``); returns the row count.

    Fixed writer settings, so that a rebuild of the same input is byte-identical."""
    table = pa.Table.from_pylist(list(rows), schema=features.arrow_schema)
    path.parent.mkdir(parents=True, exist_ok=True)
    if table.num_rows == 0:
        # no row group at all: `datasets` cannot read a file whose one row group is empty
        pq.ParquetWriter(path, table.schema, compression="zstd", compression_level=3).close()
        return 0
    pq.write_table(table, path, compression="zstd", compression_level=3, row_group_size=100_000)
    return table.num_rows


def configs_yaml(
    layout: Mapping[str, Sequence[str]], rows: Mapping[str, Mapping[str, int]] | None = None
) -> list[str]:
    """The ``configs:`` block of a dataset card for ``{config: [split, ...]}`` laid out as
    ``<config>/<split>.parquet``; with ``rows`` (the counts), empty splits are left out."""
    yaml = ["configs:"]
    for name, splits in layout.items():
        if rows is not None:
            splits = [s for s in splits if rows.get(name, {}).get(s, 0) > 0]
        if not splits:
            continue
        yaml.append(f"- config_name: {name}")
        yaml.append("  data_files:")
        for split in splits:
            yaml.append(f"  - split: {split}")
            yaml.append(f"    path: {name}/{split}.parquet")
    return yaml


#: The Hub's card files a build writes beside its configs: the dataset card and the benchmark's
#: ``eval.yaml``. A folder holding them is still one a build wrote (an earlier build with the
#: toolkit's cards), whichever renderers the next build is given.
CARD_FILES = ("README.md", "eval.yaml")


def _foreign_files(out: Path, keep: Iterable[str]) -> list[str]:
    """What ``out`` holds beyond a folder this module writes (:data:`CARD_FILES`,
    <config>/*.parquet and the ``keep`` files): ``--force`` must not delete a user's other
    data."""
    allowed = {*CARD_FILES, *keep}
    foreign = []
    for entry in sorted(out.iterdir()):
        name = entry.name
        if name in allowed and entry.is_file() and not entry.is_symlink():
            continue
        if entry.is_dir() and not entry.is_symlink() and not name.startswith("."):
            for inner in sorted(entry.iterdir()):
                rel = f"{name}/{inner.name}"
                plain = inner.is_file() and not inner.is_symlink()
                if not (plain and (inner.suffix == ".parquet" or rel in allowed)):
                    foreign.append(rel)
            continue
        foreign.append(name)
    return foreign


def check_not_an_input(
    out: Path, inputs: Iterable[str | os.PathLike[str]], label: str = "the output folder"
) -> None:
    """Raise unless ``out`` is, contains or lies inside none of ``inputs`` (symlinks resolved):
    writing it would replace or change what the build reads."""
    real = out.resolve()
    for inp in inputs:
        inp = Path(inp).resolve()
        if real == inp or real in inp.parents or inp in real.parents:
            raise ValueError(
                f"{label} {out} is, contains or lies inside {inp}, an input of this build: "
                "writing it would replace or change the release being read; choose a folder "
                "outside the release"
            )


def check_destination(
    out_dir: str | os.PathLike[str],
    *,
    overwrite: bool = False,
    inputs: Iterable[str | os.PathLike[str]] = (),
    keep: Iterable[str] = (),
    label: str = "the output folder",
) -> Path:
    """Raise unless a build may write ``out_dir``; first reclaim what killed builds left there.

    Refused, whatever ``overwrite`` says: an output that is, contains or lies inside one of
    ``inputs`` (symlinks resolved), one that exists but is not a folder, a folder holding
    anything a build does not write (:data:`CARD_FILES`, ``<config>/*.parquet``, the ``keep``
    files), and a place where a folder cannot be created (probed by creating one). An existing
    folder needs ``overwrite``. Returns the folder to write: ``out_dir``, or where it points if
    a symlink.

    Raises:
        ValueError: the output would touch an input or user data, or cannot be written.
        FileExistsError: it exists and ``overwrite`` is false.
    """
    out = Path(out_dir)
    if out.name in ("", ".", ".."):  # "." or "a/..": name the folder, so it has a sibling
        out = Path(os.path.abspath(out))
    real = out.resolve()
    check_not_an_input(out, inputs, label)
    if out.is_symlink():
        out = real  # write where it points, so that the link keeps working
    reclaim_leftovers(out)
    if os.path.lexists(out):
        if not overwrite:
            raise FileExistsError(f"{out} exists; pass overwrite=True (--force) to replace it")
        if not out.is_dir():
            raise ValueError(
                f"{label} {out} exists and is not a folder; refusing to replace it: remove it "
                "or choose another folder"
            )
        foreign = _foreign_files(out, keep)
        if foreign:
            more = f" and {len(foreign) - 5} more" if len(foreign) > 5 else ""
            shown = ", ".join(foreign[:5]) + more
            raise ValueError(
                f"{label} {out} holds files a build does not write ({shown}); replacing it "
                "would delete them: remove them yourself or choose another folder"
            )
        for folder in (out, *(p for p in out.iterdir() if p.is_dir())):
            if not os.access(folder, os.W_OK | os.X_OK):
                raise ValueError(f"{label} {out} cannot be replaced: {folder} is not writable")
    ancestor = out.parent
    while not os.path.lexists(ancestor) and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    try:
        probe = tempfile.mkdtemp(prefix=scratch_prefix(out, "tmp"), dir=ancestor)
    except OSError as err:
        raise ValueError(
            f"{label} {out} cannot be written: no folder can be created in {ancestor} "
            f"({err.strerror or err}); choose a writable place"
        ) from err
    os.rmdir(probe)
    return out


def write_hub_folder(
    out_dir: str | os.PathLike[str],
    files: RowFiles,
    card: Callable[[dict[str, dict[str, int]]], str],
    *,
    overwrite: bool = False,
    progress: bool = True,
    desc: str = "build",
    extra: Mapping[str, str] | None = None,
    inputs: Iterable[str | os.PathLike[str]] = (),
    extra_files: Mapping[str, Callable[[dict[str, dict[str, int]]], str]] | None = None,
) -> dict[str, dict[str, int]]:
    """Write a Hub dataset folder atomically: ``<config>/<split>.parquet`` + ``README.md``.

    The machinery shared by every builder of the toolkit (``coreb build``, ``coreb qualcode
    build``). ``files`` maps ``config -> split -> (rows factory, features)``; ``card`` gets the
    row counts ``{config: {split: n}}`` and returns the README text; ``extra`` adds small files
    (``{relative path: text}``, e.g. a build report); ``extra_files`` adds files whose text
    depends on what was written, as ``card`` does (``{relative path: render(rows)}``, e.g. the
    Hub's ``eval.yaml``, which lists only the splits that hold rows). The folder appears (or
    replaces the old one, with ``overwrite``) in one rename, so a failed build leaves nothing
    half-written; the destination is checked first (:func:`check_destination`, against
    ``inputs``), and scratch folders of killed builds are reclaimed.
    """
    from tqdm.auto import tqdm

    keep = [*(extra or {}), *(extra_files or {})]
    out = check_destination(out_dir, overwrite=overwrite, inputs=inputs, keep=keep)
    tmp = scratch_folder(out)
    rows: dict[str, dict[str, int]] = {}
    try:
        for name, parts in tqdm(files.items(), desc=desc, unit="config", disable=not progress):
            for split, (make_rows, features) in parts.items():
                items = list(make_rows())
                # `datasets` has no empty split: an empty one is left out of the folder and of
                # the card's configs (configs_yaml with the counts), and the card says so
                rows.setdefault(name, {})[split] = (
                    write_parquet(items, features, tmp / name / f"{split}.parquet") if items else 0
                )
        (tmp / "README.md").write_text(card(rows), encoding="utf-8")
        texts = {**(extra or {}), **{rel: make(rows) for rel, make in (extra_files or {}).items()}}
        for rel, text in texts.items():
            (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
            (tmp / rel).write_text(text, encoding="utf-8")
        replace_folder(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return rows


def replace_folder(tmp: Path, out: Path) -> None:
    """Move ``tmp`` to ``out``; an existing ``out`` is swapped out first, then removed.

    The swapped-out folder is named for its owner process, so that if this process is killed
    between the two renames, :func:`reclaim_leftovers` puts it back."""
    old = None
    if out.exists():
        old = out.with_name(f"{scratch_prefix(out, 'old')}{secrets.token_hex(4)}")
        out.rename(old)
    try:
        tmp.rename(out)
    except BaseException:
        if old is not None:
            old.rename(out)
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def folder_fingerprint(folder: str | os.PathLike[str]) -> str:
    """``"sha256:<hex>"`` over the sorted relative paths and the bytes of every file.

    Content, not sizes and mtimes: a copy, a checkout or a ``touch`` of the same data gives
    the same fingerprint on any machine, and an edit that keeps a file's size does not go
    unseen. Reading the bytes costs one pass over the folder, which the benchmark reads in full
    anyway. Hidden files and folders (``.git``, ``.cache``) are left out.
    """
    root = Path(folder)
    digest = hashlib.sha256()
    files = sorted(
        p
        for p in root.rglob("*")
        if p.is_file() and not any(part.startswith(".") for part in p.relative_to(root).parts)
    )
    for p in files:
        digest.update(p.relative_to(root).as_posix().encode() + b"\0")
        digest.update(str(p.stat().st_size).encode() + b"\0")
        with p.open("rb") as f:
            for block in iter(lambda: f.read(1 << 22), b""):
                digest.update(block)
    return "sha256:" + digest.hexdigest()


def is_hub_folder(source: str | os.PathLike[str]) -> bool:
    """Whether ``source`` is a built dataset: a folder with a ``README.md`` (written by a
    build), or a Hub dataset id (``owner/name`` that is no local path)."""
    path = Path(source)
    if (path / "README.md").is_file():
        # a download of a Hub release (hq-bench/coreb) has a card too, but only the official
        # configs: a CoREB build always writes its corpus views beside them
        return not (path / "code_corpus").is_dir() or (path / "corpus_code").is_dir()
    return not path.exists() and is_hub_id(source)


def hub_folder_configs(folder: str | os.PathLike[str]) -> dict[str, list[str]]:
    """``{config: [split, ...]}`` of a built folder (from its card's ``configs:``) or a Hub
    dataset.

    Raises:
        ValueError: a Hub dataset that cannot be read.
    """
    source = str(folder)
    readme = Path(source) / "README.md"
    if readme.is_file():
        from huggingface_hub import DatasetCard

        configs = DatasetCard.load(readme).data.get("configs") or []
        return {
            c["config_name"]: [f["split"] for f in c.get("data_files", []) if "split" in f]
            for c in configs
        }
    import datasets

    try:
        names = datasets.get_dataset_config_names(source)
        return {n: datasets.get_dataset_split_names(source, n) for n in names}
    except Exception as err:  # datasets raises many kinds here
        raise ValueError(f"cannot read the dataset {source!r}: {err}") from None


def read_hub_config(
    folder: str | os.PathLike[str], config: str, split: str, columns: list[str] | None = None
) -> list[dict[str, Any]]:
    """A config's rows (``columns`` only, when given). A folder written by a build is read
    straight from its Parquet file (``<config>/<split>.parquet``, the layout its card
    declares), which skips the ``datasets`` cache machinery; anything else (a Hub id) goes
    through ``load_dataset``."""
    source = str(folder)
    path = Path(source) / config / f"{split}.parquet"
    if path.is_file():
        return pq.read_table(path, columns=columns).to_pylist()
    import datasets

    return datasets.load_dataset(source, config, split=split).to_list()
