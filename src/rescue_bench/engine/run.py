"""The run driver of ``rescue eval``: plan the run, evaluate the plan, then write the output.

The run is planned once (:func:`~rescue_bench.engine.plan.plan_run`: data, instances, video check,
workers), evaluated by the process pool (:func:`~rescue_bench.engine.pool.evaluate_plan`: in this
process or in workers, the same way), and written (:mod:`~rescue_bench.engine.outputs`). The
engine's modules import one way, in the order of the ``engine-one-way`` contract in ``pyproject.toml``.

The run lifecycle every run command shares (:mod:`rescue_bench.engine.runfolder`): ``--out``
holding another run is refused unless ``--overwrite``; the same command resumes there, and the logs
of its earlier, unfinished attempts are removed once it has run, so ``inspect view`` shows this
run's logs only. A run with instances that got no answer is written as failed and raises
:class:`~rescue_bench.engine.runfolder.RunFailed`.

Resuming: every model and judge call goes through inspect_ai's response cache (in ``RESCUE_CACHE_DIR``
when set), so running the same command again after Ctrl-C or ``kill -9`` repeats no finished call.
A stopped run writes no results (:class:`~rescue_bench.errors.RunInterrupted`), so a partial run is
never taken for a finished one. API keys are read from the environment by the providers and never
written anywhere.

Speed: the garbage collector runs less often (``rescue_bench.gcpolicy``); a run against a fast
endpoint is CPU-bound in inspect_ai's per-sample work, which workers spread over processes in static
shards (:mod:`rescue_bench.engine.pool`): ``--workers auto``, the default, is one per CPU when
``--max-connections`` is given.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from rescue_bench.engine.dryrun import DryRun, eval_estimate
from rescue_bench.engine.outputs import write_outputs
from rescue_bench.engine.providers import use_cache_dir
from rescue_bench.engine.runfolder import start_run
from rescue_bench.engine.settings import EvalSettings, RunInterrupted, WorkerPlan
from rescue_bench.gcpolicy import fewer_gc_passes
from rescue_bench.runinfo import EvalRunInfo, RunResult, WorkersChoice
from rescue_bench.summary import EvalSummary, LeftOutRecord

if TYPE_CHECKING:  # pragma: no cover
    from rescue_bench.engine.plan import RunPlan


def drop_stale_logs(out: Path, kept: list[str]) -> None:
    """Remove the inspect logs of earlier, unfinished attempts of this run: ``inspect view`` then shows
    one log per task (per worker), this run's. Their calls are in the response cache, so nothing is lost."""
    keep = {Path(p).resolve() for p in kept}
    for log in (out / "logs").glob("*"):
        if log.is_file() and log.suffix in (".eval", ".json") and log.resolve() not in keep:
            log.unlink(missing_ok=True)


def estimate_eval(settings: EvalSettings) -> DryRun:
    """``rescue eval --dry-run``: the run planned and its calls estimated; nothing sent, nothing written."""
    from rescue_bench.engine.plan import plan_run

    with fewer_gc_passes():
        return eval_estimate(plan_run(settings))


def run_eval(settings: EvalSettings, *, display: str = "full", overwrite: bool = False) -> RunResult[EvalRunInfo, EvalSummary]:
    """Run ``settings`` end to end and write the output folder; returns the summary and the ``run.json`` written.

    With more than one worker (``--workers N``, or ``auto``) the instances are spread over worker
    processes in static shards; the output is the same as with one process. Raises
    :class:`rescue_bench.data.DataError` for bad data, :class:`~rescue_bench.errors.RunInterrupted`
    when stopped and :class:`~rescue_bench.engine.settings.WorkerFailed` when a worker process failed.
    """
    from rescue_bench.engine.plan import plan_run
    from rescue_bench.engine.pool import evaluate_plan
    from rescue_bench.engine.video_mode import write_missing

    with fewer_gc_passes():
        use_cache_dir()
        # the data, the instances and the video mode's clips are checked before the folder is claimed
        plan = plan_run(settings)
        with start_run(settings.out, "eval", settings, overwrite=overwrite, estimate=eval_estimate(plan).record()) as start:
            try:
                evaluated = evaluate_plan(plan, display=display)
            except KeyboardInterrupt as exc:  # before or after inspect_ai's part: resumable all the same
                raise RunInterrupted() from exc
            write_missing(settings.out, plan.video)
            drop_stale_logs(Path(settings.out), evaluated.logs)
            result = write_outputs(
                start, evaluated, clips=plan.clips, workers=plan.workers.workers, choice=workers_choice(plan.workers),
                video=plan.video.report() if plan.video else None,
                left_out=left_out_records(plan) if settings.lenient else None,
            )
            return RunResult(result.summary, result.info, plan.let_through)


def left_out_records(plan: RunPlan) -> dict[str, list[LeftOutRecord]]:
    """Per task of the run, the instances ``--lenient`` left out, as ``run.json`` and ``summary.json`` name them."""
    return {task: [LeftOutRecord.model_validate(item.to_json()) for item in items] for task, items in plan.left_out.items()}


def workers_choice(plan: WorkerPlan) -> WorkersChoice:
    """What ``run.json`` records of the choice of workers (and ``rescue eval`` prints)."""
    return WorkersChoice(
        requested=plan.requested, cpus=plan.cpus, max_connections=plan.max_connections, workers=plan.workers, reason=plan.reason
    )
