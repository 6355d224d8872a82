"""The real model (all-MiniLM-L6-v2), loaded once per server process and shared by every session.

Nothing a session does changes it: the engine only reads its weights and runs under
``torch.inference_mode()``.
"""

from __future__ import annotations

import streamlit as st
from torch import Tensor

from attn_core import MiniLM, ModelIntegrityError, ModelUnavailableError
from attn_core.real_model import (
    MODEL_NAME,
    Coreference,
    RealRun,
    WordAcrossContexts,
    coreference,
    sink_shares,
    word_across_contexts,
)
from attn_core.real_model.mask_effects import Change, PaddingCheck, change_of, padding_check
from attn_core.real_model.temperature import EmbeddingQuality, measure, temperature_of

# Shown only while the model loads (about 1 s from the disk). On a server without its files (Streamlit Community Cloud
# installs requirements.txt only) the first load downloads them; the other views are not held up.
LOADING = (
    f"Loading {MODEL_NAME}. Its first use on a server downloads it from the Hugging Face hub (about 90 MB, a few seconds "
    "to a minute); later visits and restarts read it from the disk."
)
SAME = 0.9995  # a cosine similarity shown as 1.000


@st.cache_resource(show_spinner=LOADING)
def _load() -> MiniLM | str:
    """The model, or the reason it could not be loaded. The reason is cached too: a failed hub
    download takes up to about 20 s of retries, which must not repeat on every rerun."""
    try:
        return MiniLM.load()
    except (ModelUnavailableError, ModelIntegrityError) as problem:
        return str(problem)


def load_model() -> MiniLM | None:
    """The shared model, or None after telling the user why it is missing and how to install it."""
    loaded = _load()
    if isinstance(loaded, MiniLM):
        return loaded
    st.error(loaded)
    if st.button("Try loading the model again"):
        _load.clear()
        st.rerun()
    return None


# Results kept per server process and function: 1.3 MB a sentence's forward pass, 2.7 MB a coreference. At 32 these
# caches, which gain a sentence a session, still grew after 20 sessions and would hold over 100 MB.
RUNS_KEPT = 8


@st.cache_resource(max_entries=RUNS_KEPT, show_spinner=False)
def forward(_model: MiniLM, texts: tuple[str, ...], limit: int) -> RealRun:
    """The model's forward pass over ``texts`` cut to ``limit`` word pieces, run once per distinct input and shared
    (read only): a rerun for another layer, head or token needs no new pass."""
    return _model.run(_model.encode(list(texts), limit))


@st.cache_resource(max_entries=RUNS_KEPT, show_spinner=False)
def forward_at(_model: MiniLM, texts: tuple[str, ...], limit: int, heads: tuple[tuple[int, int], ...], tau: float) -> RealRun:
    """``forward`` with the named heads at temperature ``tau``: a new τ reruns the model, a new head to look at does not."""
    return _model.run(_model.encode(list(texts), limit), temperature=temperature_of(heads, tau))


@st.cache_resource(max_entries=RUNS_KEPT, show_spinner=False)
def cached_embeddings(_model: MiniLM, texts: tuple[str, ...], heads: tuple[tuple[int, int], ...], tau: float) -> Tensor:
    """(N, C) sentence embeddings of ``texts`` with the named heads at temperature ``tau``, once per distinct input."""
    return _model.embed(list(texts), temperature=temperature_of(heads, tau))


TAU_POINTS_KEPT = 3 * 20  # a sweep's points (about 20 temperatures) for three choices of heads


@st.cache_resource(max_entries=TAU_POINTS_KEPT, show_spinner=False)
def cached_quality(
    _model: MiniLM, pairs: tuple[tuple[str, str], ...], others: tuple[str, ...], heads: tuple[tuple[int, int], ...], tau: float
) -> EmbeddingQuality:
    """``attn_core.real_model.temperature.measure``, once per distinct input: a sweep measured once is drawn again at once."""
    return measure(_model, pairs, others, heads, tau)


@st.cache_resource(max_entries=RUNS_KEPT, show_spinner=False)
def cached_padding_check(_model: MiniLM, texts: tuple[str, ...]) -> PaddingCheck:
    """``attn_core.real_model.mask_effects.padding_check``, once per distinct batch."""
    return padding_check(_model, texts)


@st.cache_resource(max_entries=RUNS_KEPT, show_spinner=False)
def cached_change(
    _model: MiniLM, texts: tuple[str, ...], causal: bool, hide_token: str, hide_in: tuple[tuple[int, int], ...]
) -> Change:
    """``attn_core.real_model.mask_effects.change_of``, once per distinct input."""
    return change_of(_model, texts, causal=causal, hide_token=hide_token, hide_in=hide_in)


@st.cache_resource(max_entries=RUNS_KEPT, show_spinner=False)
def cached_sink_shares(_model: MiniLM, texts: tuple[str, ...]) -> dict:
    """``attn_core.real_model.sink_shares`` of the model's run over ``texts``, once per distinct input."""
    return sink_shares(_model.run_texts(list(texts)))


@st.cache_resource(max_entries=RUNS_KEPT, show_spinner=False)
def cached_coreference(_model: MiniLM, texts: tuple[str, str], pronoun: str, candidates: tuple[str, str]) -> Coreference:
    """``attn_core.coreference``, once per distinct input (a ValueError for bad words is raised, not kept)."""
    return coreference(_model, list(texts), pronoun, list(candidates))


@st.cache_resource(max_entries=RUNS_KEPT, show_spinner=False)
def cached_word_across_contexts(_model: MiniLM, sentences: tuple[str, ...], word: str) -> WordAcrossContexts:
    """``attn_core.word_across_contexts``, once per distinct input."""
    return word_across_contexts(_model, list(sentences), word)


def embedding_stage_note(contexts: WordAcrossContexts) -> str:
    """What the "embedding layer" stage of ``contexts`` shows, true of its numbers: the position added there
    separates the word's vectors only where the word stands at different positions."""
    same = [float(value) >= SAME for value in contexts.similarity[:, contexts.stages.index("embedding layer")]]
    word = contexts.word
    if all(same):
        where = f"“{word}” stands at the same position in these sentences, so its vectors are still identical there"
    elif not any(same):
        where = f"“{word}” stands at different positions in these sentences, so its vectors already differ a little there"
    else:
        where = f"its vectors differ there only where “{word}” stands at different positions"
    return (
        "“lookup” is the embedding table's row: the same in every sentence. The embedding layer adds the position: "
        f"{where} (cosine 1.000 = identical). Each layer then mixes in the neighbours."
    )


def sweep_summary(quality: list[EmbeddingQuality], unscaled: float) -> str:
    """What a temperature sweep measured, true of its numbers: the margin between paraphrase pairs and other
    sentences as trained, where it is widest and narrowest, and without the 1/√d factor (τ = ``unscaled``)."""
    by_tau = {q.tau: q for q in quality}
    trained, dropped = by_tau[1.0], by_tau[unscaled]
    margin = {q.tau: q.pair_cosine - q.other_cosine for q in quality}
    widest, narrowest = max(margin, key=margin.get), min(margin, key=margin.get)

    def at(q: EmbeddingQuality) -> str:
        return f"pairs {q.pair_cosine:.2f}, others {q.other_cosine:.2f}, {q.nearest_is_pair:.0%} with their pair nearest"

    return (
        f"As trained (τ = 1): {at(trained)}. Without the 1/√d factor (τ = {unscaled:.2g}): {at(dropped)}. "
        f"The gap between pairs and other sentences is widest at τ = {widest:.2g} ({margin[widest]:.2f}) and narrowest "
        f"at τ = {narrowest:.2g} ({margin[narrowest]:.2f}): there the embeddings tell meaning apart least."
    )


def sink_summary(shares: dict) -> str:
    """Where the heads park, true of ``shares`` (attn_core.real_model.sink_shares): the kind of key with the most
    weight over the model, its share in its busiest layer, and its busiest head."""
    totals = {kind: float(share.mean()) for kind, share in shares.items()}
    first = max(totals, key=totals.get)
    by_layer = shares[first].mean(dim=1)  # (L,)
    layer = int(by_layer.argmax())
    busiest = divmod(int(shares[first].argmax()), shares[first].shape[1])
    others = ", ".join(f"{kind} {share:.0%}" for kind, share in totals.items() if kind != first)
    return (
        f"Over all heads, {totals[first]:.0%} of the attention lands on {first} ({others}); in layer {layer}, "
        f"{float(by_layer[layer]):.0%}. The head that parks most there is layer {busiest[0]}, head {busiest[1]}, with "
        f"{float(shares[first][busiest]):.0%} of its attention."
    )
