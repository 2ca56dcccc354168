"""The report's figures (paper Figs. 3-9 and per-label RPP accuracy) as PNG files.

Uses matplotlib's object API with the Agg canvas (no pyplot, no display, no global backend switch),
at the paper's text width (6.5 in) and 150 dpi. Each function takes numbers computed by
:mod:`rescue_bench.report.analysis` and writes one file; it returns the path.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib import colormaps
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from rescue_bench.report.analysis import LabelAccuracy, PositionAccuracy, PositionDistribution, TransitionMatrix, per_label_union

WIDTH = 6.5
DPI = 150
FONT = 8
BIN_LABELS = [f"{10 * i}-{10 * (i + 1)}%" for i in range(10)]


def _figure(height: float, ncols: int = 1, nrows: int = 1, **kwargs: Any) -> tuple[Figure, Any]:
    fig = Figure(figsize=(WIDTH, height), dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(nrows, ncols, squeeze=False, **kwargs)
    return fig, axes


def _style(ax: Any) -> None:
    ax.tick_params(labelsize=FONT)
    ax.xaxis.label.set_size(FONT + 1)
    ax.yaxis.label.set_size(FONT + 1)
    ax.title.set_size(FONT + 1)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)


def _save(fig: Figure, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="png", dpi=DPI, facecolor="white")
    return path


def _pretty(label: str) -> str:
    return label.replace("_", " ")


def transition_heatmap(matrix: TransitionMatrix, scenario: str, path: Path, *, n_clips: int) -> Path:
    """Fig. 3: row-normalised transition probabilities between consecutive relation patterns."""
    labels = [_pretty(x) for x in matrix.labels]
    probs = np.asarray(matrix.probabilities, dtype=float)
    total = int(np.asarray(matrix.counts).sum())
    k = len(labels)
    fig, axes = _figure(max(3.2, 0.42 * k + 1.6))
    ax = axes[0, 0]
    image = ax.imshow(probs, cmap="Blues", vmin=0.0, vmax=1.0, aspect="auto")
    ax.set_xticks(range(k), labels, rotation=35, ha="right")
    ax.set_yticks(range(k), labels)
    ax.set_xlabel("next relation pattern (therapist row t+1)")
    ax.set_ylabel("current relation pattern (therapist row t)")
    for i in range(k):
        for j in range(k):
            if np.asarray(matrix.counts)[i].sum() > 0:
                ax.text(j, i, f"{probs[i, j]:.2f}", ha="center", va="center", fontsize=FONT - 1,
                        color="white" if probs[i, j] > 0.55 else "black")
    ax.set_title(f"Transitions between consecutive relation patterns, {scenario} ({total} transitions, {n_clips} clips)")
    cbar = fig.colorbar(image, ax=ax, shrink=0.9)
    cbar.set_label("P(next | current), row-normalised", size=FONT)
    cbar.ax.tick_params(labelsize=FONT)
    ax.tick_params(labelsize=FONT)
    ax.xaxis.label.set_size(FONT + 1)
    ax.yaxis.label.set_size(FONT + 1)
    ax.title.set_size(FONT + 1)
    return _save(fig, path)


def position_accuracy_plot(series: Sequence[tuple[str, dict[str, PositionAccuracy]]], scenarios: Sequence[str], path: Path) -> Path:
    """Fig. 4: RPP top-1 accuracy per relative-position bin with standard-error bands, a line per run.

    ``series``: ``(run name, {scenario: analysis.position_accuracy(...)})``.
    """
    fig, axes = _figure(2.9, ncols=len(scenarios), sharey=True)
    x = np.arange(1, 11)
    colors = [f"C{i % 10}" for i in range(len(series))]
    for col, scenario in enumerate(scenarios):
        ax = axes[0, col]
        for (name, per), color in zip(series, colors):
            data = per.get(scenario)
            if not data:
                continue
            acc = np.array([np.nan if v is None else 100 * v for v in data.accuracy], dtype=float)
            se = np.array([np.nan if v is None else 100 * v for v in data.se], dtype=float)
            ax.plot(x, acc, marker="o", markersize=3, linewidth=1.2, color=color, label=name)
            ax.fill_between(x, acc - se, acc + se, color=color, alpha=0.18, linewidth=0)
        ax.set_xticks(x, [f"{10 * i}" if i % 2 == 0 else "" for i in x])
        ax.set_ylim(-2, 102)
        ax.set_title(scenario)
        ax.set_xlabel("position in clip (row / rows, %)")
        ax.grid(axis="y", alpha=0.3)
        _style(ax)
    axes[0, 0].set_ylabel("RPP top-1 accuracy (%)")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    if handles:
        fig.legend(handles, labels, loc="outside lower center", ncols=min(3, len(labels)), fontsize=FONT, frameon=False)
    fig.suptitle("RPP accuracy by relative dialogue position (bands: ±1 standard error)", fontsize=FONT + 2)
    return _save(fig, path)


def position_distribution_plot(dist: PositionDistribution, scenario: str, path: Path) -> Path:
    """Fig. 5: gold relation-pattern shares per relative-position bin (stacked bars)."""
    labels = dist.labels
    shares = np.asarray(dist.shares, dtype=float) * 100
    fig, axes = _figure(3.3)
    ax = axes[0, 0]
    bottom = np.zeros(shares.shape[0])
    cmap = "tab10" if len(labels) <= 10 else "tab20"
    colors = colormaps[cmap](np.linspace(0, 1, 10 if cmap == "tab10" else 20))
    x = np.arange(shares.shape[0])
    for j, label in enumerate(labels):
        ax.bar(x, shares[:, j], bottom=bottom, color=colors[j % len(colors)], label=_pretty(label), width=0.8)
        bottom += shares[:, j]
    ax.set_xticks(x, BIN_LABELS, rotation=30, ha="right", fontsize=FONT - 1)
    for xi, n in zip(x, dist.n):
        ax.text(xi, 101, f"n={n}", ha="center", va="bottom", fontsize=FONT - 2)
    ax.set_xlabel("relative position in the clip (row / rows); n = therapist rows per bin")
    ax.set_ylabel("share of gold patterns (%)")
    ax.set_ylim(0, 108)
    ax.set_title(f"Gold relation patterns by relative position, {scenario}", pad=12)
    fig.legend(loc="outside right upper", fontsize=FONT - 1, frameon=False)
    _style(ax)
    return _save(fig, path)


def distribution_plot(per_scenario: dict[str, dict[str, int]], title: str, xlabel: str, path: Path, *, sort: bool = False) -> Path:
    """Figs. 6-9: label counts per scenario, one horizontal bar panel per scenario."""
    scenarios = [s for s, d in per_scenario.items() if d]
    if not scenarios:
        scenarios = list(per_scenario)
    height = max(2.4, 0.2 * max((len(per_scenario[s]) for s in scenarios), default=4) + 1.2)
    fig, axes = _figure(height, ncols=len(scenarios))
    for col, scenario in enumerate(scenarios):
        ax = axes[0, col]
        items = list(per_scenario[scenario].items())
        if sort:
            items.sort(key=lambda kv: -kv[1])
        labels = [_pretty(k) for k, _ in items]
        values = np.array([v for _, v in items], dtype=float)
        total = values.sum()
        y = np.arange(len(labels))
        ax.barh(y, values, color=f"C{col}")
        ax.set_yticks(y, labels)
        ax.invert_yaxis()
        for yi, v in zip(y, values):
            if total > 0:
                ax.text(v, yi, f" {int(v)} ({100 * v / total:.1f}%)", va="center", fontsize=FONT - 1)
        ax.set_xlim(0, max(1.0, values.max() * 1.35 if len(values) else 1.0))
        ax.set_xlabel(xlabel)
        ax.set_title(f"{scenario} (n={int(total)})")
        _style(ax)
    fig.suptitle(title, fontsize=FONT + 2)
    return _save(fig, path)


def per_label_accuracy_plot(
    per_run: Sequence[tuple[str, dict[str, LabelAccuracy]]],
    scenario: str,
    path: Path,
    *,
    paper: dict[str, float] | None = None,
) -> Path:
    """Grouped bars: RPP top-1 accuracy per gold label, a bar per run (paper's average as a marker)."""
    labels, n = per_label_union(per_run)
    fig, axes = _figure(3.2)
    ax = axes[0, 0]
    k = max(1, len(per_run))
    width = 0.8 / k
    x = np.arange(len(labels))
    for i, (name, per) in enumerate(per_run):
        values = [100 * ((e.accuracy if (e := per.get(lab)) else None) or 0.0) for lab in labels]
        ax.bar(x - 0.4 + width * (i + 0.5), values, width=width, label=name, color=f"C{i % 10}")
    if paper:
        px = [i for i, lab in enumerate(labels) if lab in paper]
        if px:
            ax.scatter(px, [100 * paper[labels[i]] for i in px], marker="D", color="black", s=14, zorder=3,
                       label="paper: average over models")
    ax.set_xticks(x, [f"{_pretty(lab)}\n(n={n[lab]})" for lab in labels], rotation=25, ha="right", fontsize=FONT - 1)
    ax.set_ylabel("top-1 accuracy (%)")
    ax.set_xlabel("gold relation pattern")
    ax.set_ylim(0, 105)
    ax.set_title(f"RPP accuracy per gold relation pattern, {scenario}")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=FONT - 1, frameon=False, loc="upper right")
    _style(ax)
    return _save(fig, path)
