"""Links people have shared keep opening the same view with the same settings (README's examples, issue 39)."""

from __future__ import annotations

from urllib.parse import parse_qsl, urlsplit

import pytest

from attn_ui import url_state
from attn_ui.page import COST, MULTI_HEAD, PIPELINE, PRESENTER, VIEWS
from tests.conftest import assert_clean, open_view, texts
from tests.test_fuzz import PARAMS

LINKS = (
    "/Pipeline?preset=playing-outside&query=0&slide=6",
    "/Pipeline?text=The+bank+by+the+river&seed=3&d_model=32&d_k=8&scale=off",
    "/Pipeline?weights=minilm&layer=2&head=3",
    "/Pipeline?present=on&slide=4",
    "/Scaling?d_k=256&seed=3",
    "/Masking?present=on&slide=2",
    "/Masking?text=a+b&mask=custom&grid=10-11",
    "/Masking?mask=window&window=2&slide=6&model_mask=global&global_window=4&n_global=2&tile_t=512",
    "/Masking?slide=6&documents=2,5&tile_t=1024&tile_block=64",
    "/Multi_head?d_model=64&heads=8&head=3",
    "/Cost?T_max=4096&heads=4&d_head=32&mask=causal",
    "/Cost?mask=documents&documents=8",
    "/Cost?mask=global&window=64&global_tokens=8&prefix=0",
    "/Real_model?layer=0&head=2",
    "/Training?task=marker&d_k=16&scaled=off",
    "/Positions?shuffle=3&positions=on&map=real&layer=1&head=4",
)


@pytest.mark.parametrize("link", LINKS)
def test_a_shared_link_opens_its_view_with_its_settings(link):
    address = urlsplit(link)
    view = next(view for view in VIEWS if "/" + view.url_path == address.path)
    query = dict(parse_qsl(address.query))
    at = open_view(view.path, **query)
    assert_clean(at)
    assert not [text for text in texts(at, "warning") if "values were not used as given" in text]
    params = {param.key: param for param in PARAMS[view.path] + PRESENTER}
    for key, raw in query.items():
        assert params[key].format(at.session_state[key]) == raw, key
    assert at.session_state["_view"] == view.path


def test_a_name_a_view_does_not_declare_fails_at_once_naming_those_it_does():
    """Pages read their controls as attributes (values.seed): a misspelt one fails on its first read."""
    values = url_state.Values((url_state.Param("seed", 0, int), url_state.Param("text", "", str)))
    with pytest.raises(AttributeError, match="no parameter 'sed' in this view, only seed, text"):
        getattr(values, "sed")  # noqa: B009


def test_a_links_unknown_parameters_are_named_with_a_guess_taken_out_of_the_address_and_the_view_works():
    """A link to "/Multi_head?Heads=8" holds a typo, not a request: the view says so (with the name it may have meant),
    drops it from the address a user copies and draws with its defaults (4 heads); a campaign's tags are left alone."""
    at = open_view(MULTI_HEAD.path, Heads="8", zzz="<b>1</b>", utm_source="newsletter")
    assert_clean(at)
    (ignored,) = [text for text in texts(at, "warning") if text.startswith("Some values were not used as given")]
    assert "“Heads”: this view has no setting of that name (did you mean “heads”?)" in ignored
    assert "“zzz”: this view has no setting of that name\n" in ignored + "\n" and "utm_source" not in ignored
    assert "Heads" not in at.query_params and "zzz" not in at.query_params
    assert at.query_params["utm_source"] == "newsletter" and at.session_state["heads"] == 4
    at.run()  # a rerun, no control changed: still said
    assert [text for text in texts(at, "warning") if text.startswith("Some values were not used as given")] == [ignored]


def test_the_home_page_names_a_links_unknown_parameters():
    at = open_view(None, foo="1")
    assert_clean(at)
    assert [text for text in texts(at, "warning") if "“foo”: this view has no setting of that name" in text]


def test_a_links_length_the_view_does_not_offer_moves_to_the_nearest_and_says_so():
    """Cost offers lengths by powers of two: "T_max=99999" draws up to the nearest offered, 131,072, and says so;
    one offered is taken without a word."""
    at = open_view(COST.path, T_max="99999")
    assert_clean(at)
    (said,) = [text for text in texts(at, "warning") if text.startswith("Some values were not used as given")]
    assert "T_max = “99999”: not offered here, the nearest, 131,072, used" in said
    assert at.session_state["T_max"] == 131_072 and at.query_params["T_max"] == "131072"
    at = open_view(COST.path, T_max="4096")
    assert not [text for text in texts(at, "warning") if text.startswith("Some values were not used as given")]


def warned_values(at) -> list[str]:
    return [text for text in texts(at, "warning") if text.startswith("Some values were not used as given")]


def test_a_links_value_the_other_settings_do_not_offer_is_moved_and_said_until_a_control_changes():
    """ "query=5" asks for the sixth token of a two-word sentence: the section that draws the query takes its last word
    and says so, with the reason, on every run until the user changes a control; a query the sentence has is kept
    without a word, and the same fallback after the user's own change of the sentence is not the link's to report."""
    at = open_view(PIPELINE.path, text="cats sleep", query="5", slide="6")
    assert_clean(at)
    (said,) = warned_values(at)
    assert "query = “5”: the sentence has 2 tokens (0 to 1); 1 used" in said
    assert at.session_state["query"] == 1 and at.query_params["query"] == "1"
    at.run()  # the rerun that follows the window's report of its size: no control changed
    assert warned_values(at) == [said]
    at.text_area(key="text").set_value("cats sleep all day").run()
    assert_clean(at)
    assert not warned_values(at) and at.session_state["query"] == 1  # the user's change: the query stays

    at = open_view(PIPELINE.path, text="cats sleep", query="0", slide="6")
    assert not warned_values(at) and at.session_state["query"] == 0
    at = open_view(PIPELINE.path, text="cats sleep all day", query="3", slide="6")  # the user's sentence, shortened
    at.text_area(key="text").set_value("cats sleep").run()
    assert_clean(at)
    assert not warned_values(at) and at.session_state["query"] == 1


def test_a_links_head_beyond_its_head_count_is_moved_and_said():
    at = open_view(MULTI_HEAD.path, heads="2", head="5", slide="3")
    assert_clean(at)
    (said,) = warned_values(at)
    assert "head = “5”: there are 2 heads (0 to 1); 1 used" in said and at.session_state["head"] == 1
