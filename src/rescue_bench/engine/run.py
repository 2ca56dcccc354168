"""The run driver of ``rescue eval``: evaluate in this process or in workers, then write the output.

Imports go one way: ``settings`` <- ``providers``/``channel`` <- ``judge``/``baseline_api`` <-
``inspect_tasks`` <- ``evaluate`` <- ``workers`` <- ``run``; ``outputs`` writes the folder.

Resuming: every model and judge call goes through inspect_ai's response cache (in ``RESCUE_CACHE_DIR``
when set), so running the same command again after Ctrl-C or ``kill -9`` repeats no finished call.
A stopped run writes no results (:class:`~rescue_bench.errors.RunInterrupted`), so a partial run is
never taken for a finished one. API keys are read from the environment by the providers and never
written anywhere.

Speed: the garbage collector runs less often (``rescue_bench.gcpolicy``); a run against a fast
endpoint is CPU-bound in inspect_ai's per-sample work, which ``--workers`` spreads over processes
(:mod:`rescue_bench.engine.workers`).
"""

from __future__ import annotations

from typing import Any

from rescue_bench.engine.outputs import write_outputs
from rescue_bench.engine.providers import use_cache_dir
from rescue_bench.engine.settings import EvalSettings, RunInterrupted, effective_workers
from rescue_bench.gcpolicy import fewer_gc_passes


def run_eval(settings: EvalSettings, *, display: str = "full") -> dict[str, Any]:
    """Run ``settings`` end to end and write the output folder; returns the summary.

    With ``settings.workers > 1`` the instances are split over that many worker processes; the output
    is the same as with one process. Raises :class:`rescue_bench.data.DataError` for bad data,
    :class:`~rescue_bench.errors.RunInterrupted` when stopped and
    :class:`~rescue_bench.engine.settings.WorkerFailed` when a worker process failed.
    """
    from rescue_bench.data.load import load_clips
    from rescue_bench.engine.video_mode import plan_video, write_missing

    with fewer_gc_passes():
        use_cache_dir()
        video = plan_video(settings)  # --mode video: model and clips checked before any call
        workers = effective_workers(settings)
        try:
            if workers > 1:
                from rescue_bench.engine.workers import run_workers

                clips = len(load_clips(settings.data, repair_mojibake=settings.repair_mojibake))  # bad data: one error, here
                evaluated = run_workers(settings, workers, display=display)
            else:
                from rescue_bench.engine.evaluate import evaluate

                clips, evaluated = evaluate(settings, display=display)
        except KeyboardInterrupt as exc:  # before or after inspect_ai's part: resumable all the same
            raise RunInterrupted() from exc
        write_missing(settings.out, video)
        return write_outputs(settings, evaluated, clips=clips, workers=workers, extra={"video": video.report()} if video else None)
