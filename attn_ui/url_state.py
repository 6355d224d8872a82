"""Shareable views: each control's value lives in the URL's query parameters.

A view lists its parameters, calls ``restore`` before drawing its controls
(each control uses the parameter's key as its widget key) and ``publish``
after them. A link opened on a fresh server therefore shows the same view,
and bad values in a link are reported and replaced by defaults, never raised.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import streamlit as st
import torch
from streamlit.runtime.scriptrunner import get_script_run_ctx
from torch import Tensor

from attn_ui.inputs import escape_markdown

MAX_URL_VALUE = 2000  # characters; longer values are not put in the link
# Session-state keys of a link's report, kept until the user changes a control (attn_ui.page.setup):
IGNORED = "_ignored"  # the link's values not used as given, each with its reason
LINKED = "_linked"  # {key: the link's text} of the values the link gave (restore), a dependent one checked by keep_in
PUBLISHED = "_published"  # {key: value} of the view's controls as the last run left them


@dataclass(frozen=True)
class Param:
    key: str  # the URL parameter's name, also the control's widget key
    default: Any
    parse: Callable[[str], Any]  # raises ValueError with a readable reason
    format: Callable[[Any], str] = str
    typed: bool = False  # a text box: text typed into it that ``parse`` refuses is reported, not silently replaced

    def accepts(self, value: Any) -> bool:
        """Whether a live value has this parameter's type and range. A stale one may not: the browser
        sends back a select box's old label after its options changed, and Streamlit stores that string."""
        if value is None or self.default is None:
            return value is None or type(value) is not str and self._round_trips(value)
        return type(value) is type(self.default) and self._round_trips(value)

    def _round_trips(self, value: Any) -> bool:
        try:
            return self.parse(self.format(value)) == value
        except ValueError:
            return False

    # Its control, drawn with the bounds or options of its parser (Integer, Number, Choice, Nearest): written once, here.
    # A select box or segmented control of an Integer offers each whole number from its low to its high.
    def number_input(self, label: str, **options: Any) -> int | float:
        return st.number_input(label, self.parse.low, self.parse.high, key=self.key, **options)

    def slider(self, label: str, **options: Any) -> int:
        return st.slider(label, self.parse.low, self.parse.high, key=self.key, **options)

    def select_slider(self, label: str, **options: Any) -> Any:
        return st.select_slider(label, self.parse.options, key=self.key, **options)

    def selectbox(self, label: str, **options: Any) -> Any:
        return st.selectbox(label, self.parse.options, key=self.key, **options)

    def radio(self, label: str, **options: Any) -> Any:
        return st.radio(label, self.parse.options, key=self.key, **options)

    def segmented_control(self, label: str, **options: Any) -> Any:
        return st.segmented_control(label, self.parse.options, key=self.key, **options)


class Params(tuple):
    """A view's parameters in order, each also by its key: ``PARAMS.seed.number_input("Seed")``."""

    def __new__(cls, *params: Param) -> Params:
        return super().__new__(cls, params)

    def __getattr__(self, key: str) -> Param:
        found = next((param for param in self if param.key == key), None)
        if found is None:
            raise AttributeError(f"no parameter {key!r} in this view, only {', '.join(param.key for param in self)}")
        return found


def mask_to_text(mask: Tensor) -> str:
    """A (T, T) boolean mask as compact text for a link: rows of 0/1 joined by "-" ("10-11" is causal for T = 2)."""
    return "-".join("".join("1" if allowed else "0" for allowed in row) for row in mask.tolist())


def mask_from_text(text: str) -> Tensor:
    """The (T, T) boolean mask ``mask_to_text`` wrote; ValueError with a readable reason for anything else."""
    rows = text.split("-")
    if not all(rows) or any(set(row) - {"0", "1"} for row in rows) or any(len(row) != len(rows) for row in rows):
        raise ValueError("expected T rows of T digits 0 or 1, joined by “-”")
    return torch.tensor([[digit == "1" for digit in row] for row in rows], dtype=torch.bool)  # (T, T)


@dataclass(frozen=True)
class Integer:
    """A whole number from ``low`` to ``high``: parses a link's text, and bounds the control that shows it."""

    low: int
    high: int

    @property
    def options(self) -> range:
        return range(self.low, self.high + 1)

    def __call__(self, raw: str) -> int:
        try:
            value = int(raw)
        except ValueError:
            raise ValueError(f"expected a whole number from {self.low} to {self.high}") from None
        if not self.low <= value <= self.high:
            raise ValueError(f"expected a whole number from {self.low} to {self.high}")
        return value


def integer_or(special: int, word: str, low: int, high: int) -> Callable[[str], int]:
    """A whole number from ``low`` to ``high``, or ``word`` for the number ``special`` (e.g. "all" for 0)."""
    within = Integer(low, high)

    def parse(raw: str) -> int:
        if raw.lower() == word:
            return special
        try:
            return within(raw)
        except ValueError:
            raise ValueError(f"expected {word} or a whole number from {low} to {high}") from None

    return parse


def format_integer_or(special: int, word: str) -> Callable[[int], str]:
    return lambda value: word if value == special else str(value)


@dataclass(frozen=True)
class Choice:
    """One of ``options``: parses a link's text, and lists the options of the control that shows it."""

    options: tuple[str, ...]  # any iterable of them: kept as a tuple

    def __post_init__(self):
        object.__setattr__(self, "options", tuple(self.options))

    def __call__(self, raw: str) -> str:
        if raw not in self.options:
            raise ValueError("expected one of " + ", ".join(self.options))
        return raw


@dataclass(frozen=True)
class Number:
    """A number from ``low`` to ``high``: parses a link's text, and bounds the control that shows it."""

    low: float
    high: float

    def __call__(self, raw: str) -> float:
        try:
            value = float(raw)
        except ValueError:
            value = math.nan
        if not self.low <= value <= self.high:  # also rejects nan
            raise ValueError(f"expected a number from {readable(self.low)} to {readable(self.high)}")
        return value


@dataclass(frozen=True)
class Nearest:
    """A positive number, moved to the nearest of ``options`` (on a log scale): "3" → 3.2; the options of the
    control that shows it."""

    options: tuple[float, ...]  # any sequence of them: kept as a tuple

    def __post_init__(self):
        object.__setattr__(self, "options", tuple(self.options))

    def __call__(self, raw: str) -> float:
        value = Number(min(self.options), max(self.options))(raw)
        return min(self.options, key=lambda option: abs(math.log(option / value)))

    def moves(self, raw: str) -> bool:
        """Whether a value it accepts is not one of ``options``, and so moves to the nearest ("3" → 3.2)."""
        return float(raw) != self(raw)


def mask_grid(max_size: int) -> Callable[[str], str]:
    """A custom attention mask as ``mask_to_text`` writes it, at most ``max_size`` × ``max_size``."""

    def parse(raw: str) -> str:
        if mask_from_text(raw).shape[0] > max_size:
            raise ValueError(f"expected at most {max_size} rows")
        return raw

    return parse


def whole_numbers(text: str) -> list[int]:
    """The whole numbers of a comma-separated list ("3, 4" → [3, 4]); ValueError if one is not."""
    try:
        return [int(part) for part in text.split(",")]
    except ValueError:
        raise ValueError("expected whole numbers separated by commas") from None


def lengths(max_count: int, max_each: int) -> Callable[[str], str]:
    """Lengths such as "3,4": 1 to ``max_count`` whole numbers from 1 to ``max_each``, separated by commas."""

    def parse(raw: str) -> str:
        numbers = whole_numbers(raw)
        if not 1 <= len(numbers) <= max_count or not all(1 <= n <= max_each for n in numbers):
            raise ValueError(f"expected 1 to {max_count} whole numbers from 1 to {max_each}, separated by commas")
        return raw

    return parse


def format_number(value: float) -> str:
    return f"{value:g}"


def readable(value: float) -> str:
    """A number as a message writes it: 1,048,576 (not 1.04858e+06), 0.01."""
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:g}"


def text(raw: str) -> str:
    return raw


def on_off(raw: str) -> bool:
    if raw.lower() in ("on", "true", "1", "yes"):
        return True
    if raw.lower() in ("off", "false", "0", "no"):
        return False
    raise ValueError("expected on or off")


def format_on_off(value: bool) -> str:
    return "on" if value else "off"


class Values:
    """A view's parameters read by name: ``values.seed`` is the live value of its ``Param("seed", ...)``, restored
    from the URL and checked by ``restore``. A name the view does not declare raises AttributeError at once."""

    def __init__(self, params: Iterable[Param]):
        self._keys = tuple(param.key for param in params)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name not in self._keys:
            raise AttributeError(f"no parameter {name!r} in this view, only {', '.join(self._keys)}")
        return st.session_state[name]


def from_link(param: Param) -> Any:
    """``param``'s value in the link, or its default where the link has none or one it does not understand."""
    try:
        return param.parse(st.query_params[param.key])
    except (KeyError, ValueError):
        return param.default


def history_navigation() -> bool:
    """Whether this run follows the browser's Back or Forward button (Streamlit's request for the run says so): the
    address then holds the values the user went back to, and wins over the controls' live ones."""
    context = get_script_run_ctx(suppress_warning=True)
    return context is not None and context.is_history_navigation


def restore(params: Iterable[Param], navigated: bool) -> list[str]:
    """Before the controls: give each control not yet on screen, or every control after Back or Forward
    (``navigated``: history_navigation), its value from the URL. Returns the values not used as given, each with its
    reason (for ``report_ignored``): the link's, and text typed into a box whose parameter refuses it (``Param.typed``:
    document lengths "3, x"). The values taken from the link are recorded (LINKED), for ``keep_in`` to say which of
    them the other settings do not offer."""
    problems, linked = [], {}
    for param in params:
        if param.key in st.session_state and not navigated:
            value = st.session_state[param.key]
            if param.typed and not param.accepts(value):
                problems.append(f"{param.key} = “{escape_markdown(value[:40])}”: {_reason(param, value)}; its default is used")
            # Written back even when accepted: Streamlit forgets the value of a control that a run does not draw
            # (one in a section not on screen), and one drawn again would show its first option, not this value.
            st.session_state[param.key] = value if param.accepts(value) else param.default
            continue  # the control is live: the user's latest choice wins
        raw = st.query_params.get(param.key)
        value = param.default
        if raw is not None:
            try:
                value = param.parse(raw)
            except ValueError as reason:
                problems.append(f"{param.key} = “{escape_markdown(raw[:40])}”: {reason}; its default is used")
            else:
                linked[param.key] = raw
                if isinstance(param.parse, Nearest) and param.parse.moves(raw):
                    problems.append(
                        f"{param.key} = “{escape_markdown(raw[:40])}”: not offered here, the nearest, {readable(value)}, used"
                    )
        st.session_state[param.key] = value
    if linked:
        st.session_state[LINKED] = linked
    return problems


def unknown_in_link(known: Iterable[str]) -> list[str]:
    """The link's parameters that are not among ``known`` (a view's), each with its reason, taken out of the URL so
    that a link copied from the page is clean. A campaign's tags (utm_source, …) that a site appends are no one's
    typing and are left as they are."""
    known = set(known)
    problems = []
    for key in sorted(set(st.query_params) - known):
        if key.startswith("utm_"):
            continue
        close = difflib.get_close_matches(key.lower(), known, n=1)
        guess = f" (did you mean “{close[0]}”?)" if close else ""
        name = key[:40] + ("…" if len(key) > 40 else "")
        problems.append(f"“{escape_markdown(name)}”: this view has no setting of that name{guess}")
        st.query_params.pop(key)
    return problems


def _reason(param: Param, raw: str) -> str:
    try:
        param.parse(raw)
    except ValueError as reason:
        return str(reason)
    return "not a value of this control"


def report_ignored(problems: list[str]) -> None:
    """The values not used as given (``restore``'s answer), if any."""
    if problems:
        st.warning("Some values were not used as given:\n\n- " + "\n- ".join(problems))


def keep_in(key: str, options: Sequence[Any], fallback: Any, why: str = "not offered with the other settings") -> Any:
    """Before a control whose options depend on other controls (a token of the text, one of h heads):
    a value that is no longer one of ``options`` (or not even of their type) becomes ``fallback``. Where that value
    is a link's (``restore``), the link's report says so, with ``why`` and the value used."""
    value = st.session_state.get(key)
    if not any(type(value) is type(option) and value == option for option in options):
        value = fallback
        raw = st.session_state.get(LINKED, {}).pop(key, None)
        if raw is not None:
            shown = readable(value) if type(value) in (int, float) else f"“{escape_markdown(str(value)[:40])}”"
            problem = f"{key} = “{escape_markdown(raw[:40])}”: {why}; {shown} used"
            st.session_state[IGNORED] = [*st.session_state.get(IGNORED, []), problem]
            # The app's change, not the user's: the report stays (attn_ui.page.setup compares with these values).
            st.session_state.get(PUBLISHED, {})[key] = value
    # Written back even when unchanged: the widget then sends the browser its label anew, so a label that changed
    # with the text ("3: cats" -> "3: black") is shown at once, and is not sent back stale at the next change.
    st.session_state[key] = value
    return value


def keep_index(key: str, count: int, fallback: int, counted: str) -> int:
    """``keep_in`` for a position among ``count`` (a token of the sentence, a head): a link's past the end is said
    with ``counted`` ("the sentence has 2 tokens") and the positions there are ("0 to 1")."""
    return keep_in(key, range(count), fallback, why=f"{counted} (0 to {count - 1})")


def publish(params: Iterable[Param]) -> None:
    """After the controls: write their current values to the URL (defaults are left out)."""
    for param in params:
        value = st.session_state.get(param.key, param.default)
        formatted = param.format(value)
        if value == param.default or len(formatted) > MAX_URL_VALUE:
            st.query_params.pop(param.key, None)
        else:
            st.query_params[param.key] = formatted
