"""Drawing the Positions & geometry view (pages/8_Positions.py): its Shuffle, its score grids and curves, its maps."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import streamlit as st
import torch
from torch import Tensor

from attn_core import MiniLM
from attn_core.geometry import (
    ByDistance,
    OrderCheck,
    PairRotation,
    QueryKeyMap,
    WordPaths,
    rotation_similarity,
    shuffled_order,
    word_paths,
)
from attn_core.real_model import WordAcrossContexts
from attn_ui import callbacks, slide
from attn_ui.charts import CHAR_WIDTH, LINE_HEIGHT, LINE_WIDTH, lines, query_key_scatter, rotation_circle, word_path_map
from attn_ui.draw import draw
from attn_ui.model import RUNS_KEPT
from attn_ui.steps import METRIC_WIDTH, MIN_CHART, Row, block, chart_block, feature_labels, labelled_lines_block, matrix_step, row

MAP_SIZE = 480  # pixels: a map's width on a page, its square plot and y axis
ROTATION_SIZE = 400  # pixels: the rotation's circle, the same way
# Pixels a map's chart adds to its square plot: across, the y axis and its title; up, a title with a line under it, a
# legend above the plot and the x axis (measured in Chromium). The word paths' legend is a line per sentence under it.
# On a slide, a map's legend goes right of the plot (``aside_legend``), where a slide has room to spare.
MAP_FRAME_WIDTH, MAP_FRAME_HEIGHT = 60, 144
LEGEND_LINE = 20
LEGEND_SWATCH = 30  # pixels of a legend entry besides its text: its offset from the plot, its symbol and their gap
ASIDE_LEGEND_WIDTH, TOP_LEGEND_HEIGHT = 90, 30
FAR = 64  # positions: how far the rotated-vector curve goes
TURN_SIZES = (8, 128)  # head sizes whose rotated-vector curves are drawn with the view's own: few pairs and many


@callbacks.needing("shuffle")
def shuffle(t: int) -> None:
    """The Shuffle button: the next seed whose order differs from the one on screen (a link keeps the seed)."""
    current = shuffled_order(t, st.session_state["shuffle"])
    seed = st.session_state["shuffle"] + 1
    while t > 1 and torch.equal(shuffled_order(t, seed), current):
        seed += 1
    st.session_state["shuffle"] = seed


def order_blocks(check: OrderCheck, tokens: list[str], matrix: str) -> None:
    """The weights (``matrix`` "weights") or the context vectors ("context") of the sentence and of its shuffle, side
    by side, each row and column labelled with its token."""
    moved = [tokens[i] for i in check.order.tolist()]
    with row(2) as charts:  # on a slide, the shuffled sentence and the check above
        for steps, labels, where in ((check.original, tokens, "original order"), (check.shuffled, moved, "shuffled")):
            if matrix == "weights":
                formula = r"A = \operatorname{softmax}(Q K^\top / \sqrt{d_k})"
                matrix_step(
                    charts,
                    f"Weights, {where}",
                    formula,
                    steps.weights,
                    labels,
                    labels,
                    kind="weights",
                    row_title="query",
                    col_title="key",
                )
            else:
                features = feature_labels(steps.context.shape[-1])
                matrix_step(charts, f"Context vectors, {where}", "A V", steps.context, labels, features, row_title="token")


def check_line(checks: dict[bool, OrderCheck]) -> str:
    """The check, without and with positions, in a line of text (a slide's)."""
    without, with_positions = (f"{checks[positions].difference:.2e}" for positions in (False, True))
    return f"After un-shuffling: **{without}** without positions (A(P X) = P A(X)), **{with_positions}** with them."


def check_metrics(checks: dict[bool, OrderCheck]) -> None:
    """The check, without and with positions, as metrics."""
    with st.container(horizontal=True, gap="large"):
        for positions, name in ((False, "without positions"), (True, "with sinusoidal positions")):
            st.metric(
                f"Largest difference after un-shuffling, {name}",
                f"{checks[positions].difference:.2e}",
                help="max |A(P X) − P A(X)| over the context vectors: the shuffle's outputs put back in the original order.",
                width="content",
            )


def distance_charts(distance: dict[str, ByDistance], d_k: int) -> None:
    """The score against the distance m − n under each kind of position (the sinusoidal one's spread along each
    diagonal as its lowest and highest), and how far RoPE turns a vector from itself with distance."""
    rope, added = distance["rope"], distance["sinusoidal"]
    measured = {
        "RoPE": rope.mean.numpy(),
        "sinusoidal, mean": added.mean.numpy(),
        "sinusoidal, lowest": added.low.numpy(),
        "sinusoidal, highest": added.high.numpy(),
    }
    far = torch.arange(FAR + 1)
    with row(2, lines_above=0, lines_below=3) as charts:  # the caption under the charts
        chart_block(
            charts,
            LINE_WIDTH,
            LINE_HEIGHT,
            lines,
            rope.distances.numpy(),
            measured,
            x_title="distance m − n",
            y_title="score",
            title="Score of the pair against its distance",
        )
        chart_block(
            charts,
            LINE_WIDTH,
            LINE_HEIGHT,
            lines,
            far.numpy(),
            {f"d_k = {size}": rotation_similarity(size, far).numpy() for size in sorted({d_k, *TURN_SIZES})},
            x_title="distance δ",
            y_title="mean cosine",
            title="cos(q, R_δ q): a vector turned by δ positions",
            points=False,
        )


def rotation_block(rotation: PairRotation, position: int) -> None:
    """One pair of features turned at positions 0 .. ``position``."""
    turn = 2 * math.pi / rotation.theta
    title = f"Pair {rotation.pair}: θ = {rotation.theta:.3g} rad per position"
    with row(1, lines_above=1) as charts:
        square_block(
            charts,
            ROTATION_SIZE,
            rotation_circle,
            rotation.points.numpy(),
            position,
            theta=rotation.theta,
            title=title,
            subtitle=(f"a full turn every {turn:,.1f} positions",),
            aside_legend=ASIDE_LEGEND_WIDTH,
        )


def square_block(
    row: Row,
    size: int,
    builder: Callable,
    *args: Any,
    frame_height: int = MAP_FRAME_HEIGHT,
    legend_height: int = TOP_LEGEND_HEIGHT,
    aside_legend: int = 0,
    **options: Any,
) -> None:
    """A map (``builder(*args, **options)``, both axes on one scale) with a square plot, so that a circle is round and a
    distance reads the same across and up: ``size`` pixels wide on a page; on a slide, as large as the room it leaves
    holds it with its ``frame_height`` pixels of title, legend (``legend_height`` of them) and axis, or, where
    ``aside_legend`` is given, with its legend that many pixels wide right of the plot (the builder's legend_side)."""
    room = slide.on_slide(row.room)
    side = size - MAP_FRAME_WIDTH
    if room is not None:
        frame_width = MAP_FRAME_WIDTH + aside_legend
        frame_height -= legend_height if aside_legend else 0
        side = max(min(room.width - frame_width, room.height - frame_height), MIN_CHART - MAP_FRAME_HEIGHT)
        options |= {"legend_side": "right"} if aside_legend else {}
    with block(size if room is None else room.width):  # on a slide, its title may be wider than its plot
        draw(builder, *args, side=side, **options)


def map_block(found: QueryKeyMap, tokens: list[str], title: str) -> None:
    """The query-key map: each query joined to its strongest keys by lines as wide as their weights; beside it, how
    many queries have their strongest key nearest in the map."""
    links = [(i, int(j), float(found.weights[i, j])) for i in range(len(tokens)) for j in found.strongest[i]]
    kept = float(found.explained.sum())
    subtitle = (f"PCA of {2 * len(tokens)} normalised queries and keys: {kept:.0%} of the variance",)
    axes = tuple(f"PC {i + 1} ({share:.0%})" for i, share in enumerate(found.explained.tolist()))
    with row(1, lines_above=1, aside=METRIC_WIDTH) as charts:  # on a slide, one line above
        square_block(
            charts,
            MAP_SIZE,
            query_key_scatter,
            found.points.numpy(),
            tokens,
            links,
            title=title,
            subtitle=subtitle,
            axis_titles=axes,
            aside_legend=ASIDE_LEGEND_WIDTH,
        )
        with st.container(width=METRIC_WIDTH):
            st.metric(
                "Strongest key is nearest",
                f"{round(found.agreement * len(tokens))} of {len(tokens)}",
                help="Queries whose strongest key (by weight) is also the key nearest to them in this plane.",
            )


@st.cache_resource(max_entries=RUNS_KEPT, show_spinner=False)
def cached_word_paths(_model: MiniLM, sentences: tuple[str, ...], word: str) -> WordPaths:
    """``attn_core.geometry.word_paths``, once per distinct input (a ValueError for a missing word is raised, not kept)."""
    return word_paths(_model, list(sentences), word)


def paths_block(paths: WordPaths, labels: list[str]) -> None:
    """The word's path through the layers, one line per sentence (``labels``: the sentences, shortened)."""
    kept = float(paths.explained.sum())
    subtitle = (f"PCA over every sentence and stage: {kept:.0%} of the variance",)
    points = paths.points.numpy().astype(np.float64)
    with row(1, lines_above=1) as charts:
        square_block(
            charts,
            MAP_SIZE,
            word_path_map,
            points,
            labels,
            paths.stages,
            title=f"“{paths.word}”, stage by stage",
            subtitle=subtitle,
            frame_height=MAP_FRAME_HEIGHT + LEGEND_LINE * len(labels),
            legend_height=TOP_LEGEND_HEIGHT + LEGEND_LINE * len(labels),  # none above the plot: a line a sentence under it
            aside_legend=int(max(map(len, labels), default=0) * CHAR_WIDTH) + LEGEND_SWATCH,
        )


def position_grids(grids: dict[str, Tensor], query_word: str, key_word: str) -> None:
    """The score of one word pair at every pair of positions (m, n), under sinusoidal encodings and under RoPE."""
    positions = [str(i) for i in range(grids["rope"].shape[0])]
    formulas = {"sinusoidal": r"((x_a + P_m) W_Q) \cdot ((x_b + P_n) W_K)", "rope": r"R_m (x_a W_Q) \cdot R_n (x_b W_K)"}
    with row(2, lines_above=1) as charts:
        for kind, name in (("sinusoidal", "Sinusoidal"), ("rope", "RoPE")):
            matrix_step(
                charts,
                f"{name}: score of “{query_word}” → “{key_word}”",
                formulas[kind],
                grids[kind],
                positions,
                positions,
                row_title=f"{query_word} at m",
                col_title=f"{key_word} at n",
            )


def cosines_block(contexts: WordAcrossContexts, names: list[str]) -> None:
    """How alike the word's vectors are between every two sentences, stage by stage, with room for a link under it."""
    with row(lines_above=0, lines_below=1) as charts:
        labelled_lines_block(
            charts,
            contexts.similarity.numpy(),
            [f"{names[i]} ↔ {names[j]}" for i, j in contexts.pairs],
            [stage.replace("embedding layer", "embedding") for stage in contexts.stages],
            value_title="cosine similarity",
            point_title="stage",
            series_title="sentences",
            title=f"“{contexts.word}”: how alike its vectors are",
        )
