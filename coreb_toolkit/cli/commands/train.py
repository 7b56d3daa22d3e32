"""``coreb train reranker``: the CoREB-Reranker (LoRA yes/no fine-tune with TRL) from a built
CoREB dataset. The arguments are :class:`trainers.config.CorebRerankerConfig`, a TRL
``SFTConfig``, parsed by a ``trl.TrlParser`` (every ``TrainingArguments`` field as TRL spells
it; ``--config FILE.yaml`` as TRL reads it, its ``env:`` block included)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from coreb_toolkit.cli.parsing import Command, CommandParser

try:
    from trl import TrlParser

    from trainers.config import CorebRerankerConfig
except ImportError as err:
    raise ImportError(
        f"`coreb train` needs the training stack ({err.name or err}): "
        "pip install 'coreb-toolkit[train]'"
    ) from err

DESCRIPTION = """\
Train rerankers on CoREB data: `coreb train reranker` fine-tunes a generative yes/no reranker
with LoRA (the CoREB-Reranker, CoREB §4.3)."""

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


def train_reranker(config: CorebRerankerConfig) -> int:
    from trainers.coreb_reranker import train_coreb_reranker

    result = train_coreb_reranker(config)
    from accelerate import PartialState

    if not PartialState().is_main_process:
        return 0  # one summary per run, not one per process
    print(f"trained {result.global_step} steps on {result.train_examples} examples in "
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
)
