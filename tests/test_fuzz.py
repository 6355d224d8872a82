"""Fuzzing every view through AppTest, as a user and as a link would (issue 15, points 1 and 2).

Walks: seeded random sequences of steps from a view's first visit. A step sets any control on the page to any value it
allows (select options, slider ends and points, number inputs at and past their bounds, toggles, radios, buttons, mask
grid cells), types a text of a hostile corpus, sends a select box's stale label the way a browser does (alone or with
another change in the same rerun), switches presenter mode, steps through slides, opens a section with its button, or follows a
link to another view. A walk starts on its view's "All sections" (``tests.conftest.open_view``).
After every step the page must hold no exception, no error in the log, no NaN or inf where a number is shown, and the
user's text must reach Markdown escaped (``attn_ui.inputs.escape_markdown``: a backslash before each special character).

Links: every URL parameter of every view given garbage on a first visit: no exception, a warning naming each invalid
parameter, its default used, the valid parameters kept.

Size: FUZZ_WALKS walks of FUZZ_STEPS steps per view (CI default 5 x 15), FUZZ_LINK_VALUES garbage values per parameter
(CI default 3; "all" for every one), FUZZ_SEED to draw other walks. ``make fuzz`` runs the long version. A failing walk
prints its steps; replay them with ``FUZZ_REPLAY='<the printed JSON>' pytest tests/test_fuzz.py -k replay``.
"""

from __future__ import annotations

import ast
import json
import logging
import math
import os
import random
import re
import zlib
from typing import Any

import numpy as np
import pandas as pd
import pytest
from streamlit.proto.WidgetStates_pb2 import WidgetState
from streamlit.testing.v1 import AppTest

import attn_core.sweep
from attn_core import tokenize
from attn_ui import url_state
from attn_ui.inputs import MARKDOWN_SPECIALS, escape_markdown
from attn_ui.page import PRESENTER, SECTION_PICKER, VIEWS
from attn_ui.url_state import Param
from tests.conftest import APP, ROOT, TIMEOUT, assert_clean, open_all, open_view

WALKS = int(os.environ.get("FUZZ_WALKS", "5"))
STEPS = int(os.environ.get("FUZZ_STEPS", "15"))
SEED = int(os.environ.get("FUZZ_SEED", "0"))
LINK_VALUES = os.environ.get("FUZZ_LINK_VALUES", "3")
HOME = "streamlit_app.py"
PIPELINE, SCALING, MASKING, MULTI_HEAD, COST, DECODING, REAL, TRAINING, POSITIONS = (view.path for view in VIEWS)
NAMES = {view.path: view.label.replace(" ", "_") for view in VIEWS}

# ---------------------------------------------------------------------------------------------------------------------
# The hostile corpus: what a user may type or paste. Markup probes carry "fuzz" so that the app's own text never has them.

CORPUS = {
    "empty": "",
    "spaces": "    ",
    "one_char": "x",
    "chars_5000": ("attention is all you need " * 200)[:5000],
    "one_word_5000": "a" * 5000,
    "words_1000": " ".join(f"w{i % 97}" for i in range(1000)),
    "emoji_zwj": "we 👩‍👩‍👧‍👦 love 🏳️‍🌈 and 👍🏽 🇫🇷 ❤️‍🔥",
    "rtl": "مرحبا بالعالم שלום עולם",
    "cjk": "注意力机制很重要 日本語のテキスト 한국어 문장",
    "combining": "e\u0301te\u0301 a\u0308\u0308 Z\u0334\u0321\u031bal\u0337g\u0336o\u0335",
    "control": "a\x00b\x07c\td\re\x1b[31mred\x1b[0m f\u200bg h\u200di j\ufeffk \u202eevil",
    "invisible": "\u200b\u200d \ufeff\x00",  # characters the model's tokenizer skips: no word pieces at all
    "special_tokens": "[SEP] [CLS]",  # read by the model's tokenizer as its own special tokens
    "html": "<script>alert(1)</script> <b>fuzzhtml</b> <img src=x onerror=alert(1)>",
    "markdown": "**fuzzbold** _fuzzital_ `fuzzcode` [fuzzlink](https://example.com) ~~fuzzstrike~~",
    "heading": "# fuzzheading\n> quote\n- item\n1. one",
    "latex": "$fuzzmath$ $$\\frac{1}{0}$$ \\(x\\) \\[y\\]",
    "pipes": "a cat | the dog sat || | x |",
    "only_pipes": "|||",
    "punctuation": "!?.,;:--...«»()[]{}",
    "numbers": "1 2 3 3.14 -1e9 nan inf 0x1F 1e308",
    "newlines": "first line\n\n\nsecond line\nthird",
    "coref_words": "it, fox, dog",
    "coref_markup": "`it`, **fuzzbold**, <b>x</b>",
    "coref_empty": ", ,",
    "many_lines": "\n".join(f"the fox number {i} ran" for i in range(12)),
    "sentence": "the quick brown fox jumps over a lazy dog while my friend reads",
}
MARKUP_PROBES = (
    "<script",
    "</script>",
    "<b>",
    "<img",
    "**fuzzbold**",
    "_fuzzital_",
    "`fuzzcode`",
    "[fuzzlink](",
    "~~fuzzstrike~~",
    "$fuzzmath$",
    "$$\\frac",
    "`it`",
)
APP_QUOTES = {"“|”", "“-”"}  # quoted by the app itself ("separated by “|”", "joined by “-”")
STALE_WORDS = ("play", "it", "zzz", "[CLS]", "")

# ---------------------------------------------------------------------------------------------------------------------
# Pages and their controls.

WIDGET_KINDS = ("selectbox", "radio", "select_slider", "number_input", "slider", "toggle", "checkbox", "text_area", "text_input")
LABELLED = ("selectbox", "radio", "select_slider")  # driven by the label the browser sends, as a browser does


def widgets(at) -> dict[str, tuple[str, Any]]:
    """Every enabled, keyed control on the page now: key -> (kind, element)."""
    found = {}
    for kind in (*WIDGET_KINDS, "button"):
        for element in at.get(kind):
            if getattr(element, "key", None) and not element.disabled:
                found[element.key] = (kind, element)
    return found


def find(at, key: str):
    for kind in (*WIDGET_KINDS, "button"):
        for element in at.get(kind):
            if getattr(element, "key", None) == key:
                return element
    raise LookupError(f"no control {key!r} on the page now")


def grid_editor(at):
    editors = [frame for frame in at.data_editor if (frame.key or "").startswith("grid_editor_")]
    return editors[0] if editors else None


class Overrides:
    """Widget states sent with the next run in place of AppTest's own: what a browser sends (labels, grid edits).
    ``edits`` outlives one run: a browser sends all the edits made so far in a data editor it still shows."""

    def __init__(self, edits: dict | None = None):
        self.states: dict[str, WidgetState] = {}
        self.edits: dict[str, dict] = {} if edits is None else edits

    def install(self, at) -> None:
        tree = at._tree
        fresh = type(tree).get_widget_states

        def patched():
            states = fresh(tree)
            if self.states:
                kept = [state for state in states.widgets if state.id not in self.states]
                del states.widgets[:]
                states.widgets.extend(kept + list(self.states.values()))
            self.states = {}
            return states

        tree.get_widget_states = patched  # this tree only: every run makes a new one


def label_state(element, kind: str, label: str) -> WidgetState:
    state = WidgetState(id=element.id)
    if kind == "select_slider":
        state.string_array_value.data[:] = [label]
    else:
        state.string_value = label
    return state


def grid_state(editor, edits: dict, row: int, col: int, allowed: bool) -> WidgetState:
    """The editor's state after one more cell edit, as the browser sends it: every edit made in this editor."""
    rows = edits.setdefault(editor.proto.id, {})
    rows.setdefault(str(row), {})[str(editor.value.columns[col])] = allowed
    state = {"edited_rows": rows, "added_rows": [], "deleted_rows": []}
    return WidgetState(id=editor.proto.id, string_value=json.dumps(state))


# ---------------------------------------------------------------------------------------------------------------------
# Steps: JSON lists, so that a failing walk prints what replays it.


def prepare(at, step: list, overrides: Overrides) -> None:
    """Everything a step changes before the rerun it triggers."""
    action = step[0]
    if action == "set":
        find(at, step[1]).set_value(step[2])
    elif action == "type":
        find(at, step[1]).set_value(CORPUS[step[2]])
    elif action == "label":
        element = find(at, step[1])
        overrides.states[element.id] = label_state(element, element.type, step[2])
    elif action == "stale":  # a select box's stale label, alone or with another change in the same rerun
        element = find(at, step[1])
        overrides.states[element.id] = label_state(element, "selectbox", step[2])
        if step[3] is not None:
            prepare(at, step[3], overrides)
    elif action == "click":
        find(at, step[1]).click()
    elif action == "cell":
        editor = grid_editor(at)
        overrides.states[editor.proto.id] = grid_state(editor, overrides.edits, *step[1:])
    elif action == "section":  # a button of the sections' picker; past the last, "All sections"
        picker = at.button_group(key=SECTION_PICKER)
        picker.set_value(picker.options[min(step[1], len(picker.options) - 1)])
    elif action == "page":
        at.query_params.clear()  # following a sidebar link: the new view's own address
        at.switch_page(step[1])
    else:
        raise ValueError(step)


def apply(at, step: list, edits: dict | None = None) -> None:
    overrides = Overrides(edits)
    prepare(at, step, overrides)
    overrides.install(at)
    at.run()


def number_choices(element, rng: random.Random) -> list:
    low, high, step = element.min, element.max, element.step or 1
    whole = isinstance(element.value, int) and float(step).is_integer()
    low = -1e6 if low is None else low
    high = 1e6 if high is None else high
    if whole:
        low, high, step = int(low), int(high), int(step)
        inside = rng.randint(low, high)
    else:
        inside = round(rng.uniform(low, high), 2)
    return [low, high, low - step, high + step, high * 1000, inside, inside, element.value]


def stale_labels(element, rng: random.Random) -> list[str]:
    n = len(element.options)
    labels = [f"{rng.randint(n, n + 40)}: {rng.choice(STALE_WORDS)}", f"head {n + rng.randint(0, 30)}", f"layer {n + 3}"]
    if element.options:
        label = rng.choice(element.options)
        labels += [label + " stale", label.split(":")[0] + ": gone", "nan", ""]
    return labels


SLIDE_KEYS = ("slide_next", "slide_previous", "clicker_next", "clicker_previous")


def choose(at, rng: random.Random, state: dict) -> list:
    """One random step for the page as it is now."""
    controls = widgets(at)
    page = state["page"]
    roll = rng.random()
    if roll < 0.04 or page == HOME:
        return ["page", rng.choice([HOME, *(view.path for view in VIEWS if view.path != page)])]
    slide_keys = [key for key in SLIDE_KEYS if key in controls]
    if roll < 0.14 and slide_keys:
        return ["click", rng.choice(slide_keys)]
    if roll < 0.19 and "present" in controls:
        return ["set", "present", not controls["present"][1].value]
    if roll < 0.23 and "present" in controls and not controls["present"][1].value:
        return ["section", rng.randint(0, 9)]  # a button of the sections' picker, by its place
    boxes = [key for key, (kind, _) in controls.items() if kind == "selectbox"]
    if roll < 0.29 and boxes:
        key = rng.choice(boxes)
        other = choose_control(at, rng, state, {k: v for k, v in controls.items() if k != key})
        inner = other if rng.random() < 0.6 and other and other[0] in ("set", "type", "label") else None
        return ["stale", key, rng.choice(stale_labels(controls[key][1], rng)), inner]
    editor = grid_editor(at)
    if roll < 0.37 and editor is not None:
        t = len(editor.value.columns)
        return ["cell", rng.randrange(t), rng.randrange(t), rng.random() < 0.5]
    return choose_control(at, rng, state, controls) or ["page", rng.choice([HOME, *(view.path for view in VIEWS)])]


def choose_control(at, rng: random.Random, state: dict, controls: dict) -> list | None:
    keys = [key for key in controls if key != "run" or sweep_allowed(at, state)]
    if not keys:
        return None
    key = rng.choice(sorted(keys))
    kind, element = controls[key]
    if kind in LABELLED:
        return ["label", key, rng.choice(element.options)] if element.options else None
    if kind == "number_input":
        return ["set", key, rng.choice(number_choices(element, rng))]
    if kind == "slider":
        low, high = element.min, element.max  # AppTest gives a slider's ends as floats, whatever its values' type
        if isinstance(element.value, int):
            low, high = int(low), int(high)  # randint() refuses floats from Python 3.12 (deprecated before)
        return ["set", key, rng.choice([low, high, rng.randint(low, high) if isinstance(low, int) else rng.uniform(low, high)])]
    if kind in ("toggle", "checkbox"):
        return ["set", key, not element.value]
    if kind in ("text_area", "text_input"):
        return ["type", key, rng.choice(sorted(CORPUS))]
    if kind == "button":
        return ["click", key]
    return None


def sweep_allowed(at, state: dict) -> bool:
    """The Cost view's sweep takes seconds: once per walk, with T_max <= 256 and the default time budget or less."""
    session = at.session_state
    return (
        not state["swept"]
        and "T_max" in session
        and session["T_max"] <= 256
        and session["time_budget"] <= 20
        and session["repeats"] <= 5
    )


# ---------------------------------------------------------------------------------------------------------------------
# What must hold after every step.

NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")
NAN_WORD = re.compile(r"(?<![\w\\])-?(nan|inf)(?![\w])")
TEXT_KINDS = ("markdown", "caption", "info", "warning", "error", "success", "title", "header", "subheader")


def user_fragments(texts: set[str]) -> set[str]:
    """Pieces of the user's texts that a view may quote: tokens, words, comma-separated words, lines, the whole."""
    pieces = set()
    for text in texts:
        pieces |= {text.strip(), *tokenize(text[:3000]), *text.split(), *(w.strip() for w in text.split(",")), *text.splitlines()}
    return {piece for piece in pieces if piece and len(piece) <= 300 and set(piece) & MARKDOWN_SPECIALS}


def bodies(at) -> list[tuple[str, str]]:
    found = [(kind, element.value) for kind in TEXT_KINDS for element in at.get(kind)]
    found += [("metric label", metric.label) for metric in at.get("metric")]
    return found


def unescaped(piece: str, body: str) -> bool:
    """Whether ``piece`` occurs in ``body`` other than right after a backslash ("\\<script" is escaped)."""
    return any(body[i - 1 : i] != "\\" for i in (m.start() for m in re.finditer(re.escape(piece), body)))


def markup_problems(at, typed: set[str]) -> list[str]:
    problems = []
    probes = [probe for probe in MARKUP_PROBES if any(probe in text for text in typed)]
    fragments = user_fragments(typed)
    for kind, body in bodies(at):
        for probe in probes:
            if unescaped(probe, body):
                problems.append(f"user markup {probe!r} unescaped in {kind}: {body[:300]!r}")
        for piece in fragments:
            quoted = f"“{piece}”"
            if quoted not in APP_QUOTES and quoted in body:
                problems.append(f"user text {piece!r} unescaped in {kind} (escaped: {escape_markdown(piece)!r}): {body[:300]!r}")
    return problems


def number_problems(at, typed: set[str]) -> list[str]:
    problems = []
    words = {word.lower() for text in typed for word in tokenize(text[:3000])}
    for metric in at.get("metric"):
        first = (metric.value or "").replace("−", "-").replace(",", "").split(" ")[0]
        if not NUMBER.match(first) or not math.isfinite(float(first)):
            problems.append(f"metric {metric.label!r} shows {metric.value!r}")
    for kind in ("dataframe", "table"):
        for element in at.get(kind):
            problems += [f"{kind}: {problem}" for problem in frame_problems(element.value, words)]
    if not words & {"nan", "inf", "-inf"}:
        for kind, body in bodies(at):
            if NAN_WORD.search(body):
                problems.append(f"{kind} shows nan/inf: {body[:300]!r}")
    return problems


def frame_problems(frame: pd.DataFrame, words: set[str]) -> list[str]:
    problems = []
    for column in frame.columns:
        for index, value in frame[column].items():
            where = f"row {index!r}, column {column!r}"
            if isinstance(value, (float, np.floating)) and not math.isfinite(value):
                problems.append(f"{where} is {value!r}")
            elif isinstance(value, str) and value.strip().lower() not in words and NAN_WORD.search(value.lower()):
                # NaN on purpose: Masking's naive softmax of a fully masked row (its column's name on a page, on a slide)
                if not (value == "NaN" and str(column).startswith(("naive softmax, masked = −∞", "softmax, −∞"))):
                    problems.append(f"{where} is {value!r}")
    return problems


def page_problems(at, typed: set[str]) -> list[str]:
    return number_problems(at, typed) + markup_problems(at, typed)


def check_grid_edit(at, row: int, col: int, allowed: bool) -> None:
    """A cell the user just ticked or unticked is so in the mask (when the grid is still on screen)."""
    grid = at.session_state["grid"].split("-")
    if grid_editor(at) is not None and row < len(grid):
        problem = f"grid edit lost: cell ({row}, {col}) is {grid[row][col]}"
        assert grid[row][col] == "01"[allowed], problem


def check(at, typed: set[str], caplog) -> None:
    assert_clean(at)
    errors = [record.getMessage() for record in caplog.records if record.levelno >= logging.ERROR]
    assert not errors, errors
    problems = page_problems(at, typed)
    assert not problems, problems


# ---------------------------------------------------------------------------------------------------------------------
# Walks.


@pytest.fixture(autouse=True)
def short_measurements(monkeypatch):
    """A press of Measure (Cost, Decoding) stops after 2 s, not after the views' default 20: a walk checks what a press
    does to the page, whose code is the same, not how long the machine measures."""
    monkeypatch.setattr(attn_core.sweep, "DEFAULT_TIME_BUDGET", 2.0)


def walk_seed(view: str, walk: int) -> int:
    return zlib.crc32(f"{SEED}:{view}:{walk}".encode())


def run_walk(view: str, seed: int, caplog, steps: list | None = None) -> None:
    """A walk from ``view``'s first visit: ``steps`` given (a replay), or STEPS random ones drawn from ``seed``."""
    rng = random.Random(seed)
    state = {"page": view, "swept": False}
    done: list = []
    typed: set[str] = set()
    edits: dict = {}
    try:
        at = open_view(view)
        check(at, typed, caplog)
        for i in range(len(steps) if steps is not None else STEPS):
            step = steps[i] if steps is not None else choose(at, rng, state)
            done.append(step)
            for part in (step, step[3] if step[0] == "stale" else None):
                if part and part[0] == "type":
                    typed.add(CORPUS[part[2]])
            if step[0] == "click" and step[1] == "run":
                state["swept"] = True
            apply(at, step, edits)
            if step[0] == "page":
                state["page"] = step[1]
            check(at, typed, caplog)
            if step[0] == "cell":
                check_grid_edit(at, *step[1:])
    except Exception as failure:
        replay = json.dumps({"view": view, "steps": done}, ensure_ascii=True)
        listing = "\n".join(f"  {i + 1}. {step}" for i, step in enumerate(done))
        raise AssertionError(
            f"{type(failure).__name__}: {failure}\n\nWalk from {view} (seed {seed}), steps:\n{listing}\n"
            f"Replay: FUZZ_REPLAY='{replay}' pytest tests/test_fuzz.py -k replay"
        ) from failure


@pytest.mark.parametrize("walk", range(WALKS))
@pytest.mark.parametrize("view", [view.path for view in VIEWS], ids=NAMES.get)
def test_random_walk(view, walk, caplog):
    run_walk(view, walk_seed(view, walk), caplog)


@pytest.mark.skipif("FUZZ_REPLAY" not in os.environ, reason="set FUZZ_REPLAY to a failing walk's printed JSON")
def test_replay(caplog):
    recorded = json.loads(os.environ["FUZZ_REPLAY"])
    run_walk(recorded["view"], 0, caplog, recorded["steps"])


# ---------------------------------------------------------------------------------------------------------------------
# Links.


def view_params(path: str) -> tuple[Param, ...]:
    """The view's ``PARAMS``, read by running the page's imports and constants only (not its Streamlit calls)."""
    module = ast.parse((ROOT / path).read_text(), path)
    kept = []
    for node in module.body:
        if isinstance(node, (ast.Import, ast.ImportFrom, ast.Assign, ast.AnnAssign)):
            kept.append(node)
            if isinstance(node, ast.Assign) and any(getattr(target, "id", None) == "PARAMS" for target in node.targets):
                break
    namespace: dict[str, Any] = {}
    exec(compile(ast.Module(kept, type_ignores=[]), str(ROOT / path), "exec"), namespace)
    return tuple(namespace["PARAMS"]) + PRESENTER


PARAMS = {view.path: view_params(view.path) for view in VIEWS}
KEEP = {  # a valid, non-default parameter per view that garbage elsewhere must not disturb
    PIPELINE: ("seed", "7", 7),
    SCALING: ("seed", "3", 3),
    MASKING: ("mask", "padding", "padding"),
    MULTI_HEAD: ("seed", "4", 4),
    COST: ("mask", "causal", "causal"),
    DECODING: ("batch", "4", 4),
    REAL: ("hide", "on", True),
    TRAINING: ("seed", "5", 5),
    POSITIONS: ("shuffle", "7", 7),
}
GARBAGE = (
    "",
    " ",
    "-1",
    "0",
    "-0",
    "99999999999999999999999",
    "1e308",
    "nan",
    "inf",
    "-inf",
    "1.5",
    "0x10",
    "abc",
    "true",
    "[1, 2]",
    "ünïcødé 🎉 שלום 注意",
    "x" * 10_000,
    "<script>alert(1)</script>",
    "`x` **fuzzbold** $fuzzmath$",
    ("1", "abc"),  # repeated: the last one counts
    ("abc", "1"),
)


def garbage_for(index: int) -> list:
    if LINK_VALUES == "all":
        return list(GARBAGE)
    count = int(LINK_VALUES)
    return [GARBAGE[(index * count + i) % len(GARBAGE)] for i in range(count)]  # every value, spread over parameters


def is_valid(param: Param, raw: str) -> bool:
    try:
        param.parse(raw)
    except ValueError:
        return False
    return True


def moves(param: Param, raw: str) -> bool:
    """Whether a valid value is one the view does not offer, moved to the nearest it does, as 3 (not a d_k) to 4:
    judged on the parser's options, not by the check the app makes (url_state.Nearest.moves)."""
    return isinstance(param.parse, url_state.Nearest) and float(raw) not in param.parse.options


def link_value(value) -> str:
    return value[-1] if isinstance(value, tuple) else value


def open_link(view: str, query: dict):
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)  # not open_view(**query): a tuple is a repeated key
    for key, value in query.items():
        at.query_params[key] = list(value) if isinstance(value, tuple) else value
    at.switch_page(view)
    return at.run()


DEPENDENT = {"query", "token", "head", "step", "batch", "slide"}  # kept only while the text (or h) has that many
_SHOWN: dict[str, dict] = {}


def shown_values(view: str, query: dict) -> dict:
    """The values the view takes for its parameters from this link (cached)."""
    name = json.dumps([view, sorted((k, list(v) if isinstance(v, tuple) else v) for k, v in query.items())])
    if name not in _SHOWN:
        at = open_link(view, query)
        assert_clean(at)
        _SHOWN[name] = {param.key: at.session_state[param.key] for param in PARAMS[view] if param.key in at.session_state}
    return _SHOWN[name]


def warned(at, key: str) -> bool:
    return any(f"- {key} = “" in text for text in (w.value for w in at.warning))


def check_link(at, view: str, query: dict, caplog) -> None:
    """No exception, each invalid parameter named in a warning, the page as with the invalid parameters left out,
    valid ones kept."""
    check(at, {link_value(v) for v in query.values()}, caplog)
    params = {param.key: param for param in PARAMS[view]}
    invalid = {key for key, value in query.items() if key in params and not is_valid(params[key], link_value(value))}
    moved = {
        key for key, value in query.items() if key in params and key not in invalid and moves(params[key], link_value(value))
    }
    shown = [w.value for w in at.warning]
    for key in query:
        if key not in params:
            name = escape_markdown(key[:40] + ("…" if len(key) > 40 else ""))
            assert any(f"- “{name}”: this view has no setting" in text for text in shown), (key, shown)
        elif key in invalid or key in moved:
            assert warned(at, key), f"{key}={link_value(query[key])[:50]!r} is invalid but no warning names it: {shown}"
        elif key in DEPENDENT:  # one the other settings do not offer is moved where its section draws, and said
            kept = at.session_state[key] == params[key].parse(link_value(query[key]))
            assert warned(at, key) != kept, f"{key}={link_value(query[key])[:50]!r}, kept: {kept}, said: {shown}"
        else:
            assert not warned(at, key), f"{key}={link_value(query[key])[:50]!r} is valid but reported: {shown}"
        if key in params and key not in invalid and key not in DEPENDENT:
            assert at.session_state[key] == params[key].parse(link_value(query[key])), f"the valid {key} was not kept"
    expected = shown_values(view, {key: value for key, value in query.items() if key not in invalid})
    got = {key: at.session_state[key] for key in expected}
    assert got == expected, "not the values of the same link without its invalid parameters"


LINK_CASES = [
    pytest.param(view.path, param.key, value, id=f"{NAMES[view.path]}-{param.key}-{i}")
    for view in VIEWS
    for p, param in enumerate(PARAMS[view.path])
    for i, value in enumerate(garbage_for(p + 7 * VIEWS.index(view)))
]


@pytest.mark.parametrize(("view", "key", "value"), LINK_CASES)
def test_link_with_one_garbage_parameter(view, key, value, caplog):
    keep_key, keep_raw, _ = KEEP[view]
    query = {keep_key: keep_raw, key: value} if key != keep_key else {key: value}
    at = open_link(view, query)
    check_link(at, view, query, caplog)


@pytest.mark.parametrize("view", [view.path for view in VIEWS], ids=NAMES.get)
def test_link_with_every_parameter_garbage(view, caplog):
    rng = random.Random(zlib.crc32(f"{SEED}:link:{view}".encode()))
    for _ in range(2 if LINK_VALUES != "all" else 10):
        query = {param.key: rng.choice(GARBAGE) for param in PARAMS[view]}
        at = open_link(view, query)
        check_link(at, view, query, caplog)


@pytest.mark.parametrize("view", [view.path for view in VIEWS], ids=NAMES.get)
def test_link_with_unknown_parameters(view, caplog):
    keep_key, keep_raw, _ = KEEP[view]
    query = {keep_key: keep_raw, "bogus": "1", "ünï🎉": "x" * 10_000, "Text": "<b>x</b>", "seed ": "3"}
    at = open_link(view, query)
    check_link(at, view, query, caplog)


def test_every_view_has_parameters_to_fuzz():
    assert all(len(PARAMS[view.path]) > len(PRESENTER) for view in VIEWS)


# ---------------------------------------------------------------------------------------------------------------------
# Regressions: bugs this fuzzing found (all fixed).


def test_coreference_notice_shows_the_sentence_as_text():
    typed = CORPUS["markdown"]
    at = open_view(REAL, text=typed)  # "it" is not in it: section 3's notice quotes the sentence
    assert_clean(at)
    assert not markup_problems(at, {typed}), markup_problems(at, {typed})


def test_word_comparison_notice_shows_the_word_as_text():
    at = open_view(REAL)
    find(at, "word").set_value("**fuzzbold**").run()
    assert_clean(at)
    assert not markup_problems(at, {"**fuzzbold**"}), markup_problems(at, {"**fuzzbold**"})


def test_cost_slopes_with_one_length_left_are_not_nan():
    at = open_view(COST, heads="32", T_max="256")
    find(at, "memory_gib_cpu").set_value(0.01).run()
    find(at, "run").click().run()
    open_all(at, "expander", "cost_points")  # the slopes' table
    assert_clean(at)
    assert any("slope of time" in table.value.columns for table in at.table)
    assert not number_problems(at, set()), number_problems(at, set())


def test_two_edits_of_the_custom_grid_both_count():
    at = open_view(MASKING, mask="custom")  # causal 7 x 7 grid
    edits: dict = {}
    apply(at, ["cell", 0, 3, True], edits)
    assert at.session_state["grid"].split("-")[0] == "1001000"
    apply(at, ["cell", 2, 0, False], edits)  # the browser sends both edits of the editor it shows
    assert_clean(at)
    assert at.session_state["grid"].split("-")[:3] == ["1001000", "1100000", "0110000"]


def test_metric_label_shows_the_token_as_text():
    at = open_view(REAL, text="a * b", token="2")  # [CLS] a * b [SEP]
    assert_clean(at)
    in_labels = [problem for problem in markup_problems(at, {"a * b"}) if "in metric label" in problem]
    assert not in_labels, in_labels
