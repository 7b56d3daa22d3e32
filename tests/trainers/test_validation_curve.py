"""The learning curve of a run (held-out ROC AUC and log-loss every N steps), the cap on the
scored validation pairs and the yes/no balance of the examples."""

from __future__ import annotations

import json
import logging

from trainers.coreb_reranker_trainer import (
    VALIDATION_CURVE,
    build_training_data,
    train_coreb_reranker,
    validation_metrics,
    yes_no,
)


def test_the_curve_has_a_point_every_n_steps_from_the_untuned_model(make_config, tmp_path, caplog):
    config = make_config(tmp_path / "out", max_steps=4, validation_curve_steps=2,
                         validation_max_examples=5, save_steps=10)  # fmt: skip
    with caplog.at_level(logging.INFO, logger="trainers.coreb_reranker_trainer"):
        result = train_coreb_reranker(config)
    lines = (tmp_path / "out" / VALIDATION_CURVE).read_text().splitlines()
    points = [json.loads(line) for line in lines]
    assert [p["step"] for p in points] == [0, 2, 4]
    batch = config.per_device_train_batch_size
    assert [p["examples_seen"] for p in points] == [0, 2 * batch, 4 * batch]
    assert all(p["pairs"] == 5 for p in points)  # the cap: 5 of the held-out pairs
    # step 0 is the untuned model, the last the trained one: the same as the before/after
    # metrics the run writes (the same pairs, scored by the same code)
    metrics = json.loads((tmp_path / "out" / "validation_metrics.json").read_text())
    assert points[0]["log_loss"] == metrics["before"]["log_loss"]
    assert abs(points[-1]["log_loss"] - metrics["after"]["log_loss"]) < 1e-6
    assert result.after["pairs"] == 5
    report = json.loads((tmp_path / "out" / "data_report.json").read_text())
    assert report["validation_held_out_examples"] > 5
    assert 0 < report["train"]["yes_share"] < 1
    assert "yes/no of the training examples" in caplog.text


def test_the_validation_sample_is_seeded_and_a_subset(make_config, tmp_path):
    full = build_training_data(make_config(tmp_path / "a"))
    capped = build_training_data(make_config(tmp_path / "b", validation_max_examples=3))
    again = build_training_data(make_config(tmp_path / "c", validation_max_examples=3))
    assert len(capped.validation) == 3 and capped.validation == again.validation
    keys = [json.dumps(r, sort_keys=True) for r in full.validation]
    picked = [keys.index(json.dumps(r, sort_keys=True)) for r in capped.validation]
    assert picked == sorted(picked)  # in their original order
    assert capped.train == full.train


def test_yes_no_and_metrics_of_a_known_set():
    rows = [{"answer": a} for a in ("yes", "yes", "no")]
    assert yes_no(rows) == "2 yes / 1 no (66.7% yes)"
    assert yes_no([]) == "0 yes / 0 no (no example)"
    assert validation_metrics(rows, [0.9, 0.4, 0.6])["roc_auc"] == 0.5
