"""Exercises: predict, then see. A lesson's step may ask a question about a matrix its slide draws; the slide shows the
question in place of its charts, the student answers (a token to click or a number), and the answer is checked
against the numbers the chart draws (the matrix the view records for its export, downloads.Shown). The reveal shows
the charts, whether the answer was right, and a one-line reason. Answers stay in the browser tab's session; the
lesson's last step says how many were right.

An exercise, in a lesson file's step (``row`` and ``column``: a token of the matrix's rows or columns, the first of
that name, or a position from 0, negative from the end; a token the sentence lacks falls back to the last row):

    exercise = { ask = "largest", matrix = "Attention weights", row = "it" }   # which key gets the most weight
    exercise = { ask = "smallest", matrix = "Loss", column = -1 }              # which series is lowest at the end
    exercise = { ask = "count", matrix = "Attention weights", row = 4 }        # how many keys it sees (non-zero)
    exercise = { ask = "value", matrix = "Attention weights", row = 0, column = 1, tolerance = 0.02 }
    exercise = { ask = "ratio", matrix = "Measured variance", row = "q·k (unscaled)", column = "16", to = "64" }

A line chart's series are the rows of a matrix named as the chart, its x values (as written, "64") the columns; a
bar chart is one row. ``largest`` and ``smallest`` choose a column of the row, or, given a ``column`` (and no row), a
row of the column. ``question`` replaces the question asked (the answer stays the one its ``ask`` computes; in it,
``{row}`` is the label of the row, or column, asked about and ``{matrix}`` the matrix's name);
``tolerance`` is absolute for a value, relative for a ratio (0.1: within 10%). The reveal marks the answer's cells in
the chart that draws the matrix (marks, called by attn_ui.draw). A question about a chart the slide draws only after
an action (the Training view's *Train*) waits for it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from attn_ui import callbacks, lesson_player
from attn_ui.charts import bars, heatmap, lines, series_lines
from attn_ui.downloads import SHOWN, Shown
from attn_ui.inputs import escape_markdown

ANSWERS = "_exercise_answers"  # session state, kept across views: {(lesson, step): {"given": ..., "right": bool}}
BOX = "_exercise_box"  # session state, for this run only: where the open step's exercise is drawn
HIDDEN = "exercise_hidden"  # the key of the container that holds the charts until the answer is given
HIDDEN_STYLE = f"<style>.st-key-{HIDDEN} {{ display: none; }}</style>"
SHOWN_STYLE = f"<style>.st-key-{HIDDEN} {{ display: block; }}</style>"  # after HIDDEN_STYLE, where the question cannot be asked
DEFAULT_TOLERANCE = 0.01  # of a value
DEFAULT_RELATIVE = 0.1  # of a ratio


@dataclass(frozen=True)
class Answer:
    question: str
    kind: str  # "token" (choose one of ``options``) or "number"
    value: str | float
    reason: str  # one line, shown with the reveal
    options: tuple[str, ...] = ()
    tolerance: float = 0.0
    matrix: str = ""  # the name of the matrix asked about
    cells: tuple[tuple[int, int], ...] = ()  # its cells (row, column) that hold the answer, marked on the reveal

    def accepts(self, given: str | float | None) -> bool:
        if given is None:
            return False
        if self.kind == "token":
            return given == self.value
        return abs(float(given) - float(self.value)) <= self.tolerance


Matrices = dict[str, tuple[np.ndarray, list[str], list[str]]]  # name: values (rows, columns), row labels, column labels


def slide_matrices(shown: Shown) -> Matrices:
    """The numbers the slide's charts draw, as matrices by name: those the view records, then each line chart's
    series (a row each, a column per x: charts.lines and series_lines) and each bar chart's bars (one row), by the
    chart's name."""
    found = dict(shown.matrices)
    for name, (builder, args, options) in shown.charts.items():
        if builder is lines:
            x, measured = args[0], args[1]
            found.setdefault(
                name, (np.stack([np.asarray(v, dtype=float) for v in measured.values()]), list(measured), [f"{v:g}" for v in x])
            )
        elif builder is bars:
            values, labels = args[0], args[1]
            found.setdefault(name, (np.asarray(values, dtype=float)[None, :], [options.get("value_title", name)], list(labels)))
        elif builder is series_lines:  # each series its own x: a row each, a column per x of any, NaN where it has none
            series = args[0]
            xs = _every_x(series)
            grid = np.full((len(series), len(xs)), np.nan)
            for row, (x_values, y_values) in enumerate(series.values()):
                grid[row, [xs.index(float(x)) for x in x_values]] = y_values
            found.setdefault(name, (grid, list(series), [f"{x:g}" for x in xs]))
    return found


def _every_x(series: dict[str, tuple[np.ndarray, np.ndarray]]) -> list[float]:
    """The x values of any series of a series_lines chart, in order: the columns of its matrix."""
    return sorted({float(x) for x_values, _ in series.values() for x in x_values})


def answer(spec: dict, matrices: Matrices) -> Answer:
    """The question ``spec`` asks about the slide's ``matrices`` (name: values, row labels, column labels) and its
    answer, from those numbers; ValueError saying what is wrong with the spec."""
    ask = spec.get("ask")
    if ask not in ASKED:
        raise ValueError(f"ask = {ask!r}: expected one of {', '.join(ASKED)}")
    name = _named(str(spec.get("matrix", "")), matrices)
    values, rows, columns = matrices[name]
    values = np.asarray(values, dtype=float)  # (rows, columns)
    across_rows = _across_rows(spec)
    if across_rows:  # a row of the column: the same question about the matrix turned on its side
        values, rows, columns = values.T, columns, rows
    row = _position(spec.get("column" if across_rows else "row", -1), rows)
    asked, positions = ASKED[ask](spec, name, rows[row], columns, values[row])
    cells = tuple((column, row) if across_rows else (row, column) for column in positions)
    asked = replace(asked, matrix=name, cells=cells)
    if spec.get("question"):  # the lesson's words, with the row's label and the matrix's name where it says so
        asked = replace(asked, question=str(spec["question"]).replace("{row}", rows[row]).replace("{matrix}", name))
    return asked


def _across_rows(spec: dict) -> bool:
    """Whether the question chooses a row of a column (largest or smallest, given a column and no row)."""
    return spec.get("ask") in ("largest", "smallest") and "column" in spec and "row" not in spec


def _named(wanted: str, matrices: Matrices) -> str:
    """The matrix of that name, or the first whose name begins with it (a chart's title may name its step)."""
    name = next((name for name in matrices if name == wanted), None) or next((n for n in matrices if n.startswith(wanted)), None)
    if not wanted or name is None:
        raise ValueError(f"matrix = {wanted!r} is not drawn on this slide, whose matrices are: {', '.join(matrices) or 'none'}")
    return name


# Each question below is about one row of a matrix (``cells``, its values): the answer, and its positions in the row.
Asked = tuple[Answer, tuple[int, ...]]


def _extreme(spec: dict, name: str, row: str, columns: list[str], cells: np.ndarray) -> Asked:
    smallest, cells = spec["ask"] == "smallest", cells + 0.0  # + 0.0: −0.0 (one token's entropy) is written 0
    ranked = np.argsort(cells if smallest else -cells, kind="stable")  # the first of equal values first, as argmax
    best, runner_up = int(ranked[0]), int(ranked[min(1, len(ranked) - 1)])
    which, line = "smallest" if smallest else "largest", "column" if _across_rows(spec) else "row"
    where = f"at “{row}”" if line == "column" else f"in the row of “{row}”"  # a column: a chart's x, as a line chart's step
    reason = f"“{columns[best]}” has the {which} value {where}: {cells[best]:.3g}" + (
        f" (next: “{columns[runner_up]}”, {cells[runner_up]:.3g})." if runner_up != best else "."
    )
    other = "row" if line == "column" else "column"
    question = f"In “{name}”, which {other} has the {which} value in the {line} of “{row}”?"
    if "weights" in name.lower() and not smallest:
        question = f"Which key does “{row}” attend to most?"
    return Answer(question, "token", columns[best], reason, tuple(dict.fromkeys(columns))), (best,)


def _count(spec: dict, name: str, row: str, columns: list[str], cells: np.ndarray) -> Asked:
    seen = np.flatnonzero(np.isfinite(cells) & (cells != 0))  # a masked weight is 0, a masked score −∞
    entries = "entry" if len(seen) == 1 else "entries"
    listed = ", ".join(f"“{columns[j]}”" for j in seen)
    reason = f"The row of “{row}” has {len(seen)} {entries} neither zero nor masked: {listed}."
    question = f"How many keys does “{row}” see (how many entries of its row in “{name}” are not zero)?"
    return Answer(question, "number", float(len(seen)), reason), tuple(int(j) for j in seen)


def _value(spec: dict, name: str, row: str, columns: list[str], cells: np.ndarray) -> Asked:
    column, tolerance = _position(spec.get("column", 0), columns), float(spec.get("tolerance", DEFAULT_TOLERANCE))
    value = float(cells[column])
    question = f"In “{name}”, what is the value in the row of “{row}” and the column of “{columns[column]}” (±{tolerance:g})?"
    reason = f"The cell of “{row}” and “{columns[column]}” holds {value:.4g}."
    return Answer(question, "number", value, reason, tolerance=tolerance), (column,)


def _ratio(spec: dict, name: str, row: str, columns: list[str], cells: np.ndarray) -> Asked:
    start, end = _position(spec.get("column", 0), columns), _position(spec.get("to", -1), columns)
    ratio, relative = float(cells[end] / cells[start]), float(spec.get("tolerance", DEFAULT_RELATIVE))
    question = f"In “{name}”, from {columns[start]} to {columns[end]}: by what factor does “{row}” grow (±{relative:.0%})?"
    reason = f"“{row}” goes from {cells[start]:.4g} to {cells[end]:.4g}: {ratio:.3g} times."
    return Answer(question, "number", ratio, reason, tolerance=abs(ratio) * relative), (start, end)


ASKED = {"largest": _extreme, "smallest": _extreme, "count": _count, "value": _value, "ratio": _ratio}


def _position(where: int | str, labels: list[str]) -> int:
    """A row's or column's position: a label (its first occurrence; the last position if absent) or a position."""
    if isinstance(where, str):
        return labels.index(where) if where in labels else len(labels) - 1
    if not -len(labels) <= int(where) < len(labels):
        return len(labels) - 1
    return int(where) % len(labels)


def pending() -> tuple[tuple[str, int], dict] | None:
    """The exercise of the lesson's step on screen, by its key (lesson, step), or None."""
    found = lesson_player.current_step()
    if found is None or not found[1].exercise:
        return None
    return (st.session_state.get("lesson", ""), found[0]), found[1].exercise


def make_room() -> None:
    """Among the notes above a slide's section (page.Slides), whose height the slide leaves its charts, while a
    lesson's step with an exercise is on screen: the place of the question, and of the reveal."""
    if pending() is not None:
        st.session_state[BOX] = st.container()


def hide_until_answered() -> None:
    """Where the open section begins (page.Slides.show): until the question is answered, a container that keeps the
    section's charts out of sight; the rest of the run draws into it."""
    found = pending()
    if found is not None and found[0] not in st.session_state.get(ANSWERS, {}):
        st.html(HIDDEN_STYLE)
        st.container(key=HIDDEN).__enter__()


def finish() -> None:
    """At the end of the run (page.publish), when the section is drawn: the question and its answer's widget, or the
    reveal, in the place make_room kept."""
    box: DeltaGenerator | None = st.session_state.pop(BOX, None)
    found = pending()
    if box is None or found is None:
        return
    key, spec = found
    matrices = slide_matrices(st.session_state[SHOWN])
    if not matrices:  # the slide draws its charts after an action (Training's Train), which its own message asks for
        with box:
            st.info("This step's question comes with the slide's charts.")
        return
    try:
        expected = answer(spec, matrices)
    except ValueError as problem:
        with box:
            st.warning(f"Step {key[1]}'s exercise cannot be asked: {escape_markdown(str(problem))}. The slide is shown as it is.")
        st.html(SHOWN_STYLE)
        return
    given = st.session_state.get(ANSWERS, {}).get(key)
    with box:
        if given is None:
            st.markdown(f"**Exercise.** {escape_markdown(expected.question)}")
            with st.container(horizontal=True, vertical_alignment="bottom", gap="small"):
                if expected.kind == "token":
                    shown = {"format_func": escape_markdown, "label_visibility": "collapsed"}  # tokens as typed, not Markdown
                    st.pills("Your answer", expected.options, key="_exercise_given", **shown)
                else:
                    st.number_input(
                        "Your answer", key="_exercise_given", value=None, step=1.0 if expected.tolerance == 0 else 0.01
                    )
                st.button("Check", type="primary", key="_exercise_check", on_click=_check, args=(key, spec))
        else:  # one line in place of the question: the slide's charts get their room back
            verdict = "Right." if given["right"] else f"Not quite: you answered {_shown_value(given['given'])}."
            (st.success if given["right"] else st.error)(escape_markdown(f"{verdict} {expected.reason}"))


def marks(chart: str, builder: Callable[..., dict], args: tuple) -> dict[str, Any]:
    """Where a lesson step's exercise has been answered: the option that marks the answer's cells in the chart about
    to be drawn by ``builder(*args)`` and recorded as ``chart``, if that chart draws the matrix asked about (as
    slide_matrices reads it); else nothing."""
    found = pending()
    if found is None or found[0] not in st.session_state.get(ANSWERS, {}):
        return {}
    try:
        expected = answer(found[1], slide_matrices(st.session_state[SHOWN]))
    except ValueError:
        return {}
    if expected.matrix != chart:
        return {}
    if builder is heatmap:
        return {"marked": expected.cells}
    if builder is bars:
        return {"marked": tuple(column for _, column in expected.cells)}
    if builder is lines:
        names = list(args[1])
        return {"marked": tuple((names[row], column) for row, column in expected.cells)}
    if builder is series_lines:  # the matrix's columns are the x of every series: each point's position in its own x
        series, names = args[0], list(args[0])
        xs = _every_x(series)
        points = [(names[row], [float(x) for x in series[names[row]][0]], xs[column]) for row, column in expected.cells]
        return {"marked": tuple((name, own.index(x)) for name, own, x in points if x in own)}
    return {}


def _shown_value(value: str | float | None) -> str:
    if value is None:
        return "nothing"
    return f"“{value}”" if isinstance(value, str) else f"{value:g}"


@callbacks.needing(SHOWN)
def _check(key: tuple[str, int], spec: dict) -> None:
    """In a callback: the answer given, checked against the numbers of the slide as last drawn."""
    expected = answer(spec, slide_matrices(st.session_state[SHOWN]))
    given = st.session_state.get("_exercise_given")
    if given is None:
        return  # nothing chosen yet: the question stays
    st.session_state.setdefault(ANSWERS, {})[key] = {"given": given, "right": expected.accepts(given)}


def report_score() -> None:
    """On a lesson's last step: how many of its exercises were answered right."""
    found, counted = lesson_player.current_step(), score()
    if found and counted and found[0] == len(lesson_player.playing().steps):
        st.info(f"Exercises of this lesson: {counted[0]} of {counted[1]} answered right.")


def score() -> tuple[int, int] | None:
    """How many of the lesson's exercises were answered right, and how many it has; None when it has none."""
    lesson = lesson_player.playing()
    if lesson is None:
        return None
    numbers = [number for number, step in enumerate(lesson.steps, 1) if step.exercise]
    if not numbers:
        return None
    answers = st.session_state.get(ANSWERS, {})
    name = st.session_state.get("lesson", "")
    return sum(bool(answers.get((name, number), {}).get("right")) for number in numbers), len(numbers)
