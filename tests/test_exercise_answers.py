"""The exercises of the lessons "Attention when a model writes" and "Revision: questions across the views", each
answered with the number or token the engine (attn_core) computes for its slide, the same functions its view calls:
that answer is marked right, a clearly wrong one not. Questions about the sentence are asked on the step's example and
on three other sentences (a sentence without the token named falls back to its last row, or its last word)."""

from __future__ import annotations

import pytest
import torch

from attn_core import attend, causal_mask, embed_tokens, entropy, multi_head_attention, multi_head_projections, sinusoidal
from attn_core.bench import reference_results
from attn_core.decoding import MODELS, generate, kv_cache_bytes, layouts
from attn_core.examples import (
    CAT_SAT,
    CONTEXT_SENTENCES,
    COREFERENCE_SENTENCES,
    DEFAULT_SENTENCE,
    PARAPHRASE_PAIRS,
    UNRELATED_SENTENCES,
)
from attn_core.geometry import by_distance, order_check, position_scores, rotation_similarity, shuffled_order
from attn_core.heads import pattern_similarity
from attn_core.positions import rope
from attn_core.scaling import sentence_attention
from attn_core.text import last_word, tokenize
from attn_core.toy import qkv_projections
from attn_core.training import token_names, train
from tests.test_app_exercises import SENTENCES, give, hidden, open_step, verdict

WRITES, REVISION = "attention-when-a-model-writes", "revision-questions-across-the-views"
IDS = ["example", "it", "unicode", "sixteen words"]
GIB = 2**30


def right_and_wrong(lesson: str, number: int, right, wrong, text: str | None = None) -> None:
    """The step, asked with its charts out of sight, takes ``right`` and refuses ``wrong`` (each on a fresh open)."""
    at = open_step(lesson, number, text)
    assert hidden(at), (lesson, number, text)
    assert verdict(give(at, right)).startswith("Right."), (lesson, number, text, right, verdict(at))
    at = give(open_step(lesson, number, text), wrong)
    assert verdict(at).startswith("Not quite"), (lesson, number, text, wrong, verdict(at))


def other(options: list[str], best: str) -> str:
    return next(option for option in options if option != best)


# Attention when a model writes


@pytest.mark.parametrize("text", SENTENCES, ids=IDS)
def test_the_keys_the_eighth_query_reads_are_the_engines_causal_row(text):
    """Decoding, step 1: the non-zero weights in row 7 (the last row of a shorter sentence) of causal attention over
    the toy embeddings (C = 16, d = 8, seed 0), attn_core.attend as the page calls it."""
    tokens = tokenize(text or CAT_SAT + " because it was warm")
    x = embed_tokens(tokens, 16, 0)  # (T, C)
    w_q, w_k, w_v = qkv_projections(16, 8, 0)
    weights = attend(x @ w_q, x @ w_k, x @ w_v, mask=causal_mask(len(tokens))).weights  # (T, T)
    row = min(7, len(tokens) - 1)
    seen = int((weights[row] != 0).sum())
    assert seen == row + 1  # itself and every token before it
    right_and_wrong(WRITES, 1, float(seen), float(seen + 1), text)


def test_mha_caches_the_engines_multiple_of_mla():
    """Decoding, step 4: MHA's values cached per token over MLA's, at C = 512 with 8 heads (GQA: 2 K/V heads), from
    attn_core.decoding.layouts (the bars are 2 bytes a value: the ratio is the same)."""
    found = {layout.kind: layout for layout in layouts(512, 8, 2)}
    assert found["mha"].cached_values == 2 * 8 * (512 // 8)  # K and V of 8 heads of 64
    ratio = found["mha"].cached_values / found["mla"].cached_values
    right_and_wrong(WRITES, 4, round(ratio, 2), ratio * 1.5)


def test_llama_3_70b_caches_the_engines_gib_at_128k_tokens():
    """Decoding, step 5: attn_core.decoding.kv_cache_bytes of Llama 3 70B for one sequence of 131,072 tokens, in GiB
    (the config's 80 layers × 8 K/V heads × (128 + 128) values × 2 bytes a token); MHA's 64 K/V heads, 8 times as
    much, is wrong."""
    gib = kv_cache_bytes(MODELS["llama3-70b"].shape, 131072) / GIB
    assert gib == 80 * 8 * (128 + 128) * 2 * 131072 / GIB
    right_and_wrong(WRITES, 5, round(gib, 1), gib * 8)


def test_a_cache_of_sinks_and_a_window_stops_growing_as_the_engine_keeps_it():
    """Decoding, step 9: MHA's cache bytes with 4 sinks + a window of 512, measured from the tensors of
    attn_core.decoding.generate (C = 512, 8 heads) after 1,024 and 4,096 prompt tokens and 8 steps, and by the formula
    for the 4 + 512 tokens kept; a full cache's growth (4,104 / 1,032) is wrong."""
    layer = {"d_model": 512, "heads": 8, "kv_heads": 2, "new_tokens": 8, "window": 512, "sinks": 4}
    runs = [generate("mha", prompt=prompt, **layer) for prompt in (1024, 4096)]
    assert all(run.cache_bytes[-1] == kv_cache_bytes(run.shape, 4 + 512) for run in runs)
    ratio = runs[1].cache_bytes[-1] / runs[0].cache_bytes[-1]
    right_and_wrong(WRITES, 9, round(ratio, 2), 4104 / 1032)


def test_prefill_peak_memory_growth_is_the_reference_results():
    """Cost, steps 10 and 11: naive and tiled attention's peak memory from T = 1,024 to 2,048 in the shipped
    reference results (naive about 4: the T × T matrix; tiled far less)."""
    points = reference_results().points
    peak = {method: {p.T: p.peak_mib for p in points if p.method == method and p.mask == "none"} for method in ("naive", "tiled")}
    naive, tiled = (peak[method][2048] / peak[method][1024] for method in ("naive", "tiled"))
    assert 3 < naive < 5 and tiled < 2
    right_and_wrong(WRITES, 10, round(naive, 2), 2.0)  # the guess of a linear growth
    right_and_wrong(WRITES, 11, round(tiled, 2), 4.0)  # the guess of a quadratic one


# Revision: questions across the views


@pytest.mark.parametrize("text", SENTENCES, ids=IDS)
def test_the_most_spread_row_is_the_engines_largest_entropy(text):
    """Scaling, step 1: the token whose row of attn_core.scaling.sentence_attention (d_k = 64, seed 0, s = 1) has the
    largest entropy."""
    tokens = tokenize(text or DEFAULT_SENTENCE)
    spread = entropy(sentence_attention(tokens, 64, 0, 1.0).weights)  # (T,)
    best = tokens[int(spread.argmax())]
    right_and_wrong(REVISION, 1, best, other(tokens, best), text)


def multi_head_input(text: str | None) -> tuple[list[str], torch.Tensor, tuple]:
    """The Multi-head view's tokens, X = embeddings + positions (C = 32, seed 0) and its W_Q, W_K, W_V, W_O."""
    tokens = tokenize(text or COREFERENCE_SENTENCES[0])
    return tokens, embed_tokens(tokens, 32, 0) + sinusoidal(len(tokens), 32), multi_head_projections(32, 0)


@pytest.mark.parametrize("text", SENTENCES, ids=IDS)
def test_where_it_looks_in_one_wide_head_is_the_engines_argmax(text):
    """Multi-head, step 2: the key “it” (the last token where the sentence has none) attends to most in one head of
    size C = 32, attn_core.multi_head_attention with h = 1."""
    tokens, x, weights = multi_head_input(text)
    one_head = multi_head_attention(x, *weights, 1).heads.weights[0]  # (T, T)
    row = tokens.index("it") if "it" in tokens else len(tokens) - 1
    best = tokens[int(one_head[row].argmax())]
    right_and_wrong(REVISION, 2, best, other(tokens, best), text)


def test_the_head_least_like_head_0_is_the_engines():
    """Multi-head, step 3: the head whose pattern has the lowest cosine with head 0's, attn_core.pattern_similarity of
    the 4 heads."""
    _, x, weights = multi_head_input(None)
    similarity = pattern_similarity(multi_head_attention(x, *weights, 4).heads.weights)  # (h, h)
    least = f"head {int(similarity[0].argmin())}"
    right_and_wrong(REVISION, 3, least, "head 0")


@pytest.mark.parametrize("text", SENTENCES, ids=IDS)
def test_where_mat_looks_in_the_shuffle_is_the_engines_argmax(text):
    """Positions, step 4: the key “mat” (the last token of the shuffle where the sentence has none) attends to most in
    the sentence shuffled by seed 1, without positions: attn_core.geometry.order_check (C = 32, d_k = 8, seed 0)."""
    tokens = tokenize(text or CAT_SAT)
    w_q, w_k, w_v = qkv_projections(32, 8, 0)
    order = shuffled_order(len(tokens), 1)
    check = order_check(embed_tokens(tokens, 32, 0), w_q, w_k, w_v, order, positions=False)
    moved = [tokens[i] for i in order.tolist()]
    row = moved.index("mat") if "mat" in moved else len(moved) - 1
    best = moved[int(check.shuffled.weights[row].argmax())]
    right_and_wrong(REVISION, 4, best, other(moved, best), text)


def test_the_rope_score_and_the_turned_vectors_cosine_are_the_engines():
    """Positions, steps 5 and 6: the distance m − n at which “cat” (position 1) against “The” (position 0) scores
    highest under RoPE, attn_core.geometry.position_scores (C = 32, d_k = 8, seed 0); and the mean cos(q, R_64 q) of
    128-feature vectors, attn_core.geometry.rotation_similarity, which random vectors turned by attn_core.rope agree
    with."""
    tokens = tokenize(CAT_SAT)
    x, (w_q, w_k, _) = embed_tokens(tokens, 32, 0), qkv_projections(32, 8, 0)
    rope_scores = by_distance(position_scores(x[1], x[0], w_q, w_k, len(tokens), "rope"))
    best = int(rope_scores.distances[rope_scores.mean.argmax()])
    wrong = int(rope_scores.distances[rope_scores.mean.argmin()])
    right_and_wrong(REVISION, 5, str(best), str(wrong))

    cosine = float(rotation_similarity(128, torch.arange(65))[64])
    q = torch.randn(4096, 1, 128, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    turned = rope(q, torch.tensor([64]))
    assert float(torch.cosine_similarity(q, turned, dim=-1).mean()) == pytest.approx(cosine, abs=0.02)
    right_and_wrong(REVISION, 6, round(cosine, 3), cosine + 0.2)


@pytest.fixture(scope="module")
def minilm():
    from attn_core import MiniLM

    return MiniLM.load()


@pytest.mark.parametrize("text", SENTENCES, ids=IDS)
def test_where_it_looks_in_minilm_is_the_engines_argmax(text, minilm):
    """Real model, step 7: the word piece “it” (the last word where the sentence has none) gives most weight in
    MiniLM's layer 0, head 2, run by attn_core."""
    from attn_core.real_model import MAX_TOKENS

    encoded = minilm.encode([text or COREFERENCE_SENTENCES[0]], MAX_TOKENS)
    tokens = encoded.tokens[0]
    pronoun = encoded.positions_of(0, "it")
    token = pronoun[0] if pronoun else last_word(tokens)
    best = tokens[int(minilm.run(encoded).weights(0)[0, 2, token].argmax())]
    right_and_wrong(REVISION, 7, best, other(tokens, best), text)


def test_the_head_of_layer_3_parked_on_cls_is_the_engines(minilm):
    """Real model, step 8: the head of layer 3 with the largest share of attention on [CLS], attn_core.sink_shares over
    the view's built-in sentences and its example."""
    from attn_core.real_model import sink_shares

    corpus = [
        *(sentence for pair in PARAPHRASE_PAIRS for sentence in pair),
        *UNRELATED_SENTENCES,
        *CONTEXT_SENTENCES,
        COREFERENCE_SENTENCES[1],
        COREFERENCE_SENTENCES[0],
    ]
    on_cls = sink_shares(minilm.run_texts(corpus))["[CLS]"][3]  # (H,)
    best, least = (f"head {int(i)}" for i in (on_cls.argmax(), on_cls.argmin()))
    right_and_wrong(REVISION, 8, best, least)


def test_the_trained_pattern_accuracy_and_lower_loss_are_the_engines():
    """Training, steps 9 to 11 (task “previous”, d_k = 256, Adam, 300 steps, seed 0; the view's Train pressed once):
    the key query 3 attends to most in the last snapshot, the last step's accuracy, and whether the scaled or the
    unscaled run ends with the lower loss, from attn_core.training.train run both ways."""
    settings = {"d_k": 256, "optimizer": "adam", "lr": None, "steps": 300, "seed": 0}
    scaled, unscaled = (train("previous", scaled=scaled, **settings) for scaled in (True, False))
    names = token_names()
    example = [names[token] for token in scaled.example_tokens]
    best = example[int(scaled.snapshots[max(scaled.snapshots)][3].argmax())]
    accuracy = scaled.accuracy[-1]
    lower = "scaled" if scaled.loss[-1] < unscaled.loss[-1] else "unscaled"
    assert best == example[2] and accuracy > 0.9 and lower == "scaled"  # it learnt to look one back, scaled

    at = open_step(REVISION, 9)
    for train_button in [button for button in at.button if button.label == "Train"]:  # absent if trained in this process
        train_button.click().run()
    assert hidden(at) and verdict(give(at, best)).startswith("Right.")
    assert verdict(give(open_step(REVISION, 9), other(example, best))).startswith("Not quite")
    right_and_wrong(REVISION, 10, round(accuracy, 2), accuracy - 0.2)
    right_and_wrong(REVISION, 11, lower, "unscaled" if lower == "scaled" else "scaled")
