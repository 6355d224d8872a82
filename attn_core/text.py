"""A small tokenizer for typed text: words, punctuation and emoji.

Good enough to label rows of an attention matrix in any script:
- words are runs of letters, digits and combining marks, with inner
  apostrophes kept ("didn't" is one token);
- each punctuation mark, symbol or emoji is a token of its own, and an emoji
  keeps its modifiers (skin tone, variation selector, ZWJ sequences, flags);
- CJK ideographs and kana, written without spaces, are one token each;
- invisible format and control characters are dropped.
"""

from __future__ import annotations

import unicodedata

_APOSTROPHES = "'\u2019"
_ZWJ = "\u200d"
_KEYCAP = "\u20e3"


def _is_modifier(ch: str) -> bool:
    """Characters that belong to the token before them."""
    code = ord(ch)
    return (
        unicodedata.category(ch).startswith("M")  # combining marks, incl. variation selectors
        or ch in (_ZWJ, _KEYCAP)
        or 0x1F3FB <= code <= 0x1F3FF  # skin tones
        or 0xE0020 <= code <= 0xE007F  # tag characters (subdivision flags)
    )


def _is_regional_indicator(ch: str) -> bool:
    return 0x1F1E6 <= ord(ch) <= 0x1F1FF


def _is_wide_letter(ch: str) -> bool:
    """CJK ideographs, kana and hangul: tokens of one character each."""
    return unicodedata.category(ch) == "Lo" and unicodedata.east_asian_width(ch) in ("W", "F")


def _is_word_char(ch: str) -> bool:
    return unicodedata.category(ch)[0] in "LN" or ch == "_"


def _is_invisible(ch: str) -> bool:
    """Whitespace, control, format, surrogate and unassigned characters separate tokens."""
    return ch.isspace() or unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Cn")


def tokenize(text: str) -> list[str]:
    """Split text into word, punctuation and emoji tokens (text is NFC-normalized first)."""
    text = unicodedata.normalize("NFC", text)
    tokens: list[str] = []
    in_word = False  # the last token is a word that the next letter extends
    joined = False  # the last character was a ZWJ: the next one joins the last token
    can_attach = False  # the last character belongs to tokens[-1] (no gap since)
    for i, ch in enumerate(text):
        following = text[i + 1] if i + 1 < len(text) else ""
        if can_attach and (joined or _is_modifier(ch)):
            tokens[-1] += ch
            joined = ch == _ZWJ
            continue
        joined = False
        if _is_invisible(ch):
            in_word = can_attach = False
            continue
        if can_attach and _is_regional_indicator(ch) and len(tokens[-1]) == 1 and _is_regional_indicator(tokens[-1]):
            tokens[-1] += ch  # two regional indicators make one flag
        elif (in_word and _is_word_char(ch) and not _is_wide_letter(ch)) or (
            in_word and ch in _APOSTROPHES and _is_word_char(following)
        ):
            tokens[-1] += ch
        else:
            tokens.append(ch)
            in_word = _is_word_char(ch) and not _is_wide_letter(ch)
        can_attach = True
    return tokens


def last_word(tokens: list[str]) -> int:
    """The position of the last token that is a word (has a letter or digit and is not a [CLS] / [SEP] marker);
    the last position when there is none. A good default query: "play" in "I am going to play", not [SEP] or "."."""
    words = [i for i, token in enumerate(tokens) if any(ch.isalnum() for ch in token) and not token.startswith("[")]
    return words[-1] if words else len(tokens) - 1
