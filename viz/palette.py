"""Colours and names for node statuses and token origins, shared by every view.

Okabe-Ito colours: distinguishable with the common colour-vision deficiencies.
"""

from __future__ import annotations

from decoding.run.schema import (
    ACCEPTED,
    BONUS,
    DRAFT,
    REJECTED,
    RESIDUAL,
    RESIDUAL_HIT,
    ROOT,
    UNREACHED,
)

STATUS_COLORS = {
    ROOT: "#555555",
    ACCEPTED: "#009E73",
    REJECTED: "#D55E00",
    UNREACHED: "#9A9A9A",
}
STATUS_NAMES = {
    ROOT: "root (last emitted token)",
    ACCEPTED: "accepted",
    REJECTED: "rejected",
    UNREACHED: "not reached",
}
ORIGIN_COLORS = {
    DRAFT: "#009E73",
    RESIDUAL: "#E69F00",
    BONUS: "#0072B2",
    RESIDUAL_HIT: "#CC79A7",
}
ORIGIN_NAMES = {
    DRAFT: "accepted draft",
    RESIDUAL: "residual sample",
    BONUS: "bonus token",
    RESIDUAL_HIT: "residual hit a draft",
}
P_COLOR = "#0072B2"  # target p
Q_COLOR = "#E69F00"  # draft q
RESIDUAL_COLOR = "#CC79A7"
EDGE_COLOR = "#B0B0B0"
PATH_WIDTH = 5
EDGE_WIDTH = 1.5
