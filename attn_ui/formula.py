"""A step's LaTeX formula written out in plain Unicode, for a chart's subtitle (Vega-Lite draws text, not LaTeX):
``A = \\operatorname{softmax}_{\\text{keys}}(S')`` becomes ``A = softmax_keys(S')``.

It knows the commands the views' formulas use; an unknown command keeps its name without the backslash.
"""

from __future__ import annotations

import re

SYMBOLS = {
    "top": "ᵀ",
    "times": "×",
    "in": "∈",
    "cdot": "·",
    "infty": "∞",
    "dots": "…",
    "leftarrow": "←",
    "to": "→",
    "sum": "Σ",
    "partial": "∂",
    "wedge": "∧",
    "vee": "∨",
    "le": "≤",
    "ge": "≥",
    "{": "{",
    "}": "}",
    "left": "",
    "right": "",
}
SPACES = {",": " ", ";": " ", "!": "", " ": " ", "quad": "  "}
WORDS = ("text", "operatorname", "mathrm")  # \text{keys} -> keys
SUPERSCRIPT_DIGITS = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")
GROUP = r"\{([^{}]*)\}"  # a brace group without braces inside; formulas are rewritten from the innermost out


def plain_formula(latex: str) -> str:
    """``latex`` in plain Unicode."""
    text = latex
    previous = None
    while text != previous:  # innermost groups first, until nothing changes
        previous = text
        text = re.sub(rf"\\(?:{'|'.join(WORDS)}){GROUP}", r"\1", text)
        text = re.sub(rf"\\mathbb{GROUP}", lambda m: {"R": "ℝ"}.get(m[1], m[1]), text)
        text = re.sub(rf"\\sqrt{GROUP}", lambda m: "√" + _grouped(m[1]), text)
        text = re.sub(rf"\\frac{GROUP}{GROUP}", lambda m: f"{_grouped(m[1])}/{_grouped(m[2])}", text)
        text = re.sub(rf"\^{GROUP}", lambda m: _superscript(m[1]), text)
        text = re.sub(rf"_{GROUP}", lambda m: "_" + _grouped(m[1].replace(" ", "")), text)
    text = re.sub(r"\\([A-Za-z]+|.)", _command, text)
    text = re.sub(r"\^(\w)", lambda m: _superscript(m[1]), text)
    return re.sub(r" {2,}", " ", text).strip()


def _command(match: re.Match) -> str:
    name = match[1]
    return SPACES.get(name, SYMBOLS.get(name, name))


def _grouped(text: str) -> str:
    """``text`` as one term: in parentheses where it has spaces or operators."""
    text = text.strip()
    return text if re.fullmatch(r"[\w.√ᵀ']+", text) else f"({text})"


def _superscript(text: str) -> str:
    text = text.strip()
    if text.isdigit():
        return text.translate(SUPERSCRIPT_DIGITS)
    return text if text in ("ᵀ", r"\top") else "^" + _grouped(text)
