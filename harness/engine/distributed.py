"""Data-parallel runs on Ray: model replicas as actors, work in shards, the driver owning every write.

``harness eval --ray [ADDRESS] --workers N`` (and ``harness attack``) start N actors on a Ray cluster
(one machine or many), each holding a replica of the model built from the same spec. The driver
reads the response store, sends only the missing requests, in shards of ``--batch-size`` requests in
the run's order, and writes each shard's answers to the store as they arrive; replicas never touch
the store or the run folder. A shard whose actor dies (killed, out of memory, its node lost) is sent
again to another actor and a replacement actor is started, so nothing is lost; a driver that dies
leaves the store holding every shard answered so far, and the rerun generates only what is missing.

A request's answers depend only on the request (its key and seed) and on its batch, and a shard is a
batch of the single-process run (for a task's requests, which share their settings), so a run on Ray
returns what the same command returns without it, sample for sample.

``ray`` is imported only when a pool starts; without the ``ray`` extra that is one line naming it.
"""

from __future__ import annotations

import argparse
import os
import pickle
import socket
import tempfile
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache, partial
from pathlib import Path
from typing import Any, TypeVar

from harness.errors import HarnessError
from harness.extras import require
from harness.models.base import GENERATION_TYPES, SCORING_TYPES, Backend, GenerationRequest, create_backend
from harness.models.loglikelihood import LoglikelihoodRequest
from harness.results.schema import ScoredChoice
from harness.secrets import remember

Shard = TypeVar("Shard")
Result = TypeVar("Result")

#: Shards kept in flight per actor: one running, one queued, so an actor never waits for the driver.
IN_FLIGHT_PER_ACTOR = 2
#: Environment variables a replica needs to find and reach what the driver does (cache, data, Hub, API).
_FORWARDED_ENV = ("HARNESS_", "HF_", "TRANSFORMERS_", "OPENAI_")


@dataclass(frozen=True)
class RayOptions:
    """Where and how wide: the cluster's address (None: a new local cluster, or the one ``RAY_ADDRESS``
    names), the number of replicas, and the CPUs and GPUs each one reserves (GPUs: one each when the
    cluster has any, unless set)."""

    address: str | None = None
    workers: int = 1
    worker_cpus: float = 1.0
    worker_gpus: float | None = None
    #: Replacement actors a run may start for actors that died, before it gives up (the store keeps the rest).
    max_replacements: int = 8


def _ray() -> Any:
    return require("ray", "ray", "data-parallel runs (--ray)")


def connect(address: str | None) -> Any:
    """The ``ray`` module, connected to the cluster at ``address`` (already connected: kept as it is)."""
    ray = _ray()
    if not ray.is_initialized():
        env = {k: v for k, v in os.environ.items() if k.startswith(_FORWARDED_ENV)}
        try:
            ray.init(address=address or None, runtime_env={"env_vars": env}, log_to_driver=False)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise HarnessError(
                f"--ray {address or ''}: cannot reach a Ray cluster ({str(exc).splitlines()[0]}); "
                "start one with `ray start --head` or leave ADDRESS out for a local one"
            ) from None
    return ray


@cache
def _replica_class() -> Any:
    ray = _ray()

    class Replica:
        """One replica: what ``build`` returns (a backend, a white box), and shards of work run on it."""

        def __init__(self, build: Callable[[], Any]) -> None:
            self.error: str | None = None
            try:
                self.state = build()
            except HarnessError as exc:  # a bad spec or model: said once by the driver, not retried
                self.error = str(exc)

        def failure(self) -> str | None:
            return self.error

        def run(self, work: Callable[[Any, Any], Any], shard: Any) -> Any:
            if self.error is not None:
                raise HarnessError(self.error)
            return work(self.state, shard)

    return ray.remote(max_restarts=0, max_task_retries=0)(Replica)


class ReplicaPool:
    """``opts.workers`` Ray actors, each holding ``build()``; :meth:`map` runs shards on them as they free up,
    re-sending a shard whose actor died to another actor and starting a replacement."""

    def __init__(self, build: Callable[[], Any], opts: RayOptions) -> None:
        if opts.workers < 1:
            raise HarnessError(f"--workers must be at least 1, got {opts.workers}")
        self.ray = connect(opts.address)
        gpus = opts.worker_gpus
        if gpus is None:
            gpus = 1.0 if self.ray.cluster_resources().get("GPU", 0) >= 1 else 0.0
        self._actor_class = _replica_class().options(
            num_cpus=opts.worker_cpus, num_gpus=gpus, scheduling_strategy="SPREAD"
        )
        self._build = build
        self._replacements_left = opts.max_replacements
        self.actors = [self._actor_class.remote(build) for _ in range(opts.workers)]
        #: Shards sent again because their actor died.
        self.resent = 0
        self._check_started()

    def _check_started(self) -> None:
        """Wait for every replica to be built; a replica that cannot build its model fails the run in one line."""
        try:
            errors = self.ray.get([a.failure.remote() for a in self.actors])
        except self.ray.exceptions.RayActorError as exc:
            self.close()
            raise HarnessError(f"a Ray worker could not start: {str(exc).strip().splitlines()[-1]}") from None
        error = next((e for e in errors if e), None)
        if error is not None:
            self.close()
            raise HarnessError(error)

    def on_each(self, work: Callable[[Any, None], Result]) -> list[Result]:
        """``work`` on every replica (their identities, to check they agree)."""
        return list(self.ray.get([a.run.remote(work, None) for a in self.actors]))

    def map(self, work: Callable[[Any, Shard], Result], shards: list[Shard]) -> Iterator[tuple[int, Result]]:
        """(index, ``work(replica, shard)``) for every shard, in the order they finish."""
        ray = self.ray
        pending = deque(range(len(shards)))
        running: dict[Any, tuple[Any, int]] = {}
        while pending or running:
            for actor in list(self.actors):
                busy = sum(1 for a, _ in running.values() if a is actor)
                while pending and busy < IN_FLIGHT_PER_ACTOR:
                    index = pending.popleft()
                    running[actor.run.remote(work, shards[index])] = (actor, index)
                    busy += 1
            [ref], _ = ray.wait(list(running), num_returns=1)
            actor, index = running.pop(ref)
            try:
                value = ray.get(ref)
            except ray.exceptions.RayActorError:
                pending.appendleft(index)
                self.resent += 1
                self._replace(actor)
                continue
            yield index, value

    def _replace(self, dead: Any) -> None:
        if dead not in self.actors:
            return  # its other shards fail too; it was replaced on the first
        self.actors.remove(dead)
        if self._replacements_left == 0:
            if not self.actors:
                raise HarnessError(
                    "every Ray worker died and no more replacements are allowed; what was answered "
                    "is in the response store: rerun the same command to generate the rest"
                )
            return
        self._replacements_left -= 1
        self.actors.append(self._actor_class.remote(self._build))

    def close(self) -> None:
        """End the actors (the cluster stays up)."""
        for actor in self.actors:
            self.ray.kill(actor)
        self.actors = []


def _portable(out: Result | Exception) -> Result | Exception:
    """An answer the driver can receive: an exception that does not pickle becomes a RuntimeError saying it."""
    if not isinstance(out, Exception):
        return out
    try:
        pickle.dumps(out)
    except Exception:
        return RuntimeError(f"{type(out).__name__}: {out}")
    return out


def _answer_shard(backend: Backend, shard: tuple[list[GenerationRequest], int]) -> list[list[str] | Exception]:
    """A replica's answers to one shard, in the shard's order, batched as the backend prefers."""
    requests, batch_size = shard
    answers: dict[str, list[str] | Exception] = {}
    for batch in backend.preferred_batch(requests, batch_size):
        for req, out in zip(batch, backend.generate(batch), strict=True):
            answers[req.key] = _portable(out)
    return [answers[r.key] for r in requests]


def _score_shard(backend: Any, shard: list[LoglikelihoodRequest]) -> list[list[ScoredChoice] | Exception]:
    """A replica's continuation scores for one shard of multiple_choice requests, in order."""
    return [_portable(out) for out in backend.loglikelihood(shard)]


def _identity(backend: Backend, _: None) -> dict[str, Any]:
    return {
        "fingerprint": backend.fingerprint,
        "info": backend.info(),
        "family": backend.model_family,
        "smoke": backend.is_smoke_model,
        "supports": [t for t in GENERATION_TYPES | SCORING_TYPES if backend.supports(t)],
    }


class RayBackend(Backend):
    """A model answered by a pool of replicas on Ray, seen by the engine as one backend."""

    def __init__(self, spec: str, model_args: dict[str, str], opts: RayOptions) -> None:
        self.pool = ReplicaPool(partial(create_backend, spec, dict(model_args)), opts)
        identities = self.pool.on_each(_identity)
        if len({i["fingerprint"] for i in identities}) > 1:
            self.pool.close()
            raise HarnessError(
                f"the Ray workers loaded different models for {spec} (fingerprints "
                f"{', '.join(sorted({i['fingerprint'] for i in identities}))}): install the same "
                "weights and packages on every node"
            )
        first = identities[0]
        self._fingerprint, self._info = first["fingerprint"], {**first["info"], "ray_workers": opts.workers}
        self.model_family, self.is_smoke_model, self._supports = first["family"], first["smoke"], first["supports"]

    @property
    def fingerprint(self) -> str:
        """The replicas' common model fingerprint (checked equal on every worker)."""
        return str(self._fingerprint)

    def info(self) -> dict[str, Any]:
        """The first replica's provenance, plus how many replicas answered."""
        return dict(self._info)

    def supports(self, output_type: str) -> bool:
        """What the replicas' backend answers."""
        return output_type in self._supports

    def generate(self, requests: list[GenerationRequest]) -> list[list[str] | Exception]:
        """One batch, answered on one replica."""
        return [out for _, out in self.answer(requests, len(requests))]

    def answer(
        self, requests: list[GenerationRequest], batch_size: int
    ) -> Iterator[tuple[GenerationRequest, list[str] | Exception]]:
        """Shards of ``batch_size`` requests in order, spread over the replicas; answers as shards finish."""
        shards = [requests[i : i + batch_size] for i in range(0, len(requests), batch_size)]
        for index, outs in self.pool.map(_answer_shard, [(s, batch_size) for s in shards]):
            yield from zip(shards[index], outs, strict=True)

    def scores(
        self, requests: list[LoglikelihoodRequest], batch_size: int
    ) -> Iterator[tuple[LoglikelihoodRequest, list[ScoredChoice] | Exception]]:
        """Shards of ``batch_size`` multiple_choice requests spread over the replicas; scores as shards finish."""
        if not self.supports("multiple_choice"):
            raise HarnessError("the Ray workers' backend cannot score continuations (multiple_choice)")
        shards = [requests[i : i + batch_size] for i in range(0, len(requests), batch_size)]
        for index, outs in self.pool.map(_score_shard, shards):
            yield from zip(shards[index], outs, strict=True)

    def loglikelihood(self, requests: list[LoglikelihoodRequest]) -> list[list[ScoredChoice] | Exception]:
        """Each request's continuation scores, one request per shard spread over the replicas."""
        scored = {req.key: out for req, out in self.scores(requests, 1)}
        return [scored[r.key] for r in requests]

    def close(self) -> None:
        """End the replicas."""
        self.pool.close()


def add_ray_arguments(parser: argparse.ArgumentParser) -> None:
    """``--ray [ADDRESS]``, ``--workers`` and the per-worker resources, shared by the commands that run models."""
    group = parser.add_argument_group("data-parallel on Ray (extra: ray)")
    group.add_argument(
        "--ray",
        nargs="?",
        const="",
        default=None,
        metavar="ADDRESS",
        help="run model replicas as Ray actors: on the cluster at ADDRESS (e.g. auto or "
        "HOST:6379), else on a new local one",
    )
    group.add_argument("--workers", type=int, help="how many replicas (with --ray; default 1)")
    group.add_argument("--worker-cpus", type=float, default=1.0, help="CPUs each replica reserves (default 1)")
    group.add_argument(
        "--worker-gpus", type=float, help="GPUs each replica reserves (default: 1 when the cluster has GPUs, else 0)"
    )


def ray_options(
    ray: str | None, workers: int | None = None, worker_cpus: float = 1.0, worker_gpus: float | None = None
) -> RayOptions | None:
    """The Ray settings of ``add_ray_arguments``' flags (``ray``: None without ``--ray``, "" for a local
    cluster, else its address), or None for a single-process run; checked before any model loads."""
    if ray is None:
        if workers is not None:
            raise HarnessError("--workers needs --ray (data-parallel replicas run on a Ray cluster)")
        return None
    workers = 1 if workers is None else workers
    if workers < 1:
        raise HarnessError(f"--workers must be at least 1, got {workers}")
    if worker_cpus < 0 or (worker_gpus is not None and worker_gpus < 0):
        raise HarnessError("--worker-cpus and --worker-gpus must not be negative")
    _ray()
    if ray:
        _check_reachable(ray)
    return RayOptions(address=ray or None, workers=workers, worker_cpus=worker_cpus, worker_gpus=worker_gpus)


def _check_reachable(address: str) -> None:
    """A ``HOST:PORT`` (or ``ray://HOST:PORT``) address that nothing answers on fails at once, in one line,
    instead of after Ray's long reconnection timeout; ``auto`` is left to Ray."""
    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep or not port.isdigit():
        return
    try:
        socket.create_connection((host or "127.0.0.1", int(port)), timeout=5).close()
    except OSError as exc:
        raise HarnessError(
            f"--ray {address}: no Ray cluster answers there ({exc.strerror or exc}); start one "
            "with `ray start --head`, or leave ADDRESS out for a local one"
        ) from None


@contextmanager
def replica_pool(build: Callable[[], Any], opts: RayOptions | None) -> Iterator[ReplicaPool | None]:
    """A pool of ``build()`` replicas on Ray (ended on exit), or None for a single-process run."""
    if opts is None:
        yield None
        return
    pool = ReplicaPool(build, opts)
    try:
        yield pool
    finally:
        pool.close()


@contextmanager
def model_backend(spec: str, model_args: dict[str, str], opts: RayOptions | None) -> Iterator[Backend]:
    """The backend for ``spec``: loaded here, or with ``opts`` replicas on Ray (ended on exit)."""
    if opts is None:
        yield create_backend(spec, model_args)
        return
    remember(model_args)  # the replicas create the backend; what this process writes is cleared here too
    backend = RayBackend(spec, model_args, opts)
    try:
        yield backend
    finally:
        backend.close()


def _in_scratch_folder(
    work: Callable[[Any, Shard, Path], Result], replica: Any, shard: Shard
) -> tuple[Result, dict[str, bytes]]:
    """``work`` on a replica, writing into a scratch folder whose files go back to the driver with the result."""
    with tempfile.TemporaryDirectory(prefix="harness-shard-") as tmp:
        value = work(replica, shard, Path(tmp))
        files = {str(p.relative_to(tmp)): p.read_bytes() for p in Path(tmp).rglob("*") if p.is_file()}
    return value, files


def map_shards(
    work: Callable[[Any, Shard, Path], Result],
    shards: list[Shard],
    local: Any,
    folder: Path,
    pool: ReplicaPool | None = None,
) -> Iterator[Result]:
    """``work(replica, shard, folder)`` for every shard, in order: on ``local`` here, or on the replicas of
    ``pool`` (a shard whose actor died runs again on another), whose files written into their scratch folder
    are written into ``folder`` here. The hook through which a loop over independent items (``harness
    attack``'s batches) runs data-parallel without knowing about Ray."""
    if pool is None:
        yield from (work(local, shard, folder) for shard in shards)
        return
    done: dict[int, Result] = {}
    next_index = 0
    for index, (value, files) in pool.map(partial(_in_scratch_folder, work), shards):
        for name, data in files.items():
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_bytes(data)
        done[index] = value
        while next_index in done:
            yield done.pop(next_index)
            next_index += 1
