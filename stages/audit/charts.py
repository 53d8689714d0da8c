"""PNG charts for the audit report (matplotlib, headless)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from assay.stages.audit.stats import SCORES  # noqa: E402


def score_histograms(dist: dict[str, dict], out: Path) -> Path:
    fig, axes = plt.subplots(1, len(SCORES), figsize=(4 * len(SCORES), 3), sharey=True)
    edges = np.linspace(0, 1, 11)
    centers = (edges[:-1] + edges[1:]) / 2
    for ax, score in zip(axes, SCORES):
        for key, entry in dist.items():
            hist = entry.get(score, {}).get("histogram")
            if hist:
                ax.plot(centers, hist, marker="o", label=key)
        ax.set_title(score)
        ax.set_xlim(0, 1)
    axes[0].set_ylabel("passages")
    axes[-1].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out, dpi=90)
    plt.close(fig)
    return out


def verdict_bars(dist: dict[str, dict], out: Path) -> Path:
    fig, ax = plt.subplots(figsize=(6, 3))
    keys = list(dist)
    verdicts = ("include", "conflict", "drop")
    width = 0.8 / max(len(keys), 1)
    for i, key in enumerate(keys):
        counts = [dist[key]["verdicts"].get(v, 0) for v in verdicts]
        ax.bar(np.arange(3) + i * width, counts, width, label=key)
    ax.set_xticks(np.arange(3) + width * (len(keys) - 1) / 2, verdicts)
    ax.set_ylabel("passages")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out, dpi=90)
    plt.close(fig)
    return out


def calibration_heatmap(grid: list[dict], out: Path) -> Path:
    rels = sorted({g["relevance_min"] for g in grid})
    evids = sorted({g["evidence_min"] for g in grid})
    f1 = np.zeros((len(evids), len(rels)))
    for g in grid:
        f1[evids.index(g["evidence_min"]), rels.index(g["relevance_min"])] = g["f1"]
    fig, ax = plt.subplots(figsize=(6, 4))
    im = ax.imshow(f1, origin="lower", aspect="auto", extent=(rels[0], rels[-1], evids[0], evids[-1]), vmin=0, vmax=1)
    ax.set_xlabel("relevance_min")
    ax.set_ylabel("evidence_min")
    ax.set_title("F1 of keep vs labels")
    fig.colorbar(im)
    fig.tight_layout()
    fig.savefig(out, dpi=90)
    plt.close(fig)
    return out


def reliability_diagram(curves: dict[str, list[dict]], out: Path, title: str = "relevance") -> Path:
    """Predicted against observed rate per probability bin, one curve per judge (or repository); the diagonal is a
    perfectly calibrated judge, and each point's size its share of the pairs."""
    fig, ax = plt.subplots(figsize=(4.5, 4.5))
    ax.plot([0, 1], [0, 1], color="grey", linestyle="--", linewidth=1, label="calibrated")
    for name, bins in curves.items():
        if not bins:
            continue
        total = sum(b["n"] for b in bins)
        ax.plot([b["predicted"] for b in bins], [b["observed"] for b in bins], marker="o", label=name)
        ax.scatter([b["predicted"] for b in bins], [b["observed"] for b in bins], s=[400 * b["n"] / total for b in bins], alpha=0.3)
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_xlabel(f"predicted {title}")
    ax.set_ylabel("observed rate (labels)")
    ax.set_title(f"Reliability: {title}")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out, dpi=90)
    plt.close(fig)
    return out
