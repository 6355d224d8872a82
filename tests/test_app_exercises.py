"""Exercises (attn_ui.exercises): a question asked before the slide's charts are shown, checked against the numbers
the engine computes for that slide (the shipped lessons' examples and other sentences), wrong answers marked wrong,
the charts revealed with a reason, and the lesson's score at its end."""

from __future__ import annotations

import numpy as np
import pytest

from attn_core.masks import causal_mask, document_lengths, document_mask, global_local_mask
from attn_core.text import tokenize
from attn_core.walkthrough import build_walkthrough
from attn_ui.exercises import HIDDEN_STYLE, answer
from attn_ui.lessons import available, load
from tests.conftest import assert_clean, open_view, texts

LECTURE, MASKS = "self-attention-in-one-lecture", "masks-of-todays-models"
SENTENCES = [
    None,  # the step's own example
    "The animal did not cross the street because it was too tired",
    "Ünïcode café 東京 <b>bold</b> & friends",
    "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen",
]
STEP = {"pipeline value": 4, "pipeline largest": 5}


def open_step(lesson: str, number: int, text: str | None = None):
    """Step ``number`` of a shipped lesson by its own link (``text``: another sentence in it)."""
    step = load(available()[lesson]).steps[number - 1]
    view = {"Pipeline": "pages/1_Pipeline.py", "Masking": "pages/3_Masking.py"}[step.view]
    query = step.query | {"present": "on", "lesson": lesson, "lesson_step": str(number)} | ({"text": text} if text else {})
    at = open_view(view, **query)
    assert_clean(at)
    return at


def hidden(at) -> bool:
    return any(HIDDEN_STYLE in block.proto.body for block in at.get("html"))


def give(at, value):
    """Answer the open exercise (a token's pill or a number) and press Check."""
    if isinstance(value, str):
        at.pills(key="_exercise_given").set_value(value).run()
    else:
        at.number_input(key="_exercise_given").set_value(value).run()
    next(button for button in at.button if button.key == "_exercise_check").click().run()
    assert_clean(at)
    return at


def verdict(at) -> str:
    return " ".join(texts(at, "success") + texts(at, "error")).replace("\\", "")  # Markdown escapes off


def pipeline_steps(text: str | None):
    tokens = tokenize(text) if text else tokenize("I am going to play")
    steps = build_walkthrough("custom", tokens, 16, 8, seed=0, scaled=True).steps
    return tokens, steps


@pytest.mark.parametrize("text", SENTENCES, ids=["example", "it", "unicode", "sixteen words"])
def test_which_key_a_token_attends_to_most_is_the_engines_argmax(text):
    tokens, steps = pipeline_steps(text)
    best = tokens[int(steps.weights[0, -1].argmax())]  # the last token's row
    at = open_step(LECTURE, STEP["pipeline largest"], text)
    assert hidden(at) and f"Which key does “{tokens[-1]}” attend to most?" in " ".join(m.value for m in at.markdown)
    give(at, best)
    assert verdict(at).startswith("Right.") and not hidden(at)
    assert at.get("vega_lite_chart")  # the reveal shows the charts

    wrong = next(token for token in tokens if token != best)
    at = give(open_step(LECTURE, STEP["pipeline largest"], text), wrong)
    assert verdict(at).startswith("Not quite") and f"“{best}” has the largest value" in verdict(at)


@pytest.mark.parametrize("text", SENTENCES, ids=["example", "it", "unicode", "sixteen words"])
def test_a_scaled_score_is_the_engines_to_a_hundredth(text):
    _, steps = pipeline_steps(text)
    exact = float(steps.scaled[0, 0, 0])
    assert verdict(give(open_step(LECTURE, STEP["pipeline value"], text), round(exact, 2))).startswith("Right.")
    assert verdict(give(open_step(LECTURE, STEP["pipeline value"], text), exact + 0.05)).startswith("Not quite")


@pytest.mark.parametrize("t", [7, 6, 12])
def test_how_many_keys_a_token_sees_under_the_masks_of_todays_models(t):
    """The masks lesson's three counts (causal, packed documents 3, 3, 1, global + local w = 3 with one global token)
    against the engine's masks, on a sentence of t tokens."""
    text = " ".join(f"w{i}" for i in range(t))
    documents = document_mask(document_lengths([3, 3, 1], t), t)
    expected = {1: causal_mask(t)[3], 3: documents[4], 5: global_local_mask(t, 3, 1)[5]}
    for number, row in expected.items():
        at = open_step(MASKS, number, text)
        assert hidden(at)
        assert verdict(give(at, float(row.sum()))).startswith("Right."), (number, t)
        assert verdict(give(open_step(MASKS, number, text), float(row.sum()) + 1)).startswith("Not quite")


def test_the_lessons_last_step_counts_the_right_answers():
    at = open_view(None, lesson=MASKS)
    give(at, 4.0)  # step 1: token 3 sees 4 keys under the causal mask (right)
    for number in range(2, 10):
        next(button for button in at.button if button.key == "slide_next").click().run()
        if number == 3:
            give(at, 1.0)  # wrong: 3 keys
    assert "Exercises of this lesson: 1 of 3 answered right." in texts(at, "info")


def test_a_question_is_computed_from_the_matrix_it_names():
    weights = np.array([[0.7, 0.3, 0.0], [0.1, 0.2, 0.7], [0.3, 0.3, 0.4]])
    matrices = {"Attention weights": (weights, ["a", "b", "it"], ["a", "b", "it"])}
    largest = answer({"ask": "largest", "matrix": "Attention", "row": "it"}, matrices)
    assert (
        largest.question == "Which key does “it” attend to most?"
        and largest.value == "it"
        and largest.options == ("a", "b", "it")
    )
    assert answer({"ask": "largest", "matrix": "Attention weights", "row": "absent"}, matrices).value == "it"  # the last row
    count = answer({"ask": "count", "matrix": "Attention weights", "row": 0}, matrices)
    assert count.value == 2 and count.accepts(2) and not count.accepts(3) and "“a”, “b”" in count.reason
    value = answer({"ask": "value", "matrix": "Attention weights", "row": 1, "column": -1, "tolerance": 0.05}, matrices)
    assert value.value == pytest.approx(0.7) and value.accepts(0.74) and not value.accepts(0.76)
    for spec, message in [
        ({"ask": "guess", "matrix": "Attention weights"}, "expected one of largest, count, value"),
        ({"ask": "count", "matrix": "Scores"}, "is not drawn on this slide, whose matrices are: Attention weights"),
    ]:
        with pytest.raises(ValueError, match=message):
            answer(spec, matrices)
