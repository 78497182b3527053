"""lmms-eval's spellings of the options its users already type (``--model_args``, ``--batch_size``,
``--output_path``, ...): each is read as the harness's own option, or refused in one line that names the
harness's way, before the parser sees it."""

from __future__ import annotations

from collections.abc import Sequence

from harness.errors import HarnessError

#: lmms-eval's option -> the harness's option of the same meaning.
ALIASES: dict[str, str] = {
    "--model_args": "--model-args",
    "--batch_size": "--batch-size",
    "--output_path": "--output",
    "--include_path": "--include-path",
    "--gen_kwargs": "--gen-kwargs",
}
#: lmms-eval's flags that ask for what the harness always does: accepted, and nothing else changes.
ALWAYS_ON = frozenset({"--log_samples"})
#: lmms-eval's options with no flag of their own here, and the harness's way to the same end.
ELSEWHERE: dict[str, str] = {
    "--device": "write --model-args device=DEVICE",
    "--num_fewshot": "the task's num_fewshot is read from its YAML (copy the task to change it)",
    "--use_cache": "the response store is on by default (--cache FILE names it, --no-cache turns it off)",
    "--cache_requests": "the response store is on by default (--cache FILE names it, --no-cache turns it off)",
    "--wandb_args": "runs are folders of JSON and JSONL (see --output); there is no Weights & Biases logging",
    "--log_samples_suffix": "samples are written as samples_<task>.jsonl",
    "--predict_only": "harness eval always scores; harness score re-scores a saved run",
}


def harness_spelling(argv: Sequence[str]) -> list[str]:
    """``argv`` with lmms-eval's spellings replaced by the harness's (``--x_y`` as ``--x-y`` when the harness
    has no other name for it); the arguments after a bare ``--`` are left as they are."""
    out: list[str] = []
    for index, arg in enumerate(argv):
        if arg == "--":
            return [*out, *argv[index:]]
        name, sep, value = arg.partition("=")
        if name in ELSEWHERE:
            raise HarnessError(f"{name} is lmms-eval's option; here {ELSEWHERE[name]}")
        if not name.startswith("--") or "_" not in name:
            out.append(arg)
            continue
        if name in ALWAYS_ON:
            continue
        out.append(ALIASES.get(name, name.replace("_", "-")) + sep + value)
    return out
