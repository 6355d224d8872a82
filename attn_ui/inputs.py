"""Turning what the user typed into tokens, with a clear message for odd input."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from attn_core import MiniLM, tokenize
from attn_core.real_model import SPECIAL_TOKENS, Encoded
from attn_ui import callbacks

if TYPE_CHECKING:  # attn_ui.url_state imports this module
    from attn_ui.url_state import Values

MAX_CHARS = 20_000  # characters read from a text box; the rest is ignored
SENTENCE_SEPARATOR = "|"
MARKDOWN_SPECIALS = set("\\`*_{}[]<>()#+-.!|~$:")  # ":" too: ":red[x]" would be red
# Where GFM makes a link of a bare address (http://, https://, www., an e-mail's @), escaped or not: an invisible
# word joiner there keeps the text as typed and no link.
BARE_LINKS = re.compile(r"(?i)(?<=http)(?=s?:)|(?<=www)(?=\.)|(?<=@)")


def escape_markdown(text: str) -> str:
    """User text made safe to put in st.markdown, st.info...: shown as typed, never as Markdown, HTML or a link."""
    return "".join("\\" + char if char in MARKDOWN_SPECIALS else char for char in BARE_LINKS.sub("\u2060", text))


def fixed_size(label: str, value: int | None, why: str) -> None:
    """A size that an example or the real model fixes, shown (disabled) in place of its control."""
    st.number_input(label, value=value, disabled=True, placeholder="—", help=why, key=f"fixed {label}")


@callbacks.needing("text")
def keep_first_tokens(limit: int) -> None:
    """The view's text ("text" in its state), each sentence cut to its first ``limit`` tokens."""
    sentences = st.session_state["text"][:MAX_CHARS].split(SENTENCE_SEPARATOR)
    st.session_state["text"] = f" {SENTENCE_SEPARATOR} ".join(" ".join(tokenize(part)[:limit]) for part in sentences)


def showing_example(example: str) -> None:
    st.info(f"There are no words to attend to yet, so this shows the example “{example}”. Type a sentence to see yours.")


def tokens_from_text(text: str, limit: int, example: str | None = None, name: str = "Your text") -> list[str]:
    """Tokens of ``text``, cut to ``limit`` with a notice.

    With no tokens at all, the example's tokens (and a message saying so), or [] without an example.
    """
    tokens = tokenize(text[:MAX_CHARS])
    if not tokens and example is not None:
        showing_example(example)
        return tokenize(example)
    if len(tokens) > limit:
        more = "+" if len(text) > MAX_CHARS else ""
        st.warning(f"{name} has {len(tokens):,}{more} tokens; this view shows the first {limit}.")
        return tokens[:limit]
    return tokens


def sentences_from_text(text: str, max_sentences: int, limit: int, example: str) -> list[list[str]]:
    """The token lists of the sentences in ``text``, separated by "|", with a clear message for odd input.

    Sentences without tokens are skipped; with none left, the example's sentences are used.
    At most ``max_sentences`` sentences of at most ``limit`` tokens each.
    """
    parts = [part for part in text[:MAX_CHARS].split(SENTENCE_SEPARATOR) if tokenize(part)]
    if not parts:
        st.info(
            "There are no sentences to attend to yet, so this shows the example. "
            f"Type sentences separated by “{SENTENCE_SEPARATOR}” to see yours."
        )
        parts = example.split(SENTENCE_SEPARATOR)
    if len(parts) > max_sentences:
        st.warning(f"You typed {len(parts)} sentences; this view uses the first {max_sentences}.")
        parts = parts[:max_sentences]
    return [tokens_from_text(part, limit, name=f"Sentence {i + 1}") for i, part in enumerate(parts)]


def model_tokens(model: MiniLM, text: str, limit: int, example: str) -> Encoded:
    """``text`` as the real model's word pieces, cut to ``limit`` with a notice; the example's when it is empty."""
    if not text.strip():
        showing_example(example)
        text = example
    encoded = model.encode([text[:MAX_CHARS]], limit)
    if all(token in SPECIAL_TOKENS for token in encoded.tokens[0]):  # invisible characters only, or a typed [SEP]
        st.info(
            "Your text has no word pieces of its own (only characters the model skips, or [CLS] and [SEP]), "
            f"so this shows the example “{example}”."
        )
        encoded = model.encode([example], limit)
    if encoded.was_cut(0):
        more = "+" if len(text) > MAX_CHARS else ""
        st.warning(
            f"Your text has {encoded.full_lengths[0]:,}{more} word pieces ([CLS] and [SEP] included); "
            f"the model reads the first {limit}."
        )
    if "[UNK]" in encoded.tokens[0]:
        st.caption("[UNK] stands for characters the model's vocabulary lacks, such as most emoji.")
    return encoded


def word_and_sentences(where: DeltaGenerator, values: Values, max_sentences: int) -> tuple[str, ...]:
    """The controls of one word compared across sentences (the view's parameters "word" and "sentences"), drawn in
    ``where``; returns the sentences typed, one per line, at most ``max_sentences`` (more are said and left out)."""
    with where:
        left, right = st.columns([1, 2])
        left.text_input("Word", key="word")
        right.text_area("Sentences, one per line", key="sentences")
    sentences = [line.strip() for line in values.sentences[:MAX_CHARS].splitlines() if line.strip()]
    if len(sentences) > max_sentences:
        st.warning(f"{len(sentences)} sentences given; this compares the first {max_sentences}.")
    return tuple(sentences[:max_sentences])
