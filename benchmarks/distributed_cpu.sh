#!/usr/bin/env bash
# The same `coreb train reranker` command on the CPU under one process, two-process DDP
# (torchrun and `accelerate launch` with cpu_ddp.yaml) and two-process DeepSpeed ZeRO-2
# (accelerate launch with cpu_deepspeed_zero2.yaml), at the same global batch (1 x 2 and 2 x 1):
# prints each run's wall time and the max abs difference of its LoRA adapter from the
# one-process one, and, as the scale of a real difference, that of a run at half the batch.
# The tiny model of tests/trainers/tiny.py; seconds of training, most of the time is start-up.
#   bash benchmarks/distributed_cpu.sh [WORKDIR]      (from the repository root)
set -euo pipefail

REPO="$(cd "$(dirname "$0")/.." && pwd)"
WORK="${1:-$(mktemp -d /tmp/coreb_distributed_cpu.XXXXXX)}"
PY="${PYTHON:-$REPO/.venv/bin/python}"
BIN="$(dirname "$PY")"
CONFIGS="$REPO/trainers/configs/accelerate"
LIMIT_S="${LIMIT_S:-900}"   # per run
export PYTHONPATH="$REPO" OMP_NUM_THREADS=1 DS_ACCELERATOR=cpu TOKENIZERS_PARALLELISM=false
cd "$REPO"
mkdir -p "$WORK"

free_port() { "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

"$PY" - "$WORK" <<'EOF'
import sys
from pathlib import Path
from tests.trainers.tiny import write_tiny_dataset, write_tiny_model
work = Path(sys.argv[1])
if not (work / "model").exists():
    write_tiny_model(work / "model")
if not (work / "data" / "hub").exists():
    write_tiny_dataset(work / "data")
EOF

COMMON=(--model_name_or_path "$WORK/model"
        --train_sources "coreb:$WORK/data/hub@release_v2602"
        --eval_sources "$WORK/data/hub@release_v2603" --validation_fraction 0.5
        --max_steps 2 --learning_rate 1e-3 --warmup_steps 0 --max_length 256
        --lora_dropout 0 --train_sampling_strategy sequential --seed 0
        --logging_steps 1 --save_strategy no --report_to none --disable_tqdm true --plot false)
TRAIN=(-m coreb_toolkit.cli train reranker "${COMMON[@]}")

run() {  # NAME, then the command; its output in WORK/NAME.log
    local name="$1"; shift
    rm -rf "${WORK:?}/$name"
    local start=$SECONDS
    if ! timeout "$LIMIT_S" "$@" --output_dir "$WORK/$name" >"$WORK/$name.log" 2>&1; then
        echo "$name FAILED (exit or timeout); last lines of $WORK/$name.log:" >&2
        tail -30 "$WORK/$name.log" >&2
        exit 1
    fi
    echo "$name: $((SECONDS - start)) s wall" >&2
}

run one_process "$PY" "${TRAIN[@]}" --per_device_train_batch_size 2
run torchrun_ddp "$BIN/torchrun" --nproc_per_node 2 --master_port "$(free_port)" \
    "${TRAIN[@]}" --per_device_train_batch_size 1
run accelerate_ddp "$BIN/accelerate" launch --config_file "$CONFIGS/cpu_ddp.yaml" \
    --main_process_port "$(free_port)" "${TRAIN[@]}" --per_device_train_batch_size 1
run deepspeed_zero2 "$BIN/accelerate" launch --config_file "$CONFIGS/cpu_deepspeed_zero2.yaml" \
    --main_process_port "$(free_port)" "${TRAIN[@]}" --per_device_train_batch_size 1
run half_batch "$PY" "${TRAIN[@]}" --per_device_train_batch_size 1

"$PY" - "$WORK" <<'EOF'
import json
import sys
from pathlib import Path

from safetensors.torch import load_file

work = Path(sys.argv[1])
ref = load_file(str(work / "one_process" / "adapter_model.safetensors"))
moved = max(t.abs().max().item() for k, t in ref.items() if "lora_B" in k)
print(f"one_process: max |LoRA-B| after 2 steps {moved:.3e} (LoRA-B starts at 0)")
for name in ("torchrun_ddp", "accelerate_ddp", "deepspeed_zero2", "half_batch"):
    other = load_file(str(work / name / "adapter_model.safetensors"))
    assert other.keys() == ref.keys(), name
    diff = max((other[k].double() - ref[k].double()).abs().max().item() for k in ref)
    history = json.loads((work / name / "log_history.json").read_text())
    epoch = [row["epoch"] for row in history if "loss" in row][-1]
    print(f"{name}: max abs difference from one_process {diff:.3e}; epoch after 2 steps {epoch:.4f}")
EOF
