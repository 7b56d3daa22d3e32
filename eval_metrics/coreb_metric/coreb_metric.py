"""CoREB / QualCode metrics as a Hugging Face ``evaluate`` module.

A thin wrapper over the ``eval_metrics`` package of the coreb-toolkit (which must be installed:
``pip install coreb-toolkit``). evaluate copies this script into its cache, so it uses absolute
imports only.

Configs:
    default: graded retrieval metrics (nDCG, MAP, Recall, MRR, P at k, hard-negative intrusion).
    qpa:     quality preference accuracy over (chosen, rejected) score pairs.
    mca:     multi-condition accuracy, overall and per number of conditions.
"""

from __future__ import annotations

from collections.abc import Mapping

import datasets
import evaluate

from coreb_toolkit.vocabulary import COREB_CITATION
from coreb_toolkit.vocabulary import SYNH_RANK_CITATION
from eval_metrics import evaluate_retrieval
from eval_metrics.checks import MAX_RELEVANCE
from eval_metrics.checks import check_num_conditions
from eval_metrics.checks import check_query_scores
from eval_metrics.checks import check_relevance
from eval_metrics.checks import check_score
from eval_metrics.preference import mca
from eval_metrics.preference import qpa

_CITATION = COREB_CITATION + "\n" + SYNH_RANK_CITATION + "\n"

_DESCRIPTION = """\
Graded code-retrieval metrics exactly as CoREB defines them (pytrec_eval engine, relevance
level 2, hard negatives zeroed for nDCG, trec_eval tie order for every metric, per-query
exclusions, an explicit policy for queries without a relevant document), and the SynH-Rank
quality preference metrics QPA and MCA (a tie is not a success).
"""

_KWARGS_DESCRIPTION = """
Default config (retrieval), one row per query:
    predictions: list of {"query_id": str, "doc_ids": [str], "scores": [float]}
    references:  list of {"query_id": str, "doc_ids": [str], "relevance": [int]}
    exclude (optional): {query_id: [doc_id]} removed from that query's ranking (c2c anchor).
    k_values (optional): list of cutoffs for every measure, or {measure: [k]} with measures
        ndcg, map, recall, mrr, precision. Default: nDCG@1,3,5,10  MAP@10,100
        Recall@1,3,5,10,100  MRR@10  P@1,3,5,10.
    no_positive_policy (optional): "zero" (default; official runner, published numbers) or
        "exclude" for queries whose references hold no relevance-2 document.
    relevance_level (optional): grade from which a document is relevant (default 2).
Returns: ndcg_at_10, recall_at_10, mrr_at_10, map_at_100, precision_at_5, ...,
    hard_negative_intrusion_rate (None when no query is eligible), n_intrusion_eligible,
    n_queries, n_queries_without_positive, n_queries_missing_from_run, no_positive_policy,
    relevance_level.

Config "qpa": chosen_score=[float], rejected_score=[float] -> {"qpa", "n_triplets"}.
Config "mca": chosen_score, rejected_score, num_conditions=[int]
    -> {"mca", "mca_1cond", "mca_2cond", ..., "n_triplets", "n_triplets_<k>cond"}.

Examples:
    >>> import evaluate
    >>> metric = evaluate.load("eval_metrics/coreb_metric")
    >>> metric.compute(
    ...     predictions=[{"query_id": "q1", "doc_ids": ["a", "b"], "scores": [0.9, 0.2]}],
    ...     references=[{"query_id": "q1", "doc_ids": ["a"], "relevance": [2]}],
    ...     k_values=[1])["ndcg_at_1"]
    1.0
"""

_CONFIGS = ("default", "qpa", "mca")
_ROW_VALUES = {"predictions": "scores", "references": "relevance"}
# The keyword arguments of the retrieval config besides the rows (see _score).
_RETRIEVAL_OPTIONS = frozenset(("exclude", "k_values", "no_positive_policy", "relevance_level"))
_INT_ONLY = frozenset((int,))


def _checked_row(row, index, kind):
    """One prediction or reference row, checked on the caller's values: evaluate casts rows
    through the features before ``_compute`` sees them (int64 truncates 1.9 to 1, float64 reads
    "0.9" and True as numbers, string ids turn 7 into "7"), so the checks must come first.

    Returns ``(query_id, doc_ids, values, docs)``: the ids as plain ``str`` and ``docs`` the
    ``{doc_id: value}`` pairs (truncated to the shorter list: misaligned lengths and duplicates
    are reported later, in the order evaluate's own path reports them) with plain ``float``/
    ``int`` scores and ``int`` grades, as the features would have stored them.
    """
    values_key = _ROW_VALUES[kind]
    if not isinstance(row, Mapping):
        raise TypeError(
            f"{kind}[{index}] must be a dict with query_id, doc_ids and {values_key}, "
            f"got {type(row).__name__}"
        )
    missing = [k for k in ("query_id", "doc_ids", values_key) if k not in row]
    if missing:
        raise ValueError(f"{kind}[{index}] lacks {', '.join(missing)}")
    query_id = row["query_id"]
    if not isinstance(query_id, str):
        raise TypeError(f"{kind}[{index}]: query_id must be a str, got {query_id!r}")
    query_id = str(query_id)  # a str subclass (numpy.str_) as the string feature stores it
    where = f"{kind}[{index}] (query {query_id!r})"
    doc_ids, values = row["doc_ids"], row[values_key]
    for name, seq in (("doc_ids", doc_ids), (values_key, values)):
        if isinstance(seq, (str, bytes, Mapping)) or not hasattr(seq, "__len__"):
            raise TypeError(f"{where}: {name} must be a list, got {type(seq).__name__}")
    # One C-level pass (str.join refuses any non-str, 2.5x cheaper than collecting the types)
    # instead of an isinstance call per id (5 M of them in a CoREB-size run); the per-id loop
    # only runs to name the culprit. str subclasses (numpy.str_) pass: they score alike.
    try:
        "".join(doc_ids)
    except TypeError:
        for j, doc_id in enumerate(doc_ids):
            if not isinstance(doc_id, str):
                raise TypeError(f"{where}: doc_ids[{j}] must be a str, got {doc_id!r}") from None
        raise
    docs = dict(zip(doc_ids, values, strict=False))
    try:
        if kind == "predictions":
            if not check_query_scores(query_id, docs):
                # numpy scalars: the float64 feature would store them as Python floats
                docs = {d: float(s) for d, s in docs.items()}
        elif not (
            # one C-level pass for the usual plain-int grades; the per-grade check otherwise
            set(map(type, docs.values())) <= _INT_ONLY
            and (not docs or (min(docs.values()) >= 0 and max(docs.values()) <= MAX_RELEVANCE))
        ):
            docs = {d: check_relevance(r, query_id, d) for d, r in docs.items()}
    except (TypeError, ValueError) as err:
        raise type(err)(f"{where}: {err}") from None
    return query_id, doc_ids, values, docs


def _check_row(row, index, kind):
    """Check one prediction or reference row (see :func:`_checked_row`)."""
    _checked_row(row, index, kind)


def _check_batch(config_name, batch):
    """Every value of a batch, before evaluate stores it (one check per kind, from
    eval_metrics.checks)."""
    if config_name in ("qpa", "mca"):
        for name, what in (("chosen_score", "chosen"), ("rejected_score", "rejected")):
            for i, value in enumerate(batch.get(name) or ()):
                check_score(value, i, what, what="triplet")
        for i, value in enumerate(batch.get("num_conditions") or ()):
            check_num_conditions(value, i)
        return
    for kind in _ROW_VALUES:
        for i, row in enumerate(batch.get(kind) or ()):
            _check_row(row, i, kind)


def _row_error(out, i, query_id, doc_ids, values, docs, kind):
    """The error of a checked row that cannot join ``out`` (``None`` when it can)."""
    values_key = _ROW_VALUES[kind]
    if query_id in out:
        return ValueError(f"{kind}[{i}]: query {query_id!r} appears in more than one row")
    if len(doc_ids) != len(values):
        return ValueError(
            f"{kind}[{i}] (query {query_id!r}): {len(doc_ids)} doc_ids but "
            f"{len(values)} {values_key}; they must be aligned"
        )
    if len(docs) != len(doc_ids):
        seen = set()
        dup = str(next(d for d in doc_ids if d in seen or seen.add(d)))  # numpy.str_ too
        return ValueError(f"{kind}[{i}] (query {query_id!r}) lists doc {dup!r} twice")
    return None


def _rows_to_mapping(rows, values_key, kind):
    """Turn one-row-per-query records into {query_id: {doc_id: value}}, refusing duplicates."""
    out = {}
    for i, row in enumerate(rows):
        query_id = row["query_id"]
        doc_ids = row["doc_ids"]
        values = row[values_key]
        docs = dict(zip(doc_ids, values, strict=False))
        error = _row_error(out, i, query_id, doc_ids, values, docs, kind)
        if error is not None:
            raise error
        out[query_id] = docs
    return out


def _direct_mappings(predictions, references):
    """Check the rows of a one-shot ``compute`` and build the run and qrels in the same pass.

    The errors are those of evaluate's own path, in its order: every row's types and values
    (predictions, then references), then the row counts, then duplicates and misaligned lists.
    """
    mappings, first_errors = [], []
    for kind, rows in (("predictions", predictions), ("references", references)):
        out, first_error = {}, None
        for i, row in enumerate(rows):
            query_id, doc_ids, values, docs = _checked_row(row, i, kind)
            if first_error is None:
                first_error = _row_error(out, i, query_id, doc_ids, values, docs, kind)
            out[query_id] = docs
        mappings.append(out)
        first_errors.append(first_error)
    if len(predictions) != len(references):
        # evaluate's message for the same mistake (its add_batch pairs the rows up)
        raise ValueError(
            f"Mismatch in the number of predictions ({len(predictions)}) and references "
            f"({len(references)})"
        )
    for error in first_errors:
        if error is not None:
            raise error
    run, qrels = mappings
    return run, qrels


def _score(run, qrels, exclude=None, k_values=None, no_positive_policy="zero", relevance_level=2):
    """The summary of :func:`eval_metrics.evaluate_retrieval` on the checked mappings (their
    scores and grades were checked row by row, in ``_checked_row``)."""
    result = evaluate_retrieval(
        qrels,
        run,
        k_values=k_values,
        exclude=exclude,
        no_positive_policy=no_positive_policy,
        relevance_level=relevance_level,
        checked=True,
    )
    return result.summary()


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class CorebMetric(evaluate.Metric):
    def _info(self):
        if self.config_name not in _CONFIGS:
            raise KeyError(
                f"coreb_metric has no config {self.config_name!r}; choose one of {_CONFIGS}"
            )
        if self.config_name == "qpa":
            features = datasets.Features(
                {
                    "chosen_score": datasets.Value("float64"),
                    "rejected_score": datasets.Value("float64"),
                }
            )
        elif self.config_name == "mca":
            features = datasets.Features(
                {
                    "chosen_score": datasets.Value("float64"),
                    "rejected_score": datasets.Value("float64"),
                    "num_conditions": datasets.Value("int64"),
                }
            )
        else:
            features = datasets.Features(
                {
                    "predictions": {
                        "query_id": datasets.Value("string"),
                        "doc_ids": datasets.Sequence(datasets.Value("string")),
                        "scores": datasets.Sequence(datasets.Value("float64")),
                    },
                    "references": {
                        "query_id": datasets.Value("string"),
                        "doc_ids": datasets.Sequence(datasets.Value("string")),
                        "relevance": datasets.Sequence(datasets.Value("int64")),
                    },
                }
            )
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=features,
            reference_urls=["https://github.com/hq-bench/coreb"],
        )

    def compute(self, *, predictions=None, references=None, **kwargs):
        """Score the rows given here and those added before (evaluate appends the inputs
        description to this docstring).

        A one-shot retrieval call (rows given here, none added before, one process) is checked
        and scored straight from the caller's rows: evaluate's path would write every score to
        an Arrow table and read it back as Python lists, which cost more than trec_eval itself
        on a CoREB-size run. The checks, errors and numbers are those of evaluate's path, which
        every other call (``add``/``add_batch`` first, ``num_process > 1``, the qpa and mca
        configs) still takes.
        """
        if (
            self.config_name == "default"
            and self.num_process == 1
            and self.writer is None
            and isinstance(predictions, (list, tuple))
            and isinstance(references, (list, tuple))
            and kwargs.keys() <= _RETRIEVAL_OPTIONS
        ):
            run, qrels = _direct_mappings(predictions, references)
            return _score(run, qrels, **kwargs)
        return super().compute(predictions=predictions, references=references, **kwargs)

    def add_batch(self, *, predictions=None, references=None, **kwargs):
        """Add a batch of rows, each value checked as the library checks it (evaluate appends
        the inputs description to this docstring)."""
        _check_batch(
            self.config_name, {"predictions": predictions, "references": references, **kwargs}
        )
        super().add_batch(predictions=predictions, references=references, **kwargs)

    def add(self, *, prediction=None, reference=None, **kwargs):
        """Add one row, checked as :meth:`add_batch` checks a batch."""
        batch = {k: [v] for k, v in kwargs.items() if v is not None}
        batch.update({"predictions": [prediction] if prediction is not None else None,
                      "references": [reference] if reference is not None else None})  # fmt: skip
        _check_batch(self.config_name, batch)
        super().add(prediction=prediction, reference=reference, **kwargs)

    def _compute(
        self,
        predictions=None,
        references=None,
        chosen_score=None,
        rejected_score=None,
        num_conditions=None,
        exclude=None,
        k_values=None,
        no_positive_policy="zero",
        relevance_level=2,
    ):
        if self.config_name == "qpa":
            return {"qpa": qpa(chosen_score, rejected_score), "n_triplets": len(chosen_score)}
        if self.config_name == "mca":
            return mca(chosen_score, rejected_score, num_conditions)
        run = _rows_to_mapping(predictions, "scores", "predictions")
        qrels = _rows_to_mapping(references, "relevance", "references")
        return _score(
            run,
            qrels,
            exclude=exclude,
            k_values=k_values,
            no_positive_policy=no_positive_policy,
            relevance_level=relevance_level,
        )
