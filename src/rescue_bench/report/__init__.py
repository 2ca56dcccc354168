"""Reports over ``rescue eval`` runs: the paper's tables, confidence intervals, paired tests,
per-label analyses, figures, a self-contained HTML page, and judge-human agreement.

Layers: :mod:`~rescue_bench.report.runs` reads run folders; :mod:`~rescue_bench.report.analysis` and
:mod:`~rescue_bench.report.agreement` compute (pure functions); :mod:`~rescue_bench.report.tables`
lays numbers out; :mod:`~rescue_bench.report.render` and :mod:`~rescue_bench.report.figures` write
Markdown / CSV / LaTeX / HTML and PNG; :mod:`~rescue_bench.report.build` ties them together and
:mod:`~rescue_bench.cli.report` is the command line.
"""

from rescue_bench.report.runs import ReportInputError, Run, load_run, load_runs

__all__ = ["ReportInputError", "Run", "load_run", "load_runs"]
