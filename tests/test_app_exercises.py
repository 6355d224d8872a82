"""Exercises (attn_ui.exercises): a question asked before the slide's charts are shown, checked against the numbers
the engine computes for that slide (the shipped lessons' examples and other sentences), wrong answers marked wrong,
the charts revealed with a reason, and the lesson's score at its end."""

from __future__ import annotations

import numpy as np
import pytest

from attn_core import embed_tokens, multi_head_attention, multi_head_projections, sinusoidal
from attn_core.bench import reference_results
from attn_core.examples import COREFERENCE_SENTENCES
from attn_core.masks import causal_mask, document_lengths, document_mask, global_local_mask
from attn_core.scaling import D_K_VALUES, dot_product_variance, softmax_saturation
from attn_core.text import tokenize
from attn_core.walkthrough import build_walkthrough
from attn_ui.exercises import HIDDEN_STYLE, SHOWN_STYLE, answer, slide_matrices
from attn_ui.lessons import available, load
from attn_ui.page import VIEWS
from tests.conftest import assert_clean, chart_frames, open_view, shown, texts

LECTURE, MASKS = "self-attention-in-one-lecture", "masks-of-todays-models"
SENTENCES = [
    None,  # the step's own example
    "The animal did not cross the street because it was too tired",
    "Ünïcode café 東京 <b>bold</b> & friends",
    "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen",
]
STEP = {"pipeline value": 4, "pipeline largest": 5, "variance ratio": 8, "largest weight": 9, "one head": 13}
SEEDS = [0, 1, 7, 12345]  # the Scaling view's random vectors: the step's own, and three others


def open_step(lesson: str, number: int, text: str | None = None, more: dict | None = None):
    """Step ``number`` of a shipped lesson by its own link (``text``: another sentence in it; ``more``: other values)."""
    step = load(available()[lesson]).steps[number - 1]
    view = {view.url_path: view.path for view in VIEWS}[step.view]
    query = (
        step.query
        | {"present": "on", "lesson": lesson, "lesson_step": str(number)}
        | (more or {})
        | ({"text": text} if text else {})
    )
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


def marked(at) -> list[dict]:
    """The cells, bars and points the charts on the page mark (an exercise's answer on its reveal)."""
    return [
        row
        for rows in chart_frames(at)
        for row in rows
        if row.get("marked") is True or "marked" in (row.get("source"), row.get("series"))
    ]


def assert_marks_the_answer(at, expected) -> None:
    """The chart of the matrix asked about marks the answer's cells: a heatmap's cells and a bar at their positions,
    a line chart's points at their values."""
    values, _, _ = slide_matrices(at.session_state["_shown"])[expected.matrix]
    found = marked(at)
    assert len(found) == len(expected.cells), (expected, found)
    if "col" in found[0]:  # a heatmap's cells
        assert sorted((cell["row"], cell["col"]) for cell in found) == sorted(expected.cells)
    elif "position" in found[0]:  # bars
        assert sorted(bar["position"] for bar in found) == sorted(c for _, c in expected.cells)
    else:  # points, each on its series' curve at the answer's value
        ys = [v for point in found for k, v in point.items() if k not in ("source", "series")]
        assert all(any(y == pytest.approx(values[r, c], rel=1e-6) for y in ys) for r, c in expected.cells), found


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


@pytest.mark.parametrize("text", SENTENCES, ids=["example", "it", "unicode", "sixteen words"])
def test_where_it_looks_in_one_head_is_the_engines_argmax(text):
    """Multi-head, head 1 of 4 (C = 32): the key “it” attends to most (the last token where the sentence has no “it”)."""
    tokens = tokenize(text) if text else tokenize(COREFERENCE_SENTENCES[0])
    x = embed_tokens(tokens, 32, 0) + sinusoidal(len(tokens), 32)  # (T, C)
    weights = multi_head_attention(x, *multi_head_projections(32, 0), 4).heads.weights  # (h, T, T)
    row = tokens.index("it") if "it" in tokens else len(tokens) - 1
    best = tokens[int(weights[1, row].argmax())]
    at = open_step(LECTURE, STEP["one head"], text)
    assert hidden(at) and f"Which key does “{tokens[row]}” attend to most?" in " ".join(m.value for m in at.markdown)
    assert verdict(give(at, best)).startswith("Right.")


@pytest.mark.parametrize("seed", SEEDS)
def test_the_variance_growth_and_the_largest_weight_are_the_engines(seed):
    """Scaling: the measured Var(q·k) from d_k = 16 to 64 (about 4), and the unscaled largest weight at d_k = 512."""
    variance, saturation = dot_product_variance(seed), softmax_saturation(seed)
    at_16, at_64, at_512 = (D_K_VALUES.index(d_k) for d_k in (16, 64, 512))
    ratio = float(variance.unscaled[at_64] / variance.unscaled[at_16])
    largest = float(saturation.unscaled.max_weight[at_512])
    assert 3 < ratio < 5.5 and largest > 0.5
    seeded = {"seed": str(seed)}
    assert verdict(give(open_step(LECTURE, STEP["variance ratio"], more=seeded), round(ratio, 2))).startswith("Right.")
    assert verdict(give(open_step(LECTURE, STEP["variance ratio"], more=seeded), ratio * 1.2)).startswith("Not quite")
    assert verdict(give(open_step(LECTURE, STEP["largest weight"], more=seeded), round(largest, 2))).startswith("Right.")
    assert verdict(give(open_step(LECTURE, STEP["largest weight"], more=seeded), largest - 0.1)).startswith("Not quite")


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
    ratio = answer(
        {"ask": "ratio", "matrix": "Attention weights", "row": 1, "column": 0, "to": "it", "question": "Why?"}, matrices
    )
    assert ratio.value == pytest.approx(7) and ratio.accepts(7.6) and not ratio.accepts(7.8) and ratio.question == "Why?"
    assert (largest.matrix, largest.cells, count.cells, value.cells, ratio.cells) == (
        "Attention weights",
        ((2, 2),),
        ((0, 0), (0, 1)),
        ((1, 2),),
        ((1, 0), (1, 2)),
    )
    smallest = answer({"ask": "smallest", "matrix": "Attention weights", "row": 1}, matrices)
    assert smallest.value == "a" and smallest.cells == ((1, 0),) and "“a” has the smallest value" in smallest.reason
    lowest_row = answer({"ask": "smallest", "matrix": "Attention weights", "column": "it"}, matrices)  # a row of a column
    assert lowest_row.value == "a" and lowest_row.options == ("a", "b", "it") and lowest_row.cells == ((0, 2),)
    assert lowest_row.reason.startswith("“a” has the smallest value at “it”: 0")
    one = {"One token": (np.array([[-0.0]]), ["x"], ["x"])}  # a one-token sentence's entropy, and its one key
    assert answer({"ask": "largest", "matrix": "One token"}, one).reason == "“x” has the largest value in the row of “x”: 0."
    assert answer({"ask": "count", "matrix": "Attention weights", "row": 1}, matrices).reason.count("entries") == 1
    assert (
        "has 1 entry neither zero nor masked: “a”."
        in answer({"ask": "count", "matrix": "One token"}, {"One token": (np.array([[1.0]]), ["a"], ["a"])}).reason
    )
    for spec, message in [
        ({"ask": "guess", "matrix": "Attention weights"}, "expected one of largest, smallest, count, value, ratio"),
        ({"ask": "count", "matrix": "Scores"}, "is not drawn on this slide, whose matrices are: Attention weights"),
    ]:
        with pytest.raises(ValueError, match=message):
            answer(spec, matrices)


SHIPPED_EXERCISES = [
    (name, number) for name, path in available().items() for number, step in enumerate(load(path).steps, 1) if step.exercise
]


def about_the_sentence(at, expected) -> bool:
    """Whether the matrix asked about is labelled with the tokens of the view's sentence (so another sentence asks
    another question); a view without a sentence, or a chart of model sizes or lengths, is not."""
    text = at.session_state["text"] if "text" in at.session_state else ""
    _, rows, columns = slide_matrices(at.session_state["_shown"])[expected.matrix]
    return bool({token.lower() for token in tokenize(text)} & {label.lower() for label in rows + columns})


@pytest.mark.parametrize("lesson, number", SHIPPED_EXERCISES, ids=lambda value: str(value))
def test_every_shipped_exercise_asks_before_the_charts_and_accepts_what_they_draw(lesson, number):
    """Each exercise of the shipped lessons, on its step's example and, where it asks about the sentence, on three
    other sentences: asked with the charts out of sight, its answer the one the slide's own numbers give
    (slide_matrices), marked in its chart on the reveal; a wrong answer marked wrong. A question about a Training run
    waits for *Train*."""
    step = load(available()[lesson]).steps[number - 1]
    at = open_step(lesson, number)
    train = [button for button in at.button if button.label == "Train"]
    if train:  # not trained yet in this process: no question until the run is drawn
        assert "This step's question comes with the slide's charts." in texts(at, "info")
        assert not [button for button in at.button if button.key == "_exercise_check"]
        train[0].click().run()
    expected = answer(step.exercise, slide_matrices(at.session_state["_shown"]))
    for text in [None, *(SENTENCES[1:] if about_the_sentence(at, expected) else [])]:
        if text is not None:
            at = open_step(lesson, number, text)
            expected = answer(step.exercise, slide_matrices(at.session_state["_shown"]))
        assert hidden(at) and not marked(at)  # nothing gives the answer away
        wrong = (
            next(o for o in expected.options if o != expected.value)
            if expected.kind == "token"
            else expected.value + 1 + 2 * expected.tolerance
        )
        assert verdict(give(at, expected.value)).startswith("Right.") and not hidden(at), text
        assert_marks_the_answer(at, expected)
        assert verdict(give(open_step(lesson, number, text), wrong)).startswith("Not quite"), text


def test_the_answers_pills_show_the_tokens_as_typed_and_answer_with_them():
    """Pills render their labels as Markdown: a token "_cat_" would be an italic "cat"."""
    at = open_step(LECTURE, STEP["pipeline largest"], "the _cat_ sat on a mat")
    pills = [option.content for option in at.pills(key="_exercise_given").proto.options]
    assert [shown(label) for label in pills] == ["the", "_cat_", "sat", "on", "a", "mat"] and "_cat_" not in pills
    assert verdict(give(at, "_cat_")).startswith(("Right.", "Not quite"))  # the value is the token itself


def test_an_exercise_that_names_no_matrix_of_its_slide_says_so_and_the_slide_shows(tmp_path, monkeypatch):
    from attn_ui import lessons

    (tmp_path / "typo.toml").write_text(
        'title = "A typo"\n[[steps]]\ntitle = "Weights"\nlink = "/Pipeline?slide=4&part=2"\n'
        'exercise = { ask = "largest", matrix = "*Atention* weights" }\n'
    )
    monkeypatch.setattr(lessons, "LESSONS", tmp_path)
    at = open_view(None, lesson="typo")
    assert_clean(at)
    warning = " ".join(texts(at, "warning"))
    expected = "Step 1's exercise cannot be asked: matrix = '*Atention* weights' is not drawn on this slide"
    assert expected in shown(warning) and "*Atention*" not in warning  # the file's text as typed, not in italics
    assert "Attention weights" in warning and any(SHOWN_STYLE in block.proto.body for block in at.get("html"))  # charts shown


def test_the_time_growth_when_t_doubles_is_the_reference_results():
    """Cost: naive attention's time from T = 1,024 to 2,048 in the shipped reference results (about 4: T² pairs)."""
    median = {p.T: p.median_ms for p in reference_results().points if p.method == "naive" and p.mask == "none"}
    ratio = median[2048] / median[1024]
    assert 3 < ratio < 5
    number = next(n for n, step in enumerate(load(available()[LECTURE]).steps, 1) if step.view == "Cost" and step.exercise)
    assert verdict(give(open_step(LECTURE, number), round(ratio, 2))).startswith("Right.")
    assert verdict(give(open_step(LECTURE, number), 2.0)).startswith("Not quite")  # the guess of a linear cost


def test_the_head_that_follows_it_is_the_engines():
    """Real model: in layer 4, the head whose (→animal − →street) from “it” grows most between the two sentences, as
    attn_core.coreference computes it with MiniLM."""
    from attn_core import MiniLM
    from attn_core.real_model.analysis import coreference

    change = coreference(MiniLM.load(), list(COREFERENCE_SENTENCES[:2]), "it", ["animal", "street"]).change  # (layers, heads)
    best = f"head {int(change[4].argmax())}"
    number = next(n for n, step in enumerate(load(available()[LECTURE]).steps, 1) if step.view == "Real_model" and step.exercise)
    at = open_step(LECTURE, number)
    assert hidden(at)
    assert verdict(give(at, best)).startswith("Right.")
    assert verdict(give(open_step(LECTURE, number), "head 0" if best != "head 0" else "head 1")).startswith("Not quite")
