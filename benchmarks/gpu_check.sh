#!/usr/bin/env bash
# The GPU checks of the vllm backend and of batched hf sampling, on one CUDA GPU with no Hub access, in
# under 10 minutes. Tiny random-weight models are built here from harness/models/tiny.py's recipes.
# With vLLM's CPU build in VLLM_PYTHON (as .ci/run builds .venv-vllm) checks 1 and 2 run on the CPU instead,
# on the head_dim-32 tiny models its attention takes (VLLM_CPU_KVCACHE_SPACE GiB of KV cache, default 1);
# tests/models/test_vllm_engine.py runs check 1 in CI.
#
#   1. vllm: against hf: greedy, token for token, and multiple_choice loglikelihoods (prompt logprobs
#      against teacher forcing, within 1e-3), on the tiny Qwen2-VL and LLaVA (float32 both sides).
#   2. vllm: harness throughput against a bare LLM.chat on the same requests (target >= 0.95).
#   3. batched hf: sampling throughput (benchmarks/hf_batched_sampling.py, when present).
#
# Environments: PYTHON (default .venv/bin/python) runs hf:, VLLM_PYTHON (default .venv-vllm/bin/python,
# built as .ci/run builds it, but with vllm's full dependencies: pip install '.[vllm]') runs vllm:.
# MODEL=/path/to/a/local/model also measures throughput on that model, for benchmarks/scale_plan.py:
#   bash benchmarks/gpu_check.sh | tee gpu_check.log; python benchmarks/scale_plan.py --gpu-check-log gpu_check.log
# Exits non-zero when a check fails; every measured figure is on a line starting RESULT.
set -uo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-.venv/bin/python}
VLLM_PYTHON=${VLLM_PYTHON:-.venv-vllm/bin/python}
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 PYTHONPATH="$PWD" VLLM_LOGGING_LEVEL=${VLLM_LOGGING_LEVEL:-WARNING}
export HARNESS_CACHE=${HARNESS_CACHE:-$PWD/.gpu-check-cache}
out=$(mktemp -d)
failed=0
step() {  # step NAME SECONDS COMMAND...: run with a time limit, report, remember a failure
  local name=$1 limit=$2
  shift 2
  local start=$SECONDS
  if timeout "$limit" "$@"; then
    echo "ok   $name ($((SECONDS - start)) s)"
  else
    echo "FAIL $name (exit $?, $((SECONDS - start)) s)"
    failed=1
  fi
}

if "$VLLM_PYTHON" -c 'import sys; from vllm.platforms import current_platform as p; sys.exit(not p.is_cpu())' \
     2>/dev/null; then
  archs="qwen2_vl_hd32 llava_hd32" cpu=1  # vLLM's CPU build: only checks 1 and 2, slower, so longer limits
  export VLLM_CPU_KVCACHE_SPACE=${VLLM_CPU_KVCACHE_SPACE:-1}
else
  archs="qwen2_vl llava" cpu=0
  "$PYTHON" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else "no CUDA GPU visible")' || exit 1
fi
limit() { echo $(($1 * (1 + 3 * cpu))); }  # seconds on a GPU, four times that on CPU
step "tiny models" "$(limit 60)" "$PYTHON" -c \
  "from harness.models.tiny import tiny_model_path as p; [print(p(a)) for a in '$archs'.split()]"
for arch in $archs; do
  step "hf answers $arch" "$(limit 60)" "$PYTHON" benchmarks/vllm_parity.py answers --backend hf --arch "$arch" --out "$out/hf_$arch.json"
  step "vllm answers $arch" "$(limit 100)" "$VLLM_PYTHON" benchmarks/vllm_parity.py answers --backend vllm --arch "$arch" \
    --out "$out/vllm_$arch.json"
  step "vllm = hf greedy and scores on $arch" 20 "$PYTHON" benchmarks/vllm_parity.py compare "$out/hf_$arch.json" "$out/vllm_$arch.json"
done
step "vllm throughput, tiny Qwen2-VL" "$(limit 110)" "$VLLM_PYTHON" benchmarks/vllm_parity.py throughput \
  --arch "${archs%% *}"
if [ -n "${MODEL:-}" ]; then
  step "vllm throughput, $MODEL" 240 "$VLLM_PYTHON" benchmarks/vllm_parity.py throughput --model "$MODEL" --prompts 128 --tokens 256
fi
if [ "$cpu" = 1 ]; then
  echo "skip hf batched sampling: a GPU check"
elif [ -f benchmarks/hf_batched_sampling.py ]; then
  step "hf batched sampling" 90 "$PYTHON" benchmarks/hf_batched_sampling.py
else
  echo "skip hf batched sampling: benchmarks/hf_batched_sampling.py is not in this checkout"
fi
rm -rf "$out"
exit $failed
