"""The public contract between the engine, ``harness score``, the audits and the leaderboard.

``results.json`` keeps lmms-eval's keys (``results`` with ``"metric,filter"`` values and
``"metric_stderr,filter"``, ``configs``, ``versions``, ``n-samples``, ``config``) and adds
``provenance`` and per-task ``counts``. Each line of ``samples_<task>.jsonl`` is a :class:`SampleRecord`.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    ValidationError,
    field_serializer,
    model_serializer,
)

from harness.disk import disk_problem, is_disk_error, write_atomic
from harness.errors import HarnessError
from harness.results.generation import RequestSettings
from harness.results.interval import Interval
from harness.results.jsonl import check_depth, jsonl_lines
from harness.results.metric_key import figures
from harness.results.sample_error import SampleErrorField
from harness.secrets import redact_args, redact_argv, redact_mapping

log = logging.getLogger(__name__)

# 2: typed run config, provenance (environment, model info, datasets, generation, request counts, rescoring)
# and turns; version-1 files hold the same keys untyped and are read by the same models.
# 3: every figure's 95% interval (``intervals``), lmms-eval's CLT and clustered standard errors and stability
# metrics in ``results``, the baseline comparison; older files read with no intervals (each says why).
SCHEMA_VERSION = 3
READABLE_VERSIONS = (1, 2, 3)


class _Record(BaseModel):
    """A typed part of a results file that keeps keys it does not name (backends and datasets add theirs)."""

    model_config = ConfigDict(extra="allow")


class Turn(BaseModel):
    """One follow-up turn of a multi-turn sample: the user prompt, and per sample its request and answer."""

    model_config = ConfigDict(extra="forbid")

    prompt: str
    request_keys: list[str] = Field(default_factory=list)
    responses: list[str] = Field(default_factory=list, description="One answer per sample; empty on error")
    error: SampleErrorField | None = None


class ScoredChoice(BaseModel):
    """One choice of a ``multiple_choice`` sample, scored teacher-forced as the assistant's answer."""

    model_config = ConfigDict(extra="forbid")

    continuation: str = Field(description="The scored text: target_delimiter + the choice")
    loglikelihood: float = Field(description="Sum of the log-probabilities of its tokens")
    tokens: int = Field(description="How many tokens were scored (the template's end-of-turn included)")
    is_greedy: bool = Field(description="Whether greedy decoding gives exactly these tokens")

    @property
    def mean_loss(self) -> float:
        """Mean token loss: the per-choice value lmms-eval's models return."""
        return -self.loglikelihood / self.tokens if self.tokens else 0.0


class SampleRecord(BaseModel):
    """One doc of one task: its prompt, all n responses, filtered answers and per-sample metrics."""

    model_config = ConfigDict(extra="forbid")

    task: str
    doc_id: int
    doc_hash: str
    doc: dict[str, Any] = Field(description="The doc with images replaced by their sha256")
    target: Any = None
    prompt: list[dict[str, Any]] = Field(default_factory=list, description="Chat messages, images by sha256")
    request_key: str | None = None
    seed: int | None = None
    responses: list[str] = Field(default_factory=list, description="All n responses, in sample order")
    filtered: dict[str, Any] = Field(default_factory=dict, description="Filter pipeline name -> its output")
    metrics: dict[str, Any] = Field(default_factory=dict, description='"metric,filter" -> per-sample value')
    response_metrics: dict[str, list[Any]] = Field(
        default_factory=dict,
        exclude_if=lambda value: not value,  # written only when there are several answers to score apart
        description='"metric,filter" -> one value per answer, each answer scored alone (a task answered k > 1 '
        "times: the stability metrics read these)",
    )
    unparsed: list[str] = Field(default_factory=list, description="Metric keys the task could not parse")
    turns: list[Turn] = Field(default_factory=list, description="Follow-up turns of a multi-turn task")
    choices: list[ScoredChoice] = Field(default_factory=list, description="multiple_choice tasks: each choice")
    error: SampleErrorField | None = Field(default=None, description="Why this sample has no responses or no metrics")
    text_replaced: bool = Field(
        default=False,
        exclude_if=lambda replaced: not replaced,  # written only when true: other samples keep their bytes
        description="An answer held characters UTF-8 cannot hold (a lone surrogate, invalid bytes); "
        "they are stored and shown as U+FFFD (harness.unencodable)",
    )


class TaskCounts(BaseModel):
    """How many docs a task ran, how many were scored, how many failed, and unparsed answers per metric."""

    samples: int
    scored: int
    errors: int
    unparsed: dict[str, int] = Field(default_factory=dict)


class RunConfig(_Record):
    """How the run was asked for (``harness eval``'s options), enough to repeat it."""

    model: str
    model_args: dict[str, str] = Field(default_factory=dict)
    batch_size: int = 1
    limit: int | float | None = None  # a fraction below 1: that share of each task's docs
    seed: int = 0
    tasks: list[str] = Field(default_factory=list)
    include_paths: list[str] = Field(default_factory=list)
    gen_overrides: dict[str, Any] = Field(default_factory=dict)
    repeats: int | None = None
    use_cache: bool = True
    refresh: bool = False
    lmms_model: str | None = Field(
        default=None, description="the lmms-eval model class the run reproduced (--lmms-model)"
    )
    applied_defaults: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="per task, each generation default taken from lmms-eval and its source"
    )
    baseline: str | None = Field(default=None, description="the run folder or samples file of --baseline")

    @field_serializer("model_args")
    def _no_secret_args(self, args: dict[str, str]) -> dict[str, str]:
        """A credential among the model arguments is written as the marker that says it was given."""
        return redact_args(args)


class ModelInfo(_Record):
    """What the backend says about its model (``Backend.info()``); backends add their own keys."""

    backend: str | None = None
    model: str | None = None
    model_type: str | None = None
    model_family: str | None = None
    fingerprint: str | None = None
    revision: str | None = None
    commit: str | None = None
    parameters: int | None = None
    smoke_test_model: bool = False

    @model_serializer(mode="wrap")
    def _no_secrets(self, handler: SerializerFunctionWrapHandler) -> Any:
        """A backend's own keys may hold a credential (an ``api_key``, a URL with a password): cleared."""
        return redact_mapping(handler(self))


class Environment(_Record):
    """The software and host a result was made with (``harness.provenance.environment``)."""

    harness_version: str | None = None
    git_revision: str | None = None
    packages: dict[str, str] = Field(default_factory=dict)
    python: str | None = None
    platform: str | None = None
    command: list[str] = Field(default_factory=list)

    @field_serializer("command")
    def _no_secret_words(self, argv: list[str]) -> list[str]:
        """The command line with each credential it was given (``--model-args api_key=...``) as the marker."""
        return redact_argv(argv)


class DatasetFingerprint(_Record):
    """Exactly which data a task read: a local folder (path, sha256) or a Hub repo (revision)."""

    kind: Literal["local", "hub"] | None = None
    path: str | None = None
    sha256: str | None = None
    repo: str | None = None
    revision: str | None = None
    split: str | None = None
    num_rows: int | None = None
    datasets_fingerprint: str | None = None


class RequestCounts(BaseModel):
    """How many requests a run made and where their answers came from (the store or the model);
    ``follow_up_*`` count the turns after the first of multi-turn tasks."""

    model_config = ConfigDict(extra="forbid")

    requests: int = 0
    unique_requests: int = 0
    cached: int = 0
    generated: int = 0
    generated_samples: int = 0
    follow_up_requests: int = 0
    follow_up_unique_requests: int = 0
    follow_up_cached: int = 0
    follow_up_generated: int = 0
    follow_up_generated_samples: int = 0
    scored: int = 0  # multiple_choice prompts scored by the model (not from the store)
    #: Requests whose answers held characters UTF-8 cannot hold, replaced by U+FFFD: their samples are marked
    #: ``text_replaced`` (kept in memory only; the answers themselves carry the replacement characters).
    replaced: set[str] = Field(default_factory=set, exclude=True)

    def add_follow_up(self, round_counts: RequestCounts) -> None:
        """Count one round of follow-up turns (its own first-turn counts) under ``follow_up_*``."""
        self.follow_up_requests += round_counts.requests
        self.follow_up_unique_requests += round_counts.unique_requests
        self.follow_up_cached += round_counts.cached
        self.follow_up_generated += round_counts.generated
        self.follow_up_generated_samples += round_counts.generated_samples
        self.replaced |= round_counts.replaced


class ScoringSeeds(BaseModel):
    """The seeds of the random generators task code can reach, set before every scoring pass as lmms-eval
    0.7.3 sets them before it evaluates (``simple_evaluate``: ``random_seed=0``, ``numpy_random_seed=1234``,
    ``torch_random_seed=1234``), so a scorer that draws (MMMU's parser guesses with ``random.choice``) gives
    the same figures on every pass."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    random: int = 0
    numpy: int = 1234
    torch: int = 1234


class SeedPolicy(BaseModel):
    """How every request's seed derives from the run's base seed, and the seeds its scoring ran under
    (recorded so a reader can repeat both; ``scoring`` is absent from runs scored before it was set)."""

    base_seed: int = 0
    per_request: str = "sha256(base_seed:request_key)[:8]"
    scoring: ScoringSeeds | None = None


class Rescoring(Environment):
    """``harness score``: where the samples came from, which files it wrote and where the originals are."""

    source: str
    files: list[str] = Field(default_factory=list)
    originals: str | None = None


class Provenance(Environment):
    """Where a run came from: software, model, data, decoding settings, seeds, timings, request counts."""

    model: ModelInfo = Field(default_factory=ModelInfo)
    datasets: dict[str, DatasetFingerprint] = Field(default_factory=dict)
    generation: dict[str, RequestSettings] = Field(default_factory=dict)
    seeds: SeedPolicy = Field(default_factory=SeedPolicy)
    started_at: str | None = None
    wall_time_s: float | None = None
    generation_time_s: float | None = None
    throughput_samples_per_s: float | None = None
    requests: RequestCounts = Field(default_factory=RequestCounts)
    rescored: Rescoring | None = None


class BaselineComparison(BaseModel):
    """One task against ``--baseline`` on the docs both scored: lmms-eval's paired t-test (current minus
    baseline, scores as the task gives them) and its power analysis for a 3-point difference at this n."""

    model_config = ConfigDict(extra="forbid")

    baseline: str = Field(description="the baseline's short name, as lmms-eval writes paired_baseline")
    source: str
    n: int = Field(description="docs scored on both sides")
    current_mean: float
    baseline_mean: float
    mean_diff: float | None
    se_diff: float | None
    ci_lower: float | None = Field(description="95% t interval of the mean difference")
    ci_upper: float | None
    t_stat: float | None = Field(description="null when infinite: every difference equal and non-zero")
    p_value: float | None
    power: dict[str, Any] | None = Field(description="harness.metrics.uncertainty.Power's fields")
    no_power: str | None = Field(default=None, description="why there is no power analysis")


class RunResults(BaseModel):
    """Everything a run reports; keys with dashes keep lmms-eval's spelling."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    schema_version: int = SCHEMA_VERSION
    results: dict[str, dict[str, Any]]
    groups: dict[str, dict[str, Any]] = Field(default_factory=dict)
    group_subtasks: dict[str, list[str]] = Field(default_factory=dict)
    configs: dict[str, dict[str, Any]]
    versions: dict[str, Any]
    n_samples: dict[str, dict[str, int]] = Field(alias="n-samples")
    higher_is_better: dict[str, dict[str, bool]] = Field(default_factory=dict)
    counts: dict[str, TaskCounts]
    reports: dict[str, dict[str, Any]] = Field(default_factory=dict, description="Per-task extra reports")
    intervals: dict[str, dict[str, Interval]] = Field(
        default_factory=dict,
        description='task or group -> "metric,filter" -> the figure\'s 95% interval (harness.engine.intervals); '
        "empty in files written before schema version 3",
    )
    baseline: dict[str, BaselineComparison] = Field(default_factory=dict, description="task -> --baseline's test")
    config: RunConfig
    provenance: Provenance

    def to_json(self) -> str:
        """``results.json`` as written: lmms-eval's dashed keys, indented."""
        return self.model_dump_json(by_alias=True, indent=2)


def parse_run(raw: Any) -> RunResults:
    """A ``results.json`` mapping of any readable version, as the current model. Version 1 wrote the
    same keys untyped (its counts of follow-up requests only when there were any): it validates as it
    is, and is upgraded to the current version (written so if rescored). Versions 1 and 2 recorded no
    intervals: each figure's says so."""
    if isinstance(raw, dict):  # anything else fails validation below, as not a results file
        version = raw.get("schema_version", 1)
        if version not in READABLE_VERSIONS:
            raise HarnessError(
                f"schema_version {version!r}; this harness reads version(s) {', '.join(map(str, READABLE_VERSIONS))}"
            )
        raw = {**raw, "schema_version": SCHEMA_VERSION}
        if version < 3:
            run = RunResults.model_validate(raw)
            why = f"the run was written before intervals were recorded (schema {version}); harness score adds them"
            run.intervals = {
                task: {figure.encoded: Interval.missing(why) for figure, _ in figures(values)}
                for task, values in {**run.results, **run.groups}.items()
            }
            return run
    return RunResults.model_validate(raw)


class RunWriteError(HarnessError):
    """A run folder's file could not be written for a full, over-quota or read-only disk; the files
    written before it are whole, and the message names the file and the space still needed."""

    def __init__(self, path: Path, cause: OSError, needed: int) -> None:
        super().__init__(disk_problem(path, cause, needed))
        self.path = path


def write_run(run_dir: Path, results: RunResults, samples: dict[str, list[SampleRecord]]) -> None:
    """Write ``samples_<task>.jsonl`` files, then ``results.json`` (each replaced atomically); a full disk
    is a :class:`RunWriteError` and leaves no partial file."""
    texts = {
        f"samples_{task}.jsonl": "".join(r.model_dump_json() + "\n" for r in records)
        for task, records in samples.items()
    }
    texts["results.json"] = results.to_json() + "\n"
    remaining = sum(len(t.encode()) for t in texts.values())
    path = run_dir
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
        for name, text in texts.items():
            path = run_dir / name
            write_atomic(path, text)
            remaining -= len(text.encode())
    except OSError as exc:
        if not is_disk_error(exc):
            raise
        raise RunWriteError(path, exc, remaining) from None


def read_run(run_dir: Path) -> RunResults:
    """A run's ``results.json``; a missing, truncated or malformed file fails in one line naming it."""
    path = Path(run_dir) / "results.json"
    if not path.is_file():
        raise HarnessError(f"{run_dir}: no results.json (is this a run folder?)")
    try:
        text = path.read_text(encoding="utf-8")
        check_depth(text, str(path))  # as every JSONL line: before the parser or a serializer recurses over it
        raw = json.loads(text)
    except (ValueError, OSError) as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise HarnessError(
            f"{path}: not valid JSON ({exc}); the file is truncated or corrupt: restore it (a "
            "rescored run keeps its first version under original/) or rerun harness eval"
        ) from None
    try:
        return parse_run(raw)
    except ValidationError as exc:
        raise HarnessError(f"{path}: not a harness results file ({_first_problem(exc)})") from None
    except HarnessError as exc:
        raise HarnessError(f"{path}: {exc}") from None


def read_samples(run_dir: Path, task: str) -> list[SampleRecord]:
    """A task's sample records. A last line cut short (a run killed while writing, a partial copy) is left
    out with a warning, so the other samples still count; any other unreadable line fails in one line,
    since it means the file was edited or damaged rather than cut."""
    path = Path(run_dir) / f"samples_{task}.jsonl"
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise HarnessError(f"{path}: missing; the run folder is incomplete (rerun harness eval)") from None
    except (OSError, ValueError) as exc:
        raise HarnessError(f"{path}: unreadable ({exc})") from None
    last = text.count("\n") + 1
    records = []
    for number, line in jsonl_lines(text, str(path)):
        check_depth(line, f"{path}: line {number}")
        try:
            records.append(SampleRecord.model_validate_json(line))
        except ValidationError as exc:
            if number == last and not text.endswith("\n"):
                log.warning("%s: line %d is cut (the file ends mid-record); that sample is left out", path, number)
                continue
            raise HarnessError(f"{path}: line {number}: not a sample record ({_first_problem(exc)})") from None
    return records


def _first_problem(exc: ValidationError) -> str:
    error = exc.errors()[0]
    where = ".".join(str(part) for part in error["loc"])
    return f"{where}: {error['msg']}" if where else error["msg"]
