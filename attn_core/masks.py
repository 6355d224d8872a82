"""Every attention mask of attn_core, in one place: the builders, and ``Mask``, one mask by its kind and sizes.

A boolean mask is True where a query may attend to a key (PyTorch's convention, that of
``scaled_dot_product_attention``) and broadcasts over leading (batch, head) dimensions. Attention applies it by
setting the hidden scores to -inf before softmax (``attn_core.attention.attend``); a row with nothing visible
gets weights 0 (``masked_softmax``). The additive form of a mask holds 0 where it is True and -inf elsewhere.

A ``Mask`` is a kind of KINDS with its sizes, ``Mask("global", (256, 16))``: its boolean mask at any length, its label
and formula, and its link text "global:256:16" (``Mask.parse``, ``Mask.format``), which the sweeps of the Cost view and
their records use. Every view builds its masks as Masks. A new kind is one entry in KINDS (README: "Add a mask").

Every mask here is a mask_mod of attn_core.mask_mods (FlexAttention's ``mask_mod(b, h, q_idx, kv_idx)``), evaluated
at a length by ``at_length``: GALLERY (re-exported here, with SCORE_MODS and the combinators) holds them by name.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import accumulate

import torch
from torch import Tensor

from attn_core import mask_mods
from attn_core.mask_mods import GALLERY as GALLERY  # FlexAttention's terms, here with every other mask
from attn_core.mask_mods import SCORE_MODS as SCORE_MODS
from attn_core.mask_mods import MaskMod, and_masks, dense
from attn_core.mask_mods import not_mask as not_mask
from attn_core.mask_mods import or_masks as or_masks

Device = torch.device | str | None


def at_length(mask_mod: MaskMod, t: int, t_k: int | None = None, device: Device = None) -> Tensor:
    """The (t, t_k) boolean mask of a mask_mod (attn_core.mask_mods), the same for every sequence and head."""
    return dense(mask_mod, t, t_k, device=device)[0, 0]


def block_sums(mask_mod: MaskMod, t: int, block: int) -> Tensor:
    """(⌈t / block⌉, ⌈t / block⌉): how many (query, key) pairs of each block × block tile ``mask_mod`` lets through,
    positions past t counted as hidden, as FlexAttention's create_block_mask counts them."""
    blocks = math.ceil(t / block)
    padded = torch.zeros(blocks * block, blocks * block, dtype=torch.bool)
    padded[:t, :t] = at_length(mask_mod, t)
    return padded.view(blocks, block, blocks, block).sum(dim=(1, 3))  # (query blocks, key blocks)


TILE_SKIPPED, TILE_PARTIAL, TILE_FULL = 0, 1, 2  # a tile hidden wholly, in part, not at all


def block_kinds(mask_mod: MaskMod, t: int, block: int) -> Tensor:
    """(⌈t / block⌉, ⌈t / block⌉): each tile of the (query block, key block) grid as TILE_SKIPPED where ``mask_mod``
    hides it wholly, TILE_PARTIAL in part, TILE_FULL not at all; a block-sparse kernel skips the first and needs no
    mask on the last (FlexAttention's BlockMask: kv_num_blocks partial, full_kv_num_blocks full)."""
    sums = block_sums(mask_mod, t, block)  # (query blocks, key blocks)
    return (sums > 0).long() + (sums == block * block).long()  # 0, 1 or 2: the TILE_ values


def block_counts(mask_mod: MaskMod, t: int, block: int = 128) -> tuple[int, int, int]:
    """(empty, partial, full): how many tiles of each kind (block_kinds)."""
    return tuple(block_kinds(mask_mod, t, block).flatten().bincount(minlength=3).tolist())


def causal_mask(t: int, device: Device = None) -> Tensor:
    """M[i, j] = (j <= i): the (t, t) look-ahead mask; each token sees itself and the tokens before it."""
    return at_length(mask_mods.causal(), t, device=device)


def hidden_keys(queries: range, keys: range, window: int | None = None, device: Device = None) -> Tensor:
    """H[i, j] = (j > i) or (j <= i - window): True where the causal mask (``window`` None) or the sliding window of
    ``window`` keys hides key j from query i; (len(queries), len(keys)), for any block of the (T, T) grid."""
    query = torch.arange(queries.start, queries.stop, device=device).unsqueeze(1)  # (n, 1)
    key = torch.arange(keys.start, keys.stop, device=device)  # (bk,)
    hidden = key > query  # (n, bk)
    if window is not None:
        hidden |= key <= query - window
    return hidden


def window_mask(t: int, window: int, t_k: int | None = None, device: Device = None) -> Tensor:
    """M[i, j] = (i - window < j <= i): the (t, t_k) sliding-window (local) mask; query i sees its last ``window``
    keys up to itself (``t_k`` defaults to t). ``window`` >= t is the causal mask."""
    if window < 1:
        raise ValueError("the window must be at least 1 key")
    return at_length(mask_mods.sliding_window(window), t, t_k, device)


def padding_mask(lengths: list[int] | Tensor, t: int, device: Device = None) -> Tensor:
    """M[b, 0, j] = (j < lengths[b]): the (B, 1, t) key-padding mask; every query sees the real keys only."""
    lengths = torch.as_tensor(lengths, device=device).reshape(-1, 1)  # (B, 1)
    positions = torch.arange(t, device=lengths.device)  # (t,)
    return (positions < lengths).unsqueeze(1)  # (B, 1, t)


def query_key_padding_mask(lengths: list[int], t: int) -> Tensor:
    """M[b, i, j] = (i < lengths[b]) and (j < lengths[b]): (B, t, t), True where both the query and the key are real
    tokens; a [PAD] query sees nothing."""
    real = padding_mask(lengths, t)  # (B, 1, t): real keys
    return real & real.transpose(-2, -1)  # (B, t, t)


def document_mask(lengths: list[int], t: int) -> Tensor:
    """M[i, j] = (doc(i) = doc(j)) and (j <= i): (t, t), several documents packed into one row of ``t`` tokens, each
    seeing only itself, causally.

    Document d holds ``lengths[d]`` consecutive tokens; tokens after the last document (padding) see nothing.
    Packing saves the padding of a batch; the mask keeps the documents from reading each other.
    """
    if min(lengths, default=1) < 1 or sum(lengths) > t:
        raise ValueError(f"document lengths must be at least 1 and add up to at most {t}, not {lengths}")
    return at_length(documents_mod(lengths), t)


def documents_mod(lengths: Sequence[int]) -> MaskMod:
    """document_mask's mask_mod: the causal documents of ``lengths``, the tokens after them seeing nothing."""
    real = sum(lengths)
    return and_masks(mask_mods.causal_documents(tuple(lengths)), lambda b, h, q_idx, kv_idx: q_idx < real)


def prefix_lm_mask(prefix: int, t: int) -> Tensor:
    """M[i, j] = (j <= i) or (i < prefix and j < prefix): (t, t), the first ``prefix`` tokens (a prompt, an image's
    patches) see each other both ways; the rest see everything before them, causally (a prefix language model, as
    in T5's and PaliGemma's decoders)."""
    if not 0 <= prefix <= t:
        raise ValueError(f"the prefix must be between 0 and {t} tokens, not {prefix}")
    return at_length(mask_mods.prefix_lm(prefix), t)


def global_local_mask(t: int, window: int, n_global: int) -> Tensor:
    """M[i, j] = (i - window < j <= i) or i < n_global or j < n_global: (t, t), a causal sliding window of ``window``
    keys, plus ``n_global`` first tokens that every token sees and that see every token (Longformer's and BigBird's
    global tokens; StreamingLLM's attention sinks are the causal half of this)."""
    if not 0 <= n_global <= t:
        raise ValueError(f"the global tokens must be between 0 and {t}, not {n_global}")
    return at_length(mask_mods.global_local(window, n_global), t)


def sink_window_mask(t: int, window: int, sinks: int) -> Tensor:
    """M[i, j] = (j <= i) and (i - window < j or j < sinks): (t, t), a causal sliding window of ``window`` keys plus
    the first ``sinks`` tokens, which every later token keeps seeing (StreamingLLM's attention sinks: the causal half
    of global_local_mask)."""
    return at_length(mask_mods.sink_window(window, sinks), t)


def between(ends: Sequence[int]) -> list[int]:
    """The lengths of the documents ending at ``ends`` (the first starting at 0), those left empty left out."""
    return [end - start for start, end in zip([0, *ends], ends, strict=False) if end > start]


def packed_lengths(lengths: Sequence[int], t: int) -> list[int]:
    """Documents of these lengths packed on ``t`` tokens, none padding: cut to t, and the tokens after them one more."""
    return between([*(min(t, end) for end in accumulate(lengths)), t])


def document_lengths(sizes: Sequence[int], t: int) -> list[int]:
    """The documents of a "documents" Mask on ``t`` tokens. One size K: K lengths at most one apart (K cut to t). Two
    or more: those lengths, packed (packed_lengths)."""
    if len(sizes) == 1:
        k = min(sizes[0], t)
        return [t // k + (i < t % k) for i in range(k)]
    return packed_lengths(sizes, t)


@dataclass(frozen=True)
class MaskKind:
    """A kind of mask: its name on screen, its formula, its sizes and its mask_mod at a length."""

    label: str
    formula: str  # LaTeX: M_ij, True where query i may attend to key j
    sizes: dict[str, int]  # its sizes' names in its link text, in their order, each with its least value: {"W": 1, "G": 0}
    mask_mod: Callable[..., MaskMod]  # (t, *sizes) -> its mask_mod at length t, sizes past t cut to t
    hides_padding: bool = False  # on a padded batch, the [PAD] keys and queries are hidden as well: (B, t, t)
    lengths: bool = False  # in place of its one size, the lengths of two or more documents ("documents:3:3:10")

    def takes(self, sizes: tuple[int, ...]) -> bool:
        """Whether ``sizes`` are this kind's: as many as it names, each at least its least value (or lengths)."""
        if self.lengths and len(sizes) > 1:
            return min(sizes) >= 1
        return len(sizes) == len(self.sizes) and all(size >= low for size, low in zip(sizes, self.sizes.values(), strict=True))


KINDS = {
    "none": MaskKind("None", r"M_{ij} = 1", sizes={}, mask_mod=lambda t: mask_mods.full()),
    "causal": MaskKind("Causal (look-ahead)", r"M_{ij} = [\,j \le i\,]", sizes={}, mask_mod=lambda t: mask_mods.causal()),
    # a padded batch's masks (M_bij, for sentence b of real length n_b)
    "padding": MaskKind(
        "Padding",
        r"M_{bij} = [\,i < n_b\,] \wedge [\,j < n_b\,]",
        sizes={},
        mask_mod=lambda t: mask_mods.full(),
        hides_padding=True,
    ),
    "both": MaskKind(
        "Causal and padding",
        r"M_{bij} = [\,j \le i\,] \wedge [\,i < n_b\,] \wedge [\,j < n_b\,]",
        sizes={},
        mask_mod=lambda t: mask_mods.causal(),
        hides_padding=True,
    ),
    "window": MaskKind(
        "Sliding window (local)",
        r"M_{ij} = [\,i - w < j \le i\,]",
        sizes={"W": 1},
        mask_mod=lambda t, window: mask_mods.sliding_window(window),
        hides_padding=True,
    ),
    "documents": MaskKind(
        "Packed documents",
        r"M_{ij} = [\,\mathrm{doc}(i) = \mathrm{doc}(j)\,] \wedge [\,j \le i\,]",
        sizes={"K": 1},
        mask_mod=lambda t, *sizes: documents_mod(document_lengths(sizes, t)),
        lengths=True,
    ),
    "prefix": MaskKind(
        "Prefix LM",
        r"M_{ij} = [\,j \le i\,] \vee [\,i < P \wedge j < P\,]",
        sizes={"P": 0},
        mask_mod=lambda t, prefix: mask_mods.prefix_lm(min(prefix, t)),
    ),
    "global": MaskKind(
        "Global + local",
        r"M_{ij} = [\,i - w < j \le i\,] \vee [\,i < G\,] \vee [\,j < G\,]",
        sizes={"W": 1, "G": 0},
        mask_mod=lambda t, window, n_global: mask_mods.global_local(window, min(n_global, t)),
    ),
}
MODEL_MASKS = ("documents", "prefix", "global")  # the masks of today's models


def forms(kinds: Sequence[str]) -> str:
    """The link texts of ``kinds`` with their sizes named and their least values: "none, window:W or prefix:P (W ≥ 1,
    P ≥ 0)"."""
    named = [":".join((kind, *KINDS[kind].sizes)) for kind in kinds]
    least = {name: low for kind in kinds for name, low in KINDS[kind].sizes.items()}
    sizes = ", ".join(f"{name} ≥ {low}" for name, low in least.items())
    return ", ".join(named[:-1]) + " or " * (len(named) > 1) + named[-1] + (f" ({sizes})" if sizes else "")


@dataclass(frozen=True)
class Mask:
    """One mask: a kind of KINDS and its sizes, in tokens (documents: K equal documents, or their lengths)."""

    kind: str
    sizes: tuple[int, ...] = ()

    def __post_init__(self):
        if self.kind not in KINDS or not KINDS[self.kind].takes(self.sizes):
            raise ValueError(f"{self.kind} {self.sizes} is not a mask: a mask is {forms(list(KINDS))}")

    @classmethod
    def parse(cls, text: str, kinds: Sequence[str] = tuple(KINDS)) -> Mask:
        """The mask of a link text, "kind" or "kind:size:size" ("window:256", "global:256:16"), one of ``kinds``;
        ValueError naming their forms for anything else."""
        kind, *numbers = text.split(":")
        if kind in kinds and all(number.isascii() and number.isdecimal() for number in numbers):
            sizes = tuple(int(number) for number in numbers)
            if KINDS[kind].takes(sizes):
                return cls(kind, sizes)
        raise ValueError(f"a mask is {forms(kinds)}, not {text!r}")

    def format(self) -> str:
        """Its link text, which ``parse`` reads back: "global:256:16"."""
        return ":".join((self.kind, *map(str, self.sizes)))

    @classmethod
    def packed(cls, lengths: Sequence[int], t: int) -> Mask:
        """Documents of these lengths packed on ``t`` tokens: cut to t, and the tokens after them one more document;
        a single document is "documents:1"."""
        documents = packed_lengths(lengths, t)
        return cls("documents", tuple(documents) if len(documents) > 1 else (1,))

    @property
    def label(self) -> str:
        return KINDS[self.kind].label

    @property
    def formula(self) -> str:
        return KINDS[self.kind].formula

    def mask_mod(self, t: int) -> MaskMod:
        """Its mask_mod at length ``t`` (FlexAttention's form; sizes past t cut to t)."""
        return KINDS[self.kind].mask_mod(t, *self.sizes)

    def boolean(self, t: int, lengths: list[int] | None = None, device: Device = None) -> Tensor:
        """M at length ``t``, True where query i may attend to key j: (t, t); (B, t, t) for a padded batch of real
        lengths ``lengths`` under a kind that hides padding (padding, both, window). Sizes past t are cut to t."""
        kind = KINDS[self.kind]
        mask = at_length(self.mask_mod(t), t)  # (t, t)
        if lengths is not None and kind.hides_padding:
            mask = mask & query_key_padding_mask(lengths, t)  # (B, t, t)
        return mask.to(device)


def additive_mask(mask: Tensor) -> Tensor:
    """A[i, j] = 0 where M[i, j], -inf elsewhere: the additive form of a boolean mask, added to the scores."""
    return torch.zeros(mask.shape, device=mask.device).masked_fill(~mask, float("-inf"))
