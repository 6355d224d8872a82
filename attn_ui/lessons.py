"""Lessons: a lecture that walks across views. A lesson is a TOML file in lessons/, its name the file's name without
``.toml``:

    title = "The masks of today's models"

    [[steps]]
    title = "Causal: the look-ahead mask"
    link = "/Masking?slide=2&mask=causal"        # any view's link, as the app writes it (slide, part, parameters)
    notes = "What to say: the presenter's notes."
    exercise = { question = "…" }                 # optional

``load`` reads one. A step whose link names no view of the app, or is not a link, keeps its place and says what is
wrong (``problem``); the rest of the lesson works. Parameters and sections are checked by the view itself when the
step opens, as for any link.
"""

from __future__ import annotations

import functools
import json
import tomllib
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

from attn_ui.views import VIEWS

LESSONS = Path(__file__).resolve().parent.parent / "lessons"


@dataclass(frozen=True)
class Step:
    link: str  # "/Masking?slide=2&mask=causal"
    title: str
    notes: str
    exercise: dict | None
    problem: str | None = None  # why the step cannot open, naming it; None where it can

    @property
    def view(self) -> str:
        """The view's address ("Masking")."""
        return urlsplit(self.link).path.strip("/")

    @property
    def query(self) -> dict[str, str]:
        return dict(parse_qsl(urlsplit(self.link).query, keep_blank_values=True))


@dataclass(frozen=True)
class Lesson:
    title: str
    steps: tuple[Step, ...]


def available() -> dict[str, Path]:
    """The lessons shipped in lessons/, by name."""
    return {path.stem: path for path in sorted(LESSONS.glob("*.toml"))}


def load(path: Path | str) -> Lesson:
    """The lesson in a TOML file; ValueError naming the file for one that is not a lesson."""
    path = Path(path)
    try:
        return parse(path.read_text(encoding="utf-8"))
    except ValueError as error:
        raise ValueError(f"{path.name}: {error}") from None


@functools.lru_cache(maxsize=16)
def parse(text: str) -> Lesson:
    """A lesson from its TOML text (an uploaded file); ValueError saying what is missing. Kept per text: a run of a
    lesson's step reads its file a dozen times (the slide's bar, its exercise, its score)."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ValueError(f"not TOML ({error})") from None
    return from_data(data)


def from_data(data: dict) -> Lesson:
    """A lesson from a lesson file's tables (a TOML file read, or a lesson built in the app)."""
    steps = data.get("steps")
    if not isinstance(data.get("title"), str) or not isinstance(steps, list) or not steps:
        raise ValueError('a lesson has a title = "…" and at least one [[steps]] with a title and a link')
    return Lesson(data["title"], tuple(step_of(number, entry) for number, entry in enumerate(steps, 1)))


def step_of(number: int, entry: object) -> Step:
    """Step ``number`` of a lesson, with its problem where it has one."""
    if not isinstance(entry, dict):
        return Step("", f"Step {number}", "", None, f"Step {number} is not a table of title, link and notes.")
    title = str(entry.get("title") or f"Step {number}")
    link, exercise = str(entry.get("link", "")), entry.get("exercise")
    step = Step(link, title, str(entry.get("notes", "")), exercise if isinstance(exercise, dict) else None)
    views = {view.url_path for view in VIEWS}
    if not link.startswith("/"):
        problem = f"Step {number} (“{title}”) has no link to a view: its link is {link!r}."
    elif step.view not in views:
        problem = f"Step {number} (“{title}”) names no view of this app: “{step.view}”. The views: {', '.join(sorted(views))}."
    else:
        return step
    return Step(link, title, step.notes, step.exercise, problem)


def dump(lesson: Lesson) -> str:
    """``lesson`` as a lesson file, which ``parse`` reads back as the same lesson. Strings are written as JSON writes
    them, which TOML reads as basic strings."""
    lines = [f"title = {_toml(lesson.title)}"]
    for step in lesson.steps:
        lines += ["", "[[steps]]", f"title = {_toml(step.title)}", f"link = {_toml(step.link)}", f"notes = {_toml(step.notes)}"]
        lines += [f"exercise = {_toml(step.exercise)}"] if step.exercise is not None else []
    return "\n".join(lines) + "\n"


def _toml(value: object) -> str:
    """A TOML value: a string, a number, a boolean, a list, or an inline table (an exercise)."""
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{json.dumps(key)} = {_toml(item)}" for key, item in value.items()) + " }"
    if isinstance(value, list):
        return "[" + ", ".join(_toml(item) for item in value) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    return json.dumps(value, ensure_ascii=False)


def shipped() -> dict[str, Lesson]:
    """The lessons in lessons/ that load, by name."""
    found = {}
    for name, path in available().items():
        try:
            found[name] = load(path)
        except ValueError:
            continue  # a file being written, or not a lesson: its link says why when followed
    return found
