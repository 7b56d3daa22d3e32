"""``coreb train reranker``: the CoREB-Reranker (LoRA yes/no fine-tune with TRL) from a built
CoREB dataset. The arguments are :class:`trainers.coreb_reranker_config.CorebRerankerConfig`, a TRL
``SFTConfig``, parsed by a ``trl.TrlParser`` (every ``TrainingArguments`` field as TRL spells
it; ``--config FILE.yaml`` as TRL reads it, its ``env:`` block included).

``coreb train synh-rank``: a quality-aware reranker trained on hierarchical lists (SynH-Rank,
or its SRCL / InfoNCE baselines); :class:`trainers.synh_rank_config.SynhRankConfig`, a
sentence-transformers ``CrossEncoderTrainingArguments``, through the same parser."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from coreb_toolkit.cli.parsing import Command, CommandParser

try:
    from trl import TrlParser

    from trainers.coreb_reranker_config import CorebRerankerConfig
    from trainers.synh_rank_config import SynhRankConfig
except ImportError as err:
    raise ImportError(
        f"`coreb train` needs the training stack ({err.name or err}): "
        "pip install 'coreb-toolkit[train]'"
    ) from err

DESCRIPTION = """\
Train rerankers: `coreb train reranker` fine-tunes a generative yes/no reranker with LoRA on
CoREB data (the CoREB-Reranker, CoREB §4.3); `coreb train synh-rank` trains a quality-aware
reranker on hierarchical lists (SynH-Rank §4.2, with the SRCL and InfoNCE baselines)."""

RERANKER_DESCRIPTION = """\
Fine-tune a generative yes/no reranker (Qwen3-Reranker format) with LoRA through TRL's
SFTTrainer: examples from --train_sources (each positive twice, one easy and one hard negative
per query, the main task's instruction; a problem-level validation split), refused when they
share a problem or a near-duplicate statement with any --eval_sources; loss on the answer token
only; the paper's hyper-parameters as defaults. OUTPUT_DIR gets the adapter, the manifest that
`coreb evaluate --reranker OUTPUT_DIR` loads it by, the config, the data and disjointness
reports, the validation scores before and after, and the loss curves.

Every SFTConfig / TrainingArguments option applies, spelled as TRL spells it (--output_dir,
--max_steps, --resume_from_checkpoint, --save_steps, --seed, ...). Scale out with the same
arguments under accelerate:
  accelerate launch --config_file trainers/configs/accelerate/ddp.yaml \\
      -m coreb_toolkit.cli train reranker --config cfg.yaml

examples:
  coreb train reranker --config trainers/configs/coreb_reranker_qwen3_4b.yaml
  coreb train reranker --model_name_or_path smollm2 --train_sources coreb:coreb@release_v2602 \\
      --eval_sources coreb@release_v2603 --output_dir ckpt --max_steps 200 --max_length 1024
  coreb evaluate --dataset coreb --model bm25 --reranker ckpt --out results"""


class TrlCommandParser(CommandParser, TrlParser):
    """The command's parser: a ``TrlParser`` with the CLI's positional, help and config-file
    habits. A YAML file's ``env:`` mapping sets environment variables, as
    ``TrlParser.parse_args_and_config`` does; its other keys are the fields. Help shows the
    flags as TRL spells them (``--output_dir``; ``--output-dir`` parses too)."""

    hidden_separator = "-"

    def read_config(self, path: Path) -> dict[str, Any]:
        values = super().read_config(path)
        env = values.pop("env", {})
        if not isinstance(env, dict):
            self.error(f"--config {path}: env must be a mapping of NAME: value, got {env!r}")
        for key, value in env.items():
            os.environ[str(key)] = str(value)
        return values


def steps_trained(result: Any) -> str:
    """``N steps`` a run trained (counted as they ended), and from which step a resume went
    to which."""
    if result.start_step:
        return (f"{result.steps_trained} steps (resumed at step {result.start_step}, now at "
                f"step {result.global_step})")  # fmt: skip
    return f"{result.steps_trained} steps"


def train_reranker(config: CorebRerankerConfig) -> int:
    from trainers.coreb_reranker_trainer import train_coreb_reranker

    result = train_coreb_reranker(config)
    from accelerate import PartialState

    if not PartialState().is_main_process:
        return 0  # one summary per run, not one per process
    print(f"trained {steps_trained(result)} on {result.train_examples} examples in "
          f"{result.train_runtime_s:.0f} s; adapter and reports in "
          f"{result.output_dir}")  # fmt: skip
    if result.after:
        print("validation (held-out problems), before -> after:")
        for key in ("accuracy", "roc_auc", "log_loss"):
            if key in result.after:
                print(f"  {key}: {result.before.get(key, float('nan')):.4f} -> "
                      f"{result.after[key]:.4f}")  # fmt: skip
        print(json.dumps({"before": result.before, "after": result.after}, sort_keys=True))
    print(f"evaluate it: coreb evaluate --dataset DATASET --model bm25 --reranker "
          f"{result.output_dir} --out results")  # fmt: skip
    return 0


SYNH_RANK_DESCRIPTION = """\
Teach a reranker to prefer fast, memory-efficient or maintainable code (SynH-Rank §4.2). Each
training list is one query (a quality instruction such as "Retrieve code that is fast" and a
task statement) with its candidate codes labelled 2 (relevant and high quality), 1 (relevant,
low quality) and 0 (irrelevant); --train_lists names folders of such lists, as the SynH-Rank
data steps write them (trainers/quality_data). The reranker learns to score 2 above 1 above 0:

  --loss lambda   SynH-Rank: the LambdaRank loss of eq. (5)-(6) over every ordered pair
                  (averaged over the batch's pairs where the paper sums)
  --loss srcl     the SRCL baseline: InfoNCE, any relevant code against 5 irrelevant ones
  --loss infonce  the loss ablation: InfoNCE, the label-2 code against the list's others

The base is a cross-encoder (bge-reranker-v2-m3, jina-reranker-v2; trained with
sentence-transformers' CrossEncoderTrainer) or a generative yes/no reranker (Qwen3-Reranker:
score = logit(yes) - logit(no) of the prompt `coreb evaluate` serves it with); full
fine-tuning as in the paper, or --finetuning lora for a generative one. Defaults are the
paper's (§5.4): batch 16 lists, 1 epoch, lr 6e-6, seed 42. A seeded share of the tasks is held
out: their lists are scored before and after training (nDCG, ordered pairs in order, per
dimension). OUTPUT_DIR gets the model as `coreb evaluate --reranker OUTPUT_DIR` loads it, the
config, the data report, the validation metrics and the loss curves; every checkpoint too.

Every CrossEncoderTrainingArguments / TrainingArguments option applies, spelled as the
libraries spell it (--output_dir, --max_steps, --resume_from_checkpoint, --save_steps, ...);
under accelerate as `coreb train reranker`:
  accelerate launch --config_file trainers/configs/accelerate/single_gpu.yaml \\
      -m coreb_toolkit.cli train synh-rank --config cfg.yaml

examples:
  coreb train synh-rank --config trainers/configs/synh_rank_qwen3_reranker_0_6b.yaml
  coreb train synh-rank --config trainers/configs/synh_rank_bge_reranker_v2_m3.yaml --loss srcl \\
      --output_dir bge-srcl
  coreb train synh-rank --model_name_or_path minilm --train_lists lists/ --output_dir ckpt \\
      --max_steps 50
  coreb qualcode evaluate QUALCODE_DIR --reranker ckpt --out results"""


def train_synh_rank(config: SynhRankConfig) -> int:
    from trainers.synh_rank_trainer import train_synh_rank as train

    result = train(config)
    from accelerate import PartialState

    if not PartialState().is_main_process:
        return 0  # one summary per run, not one per process
    print(f"trained {steps_trained(result)} on {result.train_examples} {config.loss} rows in "
          f"{result.train_runtime_s:.0f} s; model and reports in {result.output_dir}")  # fmt: skip
    if result.after:
        print("validation (held-out tasks' lists), before -> after:")
        for group, after in result.after.items():
            before = result.before.get(group, {})
            line = ", ".join(
                f"{key} {before.get(key, float('nan')):.4f} -> {after[key]:.4f}"
                for key in ("ndcg", "pair_accuracy")
            )
            print(f"  {group} ({after['lists']} lists): {line}")
        print(json.dumps({"before": result.before, "after": result.after}, sort_keys=True))
    print(f"evaluate it: coreb qualcode evaluate QUALCODE_DIR --reranker {result.output_dir} "
          "--out results")  # fmt: skip
    return 0


COMMANDS = (
    Command(
        name="train reranker",
        help="fine-tune a yes/no reranker with LoRA on CoREB data (the CoREB-Reranker)",
        description=RERANKER_DESCRIPTION,
        arguments=(CorebRerankerConfig,),
        run=train_reranker,
        mode="`coreb train reranker`",
        parser_class=TrlCommandParser,
    ),
    Command(
        name="train synh-rank",
        help="train a quality-aware reranker on hierarchical lists (SynH-Rank; SRCL, InfoNCE)",
        description=SYNH_RANK_DESCRIPTION,
        arguments=(SynhRankConfig,),
        run=train_synh_rank,
        mode="`coreb train synh-rank`",
        parser_class=TrlCommandParser,
    ),
)
