"""The mask studio's model: two masks of the gallery combined (and, or, and not, not), a score modification on top,
their link texts, and the FlexAttention code that reproduces them.

A term is a gallery mask with its sizes, written in a link as "name:size=value:size=value" ("sliding_window:window=3",
"documents:lengths=3-3-2"), each size as its factory's keyword argument; a score modification likewise
("alibi:heads=4"). ``flex_code`` writes Python that builds the same mask_mod and score_mod with
torch.nn.attention.flex_attention and computes the weights with it (values the identity: the output is the weights).
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from itertools import accumulate

import torch

from attn_core.mask_mods import GALLERY, SCORE_MODS, MaskMod, ScoreMod, and_masks, not_mask, or_masks

# How the two masks combine: the name in a link, and the mask_mod built from mask A and mask B.
COMBINE = {
    "a": lambda a, b: a,
    "and": lambda a, b: and_masks(a, b),
    "or": lambda a, b: or_masks(a, b),
    "and_not": lambda a, b: and_masks(a, not_mask(b)),
    "not": lambda a, b: not_mask(a),
}
FLEX_NAMES = "and_masks, create_block_mask, flex_attention, or_masks"
COMBINE_LABELS = {"a": "A", "and": "A and B", "or": "A or B", "and_not": "A and not B", "not": "not A"}
MAX_SIZE = 4096  # the largest size a link may give
MAY_BE_ZERO = ("n_global", "sinks", "prefix", "seed")  # sizes that may be none


def defaults(factory) -> dict:
    """A factory's sizes and their defaults, in order: {"window": 3}."""
    return {name: parameter.default for name, parameter in inspect.signature(factory).parameters.items()}


@dataclass(frozen=True)
class Term:
    """A gallery mask (or a score modification, in ``factories``) with its sizes."""

    name: str
    sizes: dict = field(default_factory=dict)  # keyword arguments of its factory; those left out take its defaults

    def arguments(self, factories: dict) -> dict:
        return defaults(factories[self.name]) | self.sizes

    def format(self, factories: dict) -> str:
        """Its link text, every size written: "sliding_window:window=3"."""
        return ":".join([self.name, *(f"{key}={text_of(value)}" for key, value in self.arguments(factories).items())])

    @classmethod
    def parse(cls, text: str, factories: dict) -> Term:
        """The term of a link text; ValueError saying what a term is for anything else."""
        name, *pairs = text.strip().split(":")
        if name not in factories:
            raise ValueError(f"{name!r} is not one of {', '.join(factories)}")
        known, sizes = defaults(factories[name]), {}
        for pair in pairs:
            key, _, value = pair.partition("=")
            if key not in known:
                raise ValueError(f"{name} takes {', '.join(known) or 'no sizes'}, not {key!r}")
            sizes[key] = value_of(value, known[key], key)
        return cls(name, sizes)


def text_of(value) -> str:
    return "-".join(map(text_of, value)) if isinstance(value, tuple) else f"{value:g}" if isinstance(value, float) else str(value)


def value_of(text: str, default, key: str):
    """A size read as its default's type: an int from 1 (from 0 for those of MAY_BE_ZERO), a float above 0, or a
    tuple of them ("3-3-2")."""
    if isinstance(default, tuple):
        return tuple(value_of(part, default[0], key) for part in text.split("-"))
    try:
        value = type(default)(text)
    except ValueError:
        raise ValueError(f"{key} must be a number, not {text!r}") from None
    if isinstance(value, float):
        if not 0 < value <= MAX_SIZE:
            raise ValueError(f"{key} must be above 0 and at most {MAX_SIZE:,}, not {text}")
        return value
    low = 0 if key in MAY_BE_ZERO else 1
    if not low <= value <= MAX_SIZE:
        raise ValueError(f"{key} must be between {low} and {MAX_SIZE:,}, not {text}")
    return value


@dataclass(frozen=True)
class Composition:
    """Mask A, combined with mask B by ``combine`` (a key of COMBINE), and a score modification (or None)."""

    a: Term
    b: Term | None = None
    combine: str = "a"
    score: Term | None = None

    def mask_mod(self) -> MaskMod:
        build = lambda term: GALLERY[term.name](**term.arguments(GALLERY))  # noqa: E731
        return COMBINE[self.combine](build(self.a), build(self.b) if self.b else None)

    def score_mod(self) -> ScoreMod | None:
        return None if self.score is None else SCORE_MODS[self.score.name](**self.score.arguments(SCORE_MODS))


# Each gallery mask's body in FlexAttention code, its sizes in braces; ``ends`` names its segments' ends (mask_code).
MASK_CODE = {
    "full": "q_idx >= 0",
    "causal": "kv_idx <= q_idx",
    "sliding_window": "(kv_idx <= q_idx) & (q_idx - kv_idx < {window})",
    "dilated_sliding_window": (
        "(kv_idx <= q_idx) & ((q_idx - kv_idx) % {dilation} == 0) & (q_idx - kv_idx < {window} * {dilation})"
    ),
    "global_local": "((kv_idx <= q_idx) & (q_idx - kv_idx < {window})) | (q_idx < {n_global}) | (kv_idx < {n_global})",
    "sink_window": "(kv_idx <= q_idx) & ((q_idx - kv_idx < {window}) | (kv_idx < {sinks}))",
    "prefix_lm": "(kv_idx <= q_idx) | ((q_idx < {prefix}) & (kv_idx < {prefix}))",
    "documents": "segment(q_idx, {ends}) == segment(kv_idx, {ends})",
    "causal_documents": "(segment(q_idx, {ends}) == segment(kv_idx, {ends})) & (kv_idx <= q_idx)",
    "shared_prefix": "(kv_idx <= q_idx) & ((kv_idx < {prefix}) | (segment(q_idx, {ends}) == segment(kv_idx, {ends})))",
    "chunked": "(kv_idx <= q_idx) & (q_idx // {chunk} == kv_idx // {chunk})",
    "block_causal": "kv_idx // {block} <= q_idx // {block}",
}
SEGMENT_CODE = '''def segment(index, ends):
    """The segment a token index falls in, the segments ending (exclusive) at ends: one comparison each, which compiles."""
    found = torch.zeros_like(index)
    for end in ends:
        found = found + (index >= end)
    return found
'''
SEGMENT_STUB = "def segment(index, ends): ...  # the segment each index falls in"
BRIEF_NOTE = "# The masks and the call; the whole file, inputs and imports too, is in the view's bundle."
# Each score modification's tables (made with torch, as attn_core.mask_mods makes them) and body.
SCORE_CODE = {
    "alibi": (
        "SLOPES = torch.tensor([2 ** (-8 * (head + 1) / {heads}) for head in range({heads})])",
        "score - SLOPES[h.clamp(max=len(SLOPES) - 1)] * (q_idx - kv_idx)",
    ),
    "soft_cap": ("", "{cap} * torch.tanh(score / {cap})"),
    "relative_bias": (
        "BIAS = torch.randn(2 * {max_distance} + 1, generator=torch.Generator().manual_seed({seed}))",
        "score + BIAS[(q_idx - kv_idx).clamp(-{max_distance}, {max_distance}) + {max_distance}]",
    ),
    "head_temperature": ("TAUS = torch.tensor({temperatures})", "score / TAUS[h.clamp(max=len(TAUS) - 1)]"),
}


def mask_code(term: Term, ends_name: str) -> tuple[str, str]:
    """A term's constants (its segments' ends as a tuple named ``ends_name``, where it has segments) and the body of
    its mask_mod."""
    sizes = term.arguments(GALLERY)
    ends = None
    if "lengths" in sizes:
        ends = list(accumulate(sizes["lengths"]))
    if "continuations" in sizes:
        ends = list(accumulate(sizes["continuations"], initial=sizes["prefix"]))
    constants = "" if ends is None else f"{ends_name} = {tuple(ends)}"
    return constants, MASK_CODE[term.name].format(**sizes, ends=ends_name)


def queries_and_keys(t: int, heads: int, d: int, seed: int) -> tuple:
    """The studio's seeded queries and keys, (1, H, T, d) each, as its code draws them."""
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(2, 1, heads, t, d, generator=generator).unbind(0)


def flex_code(composition: Composition, t: int, heads: int, d: int, seed: int, block: int, brief: bool = False) -> str:
    """Python that reproduces the studio's weights with flex_attention: the same mask and score modification, queries
    and keys drawn from the same seed, and the identity as values, so that the output is the weights. ``brief``: what
    a slide has room for, the masks, their combination and the call, without the imports, the segment helper's body,
    the inputs and blank lines."""
    terms = {"A": composition.a} | ({"B": composition.b} if composition.b else {})
    lines = [BRIEF_NOTE] if brief else ["import torch", f"from torch.nn.attention.flex_attention import {FLEX_NAMES}", ""]
    if any(term.name in ("documents", "causal_documents", "shared_prefix") for term in terms.values()):
        lines += [SEGMENT_STUB if brief else SEGMENT_CODE]
    for letter, term in terms.items():
        constants, body = mask_code(term, f"ENDS_{letter}")
        lines += [constants] * bool(constants)
        lines += [f"def mask_{letter.lower()}(b, h, q_idx, kv_idx):  # {term.format(GALLERY)}", f"    return {body}", "", ""]
    combined = {
        "a": "mask_a",
        "and": "and_masks(mask_a, mask_b)",
        "or": "or_masks(mask_a, mask_b)",
        "and_not": "and_masks(mask_a, lambda b, h, q_idx, kv_idx: ~mask_b(b, h, q_idx, kv_idx))",
        "not": "lambda b, h, q_idx, kv_idx: ~mask_a(b, h, q_idx, kv_idx)",
    }[composition.combine]
    lines += [f"mask_mod = {combined}"]
    score = "None"
    if composition.score is not None:
        table, body = SCORE_CODE[composition.score.name]
        arguments = composition.score.arguments(SCORE_MODS)
        sizes = {key: list(value) if isinstance(value, tuple) else value for key, value in arguments.items()}
        if table:
            lines += ["", table.format(**sizes)]
        lines += ["", "", f"def score_mod(score, b, h, q_idx, kv_idx):  # {composition.score.format(SCORE_MODS)}"]
        lines += [f"    return {body.format(**sizes)}"]
        score = "score_mod"
    lines += ["", ""]
    if not brief:
        lines += [
            f"T, H, D = {t}, {heads}, {d}",
            f"generator = torch.Generator().manual_seed({seed})",
            "q, k = torch.randn(2, 1, H, T, D, generator=generator).unbind(0)  # (B, H, T, d): the studio's queries and keys",
            "values = torch.eye(T).expand(1, H, T, T)  # the identity: the output is the weights",
        ]
    lines += [
        f'block_mask = create_block_mask(mask_mod, 1, H, T, T, device="cpu", BLOCK_SIZE={block})',
        f"weights = flex_attention(q, k, values, score_mod={score}, block_mask=block_mask)  # (1, H, T, T)",
    ]
    if brief:
        return "\n".join(line for line in lines if line) + "\n"
    lines += ["# torch.compile(flex_attention) runs the same as one fused kernel that skips the empty blocks"]
    return "\n".join(lines) + "\n"
