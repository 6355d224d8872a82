"""The real model changed as the Real model view changes it (a temperature, no padding mask, a causal mask, a special
token's key hidden), each against Hugging Face transformers' BertModel made to do the same, and its sentence embeddings."""

from __future__ import annotations

import copy
import math
import string

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from transformers import BertModel

from attn_core import MiniLM
from attn_core.real_model import SINKS, sink_shares

SENTENCES = [
    "A man is playing a guitar.",
    "Someone plays an acoustic guitar on the street corner tonight.",
    "The cat sleeps.",
]
HEAD_SIZE = 32  # all-MiniLM-L6-v2: 384 wide, 12 heads
TOLERANCE = 1e-5


@pytest.fixture(scope="module")
def model() -> MiniLM:
    return MiniLM.load()


@pytest.fixture(scope="module")
def reference(model) -> BertModel:
    """transformers' own BERT, loaded from the same files, with its plain (eager) attention."""
    return BertModel.from_pretrained(model.folder, attn_implementation="eager").eval()


def pooled(reference: BertModel, ids: torch.Tensor, attention_mask: torch.Tensor, real: torch.Tensor) -> torch.Tensor:
    """transformers' last hidden state, averaged over the ``real`` tokens and normalised, as sentence-transformers
    pools all-MiniLM-L6-v2."""
    with torch.no_grad():
        last = reference(input_ids=ids, attention_mask=attention_mask.long()).last_hidden_state  # (B, T, C)
    mean = (last * real[:, :, None]).sum(dim=1) / real.sum(dim=1, keepdim=True)
    return F.normalize(mean, dim=-1)


def test_embeddings_at_the_defaults_equal_transformers(model, reference):
    encoded = model.encode(SENTENCES)
    expected = pooled(reference, encoded.ids, encoded.mask, encoded.mask.float())
    embeddings = model.embed(SENTENCES)
    assert embeddings.shape == (3, 384)
    torch.testing.assert_close(embeddings, expected, atol=TOLERANCE, rtol=0)
    assert torch.allclose(embeddings.norm(dim=-1), torch.ones(3))


def test_a_temperature_per_head_equals_transformers_with_those_queries_divided_by_it(model, reference):
    """Dividing a head's queries by τ divides its scores by τ: the same change made inside transformers."""
    temperature = {(2, 3): 0.25, (4, 0): 3.0, (5, 11): 10.0}
    changed = copy.deepcopy(reference)
    for (layer, head), tau in temperature.items():
        query = changed.encoder.layer[layer].attention.self.query
        rows = slice(head * HEAD_SIZE, (head + 1) * HEAD_SIZE)
        with torch.no_grad():
            query.weight[rows] /= tau
            query.bias[rows] /= tau
    encoded = model.encode(SENTENCES)
    expected = pooled(changed, encoded.ids, encoded.mask, encoded.mask.float())
    torch.testing.assert_close(model.embed(SENTENCES, temperature=temperature), expected, atol=TOLERANCE, rtol=0)
    run = model.run(encoded, temperature=temperature)
    assert run.attention[2].scale.shape == (12, 1, 1)
    assert float(run.attention[2].scale[3, 0, 0]) == pytest.approx(1 / (math.sqrt(HEAD_SIZE) * 0.25))
    assert float(run.attention[2].scale[4, 0, 0]) == pytest.approx(1 / math.sqrt(HEAD_SIZE))
    assert not torch.allclose(model.embed(SENTENCES), expected, atol=1e-3)  # the change shows


def test_a_temperature_of_one_over_root_d_drops_the_scale_as_transformers_without_it(model, reference):
    unscaled = copy.deepcopy(reference)
    for layer in unscaled.encoder.layer:
        layer.attention.self.scaling = 1.0
    encoded = model.encode(SENTENCES)
    expected = pooled(unscaled, encoded.ids, encoded.mask, encoded.mask.float())
    embeddings = model.embed(SENTENCES, temperature=1 / math.sqrt(HEAD_SIZE))
    torch.testing.assert_close(embeddings, expected, atol=TOLERANCE, rtol=0)
    run = model.run(encoded, temperature=1 / math.sqrt(HEAD_SIZE))
    assert run.attention[0].scale == pytest.approx(1.0)


def test_a_padded_batch_with_its_mask_embeds_each_sentence_as_alone_and_without_it_does_not(model):
    together = model.embed(SENTENCES)
    alone = torch.cat([model.embed([sentence]) for sentence in SENTENCES])
    assert float((together - alone).abs().max()) <= TOLERANCE
    unmasked = model.embed(SENTENCES, padding_mask=False)
    longest = max(range(3), key=lambda b: len(model.encode([SENTENCES[b]]).tokens[0]))
    for b in range(3):
        moved = float((unmasked[b] - alone[b]).abs().max())
        assert moved <= TOLERANCE if b == longest else moved > 1e-3, (b, moved)  # only padded sentences move


def test_no_padding_mask_equals_transformers_shown_every_key(model, reference):
    encoded = model.encode(SENTENCES)
    everything = torch.ones_like(encoded.mask)
    expected = pooled(reference, encoded.ids, everything, encoded.mask.float())
    torch.testing.assert_close(model.embed(SENTENCES, padding_mask=False), expected, atol=TOLERANCE, rtol=0)
    run = model.run(encoded, padding_mask=False)
    short = min(range(3), key=lambda b: len(encoded.tokens[b]))
    t = len(encoded.tokens[short])
    assert float(run.attention[0].weights[short, :, :t, t:].sum(dim=-1).min()) > 0  # real queries weigh [PAD] keys


def test_a_causal_mask_equals_transformers_as_a_decoder(model):
    decoder = BertModel.from_pretrained(model.folder, attn_implementation="eager", is_decoder=True).eval()
    encoded = model.encode(SENTENCES)
    expected = pooled(decoder, encoded.ids, encoded.mask, encoded.mask.float())
    torch.testing.assert_close(model.embed(SENTENCES, causal=True), expected, atol=TOLERANCE, rtol=0)
    weights = model.run(encoded, causal=True).attention[3].weights  # (B, H, T, T)
    assert float(weights.triu(diagonal=1).abs().max()) == 0.0  # no query sees a later key


def test_hiding_the_sep_key_everywhere_equals_transformers_with_it_masked(model, reference):
    encoded = model.encode(SENTENCES)
    sep = encoded.ids == 102  # [SEP] in the vocabulary
    everywhere = [(layer, head) for layer in range(6) for head in range(12)]
    expected = pooled(reference, encoded.ids, encoded.mask & ~sep, encoded.mask.float())
    torch.testing.assert_close(model.embed(SENTENCES, hide_in=everywhere), expected, atol=TOLERANCE, rtol=0)


def test_hiding_the_sep_key_in_one_head_changes_that_head_from_its_layer_on(model):
    encoded = model.encode(SENTENCES)
    plain, hidden = model.run(encoded), model.run(encoded, hide_in=[(3, 5)])
    sep = encoded.ids == 102  # (B, T)
    for layer in range(3):  # before it, nothing moves
        assert torch.equal(plain.attention[layer].weights, hidden.attention[layer].weights)
    weights = hidden.attention[3].weights  # (B, H, T, T)
    assert float(weights[:, 5].masked_select(sep[:, None, :].expand_as(weights[:, 5])).abs().max()) == 0.0
    others = [head for head in range(12) if head != 5]
    assert torch.equal(weights[:, others], plain.attention[3].weights[:, others])  # its layer's other heads: the same
    # The head's other keys share what [SEP] had, in proportion: its row renormalised.
    kept = plain.attention[3].weights[:, 5].masked_fill(sep[:, None, :], 0)
    torch.testing.assert_close(weights[:, 5], kept / kept.sum(dim=-1, keepdim=True), atol=1e-6, rtol=0)


def test_the_sink_shares_of_a_head_are_its_weights_on_those_keys_averaged_over_the_real_queries(model):
    """Recomputed with NumPy, query by query, from the run's weights and the tokens as text."""
    run = model.run_texts(["Hello, world!", "The cat sleeps; the dog barks.", "Yes"])
    shares = sink_shares(run)
    assert set(shares) == set(SINKS) and all(share.shape == (6, 12) for share in shares.values())
    for layer, head in ((0, 0), (2, 7), (5, 11)):
        totals = dict.fromkeys(SINKS, 0.0)
        queries = 0
        for b, tokens in enumerate(run.encoded.tokens):
            weights = run.attention[layer].weights[b, head].numpy().astype(np.float64)  # (T, T), [PAD] keys at 0
            for q in range(len(tokens)):
                queries += 1
                for k, token in enumerate(tokens):
                    punctuation = set(token) <= set(string.punctuation)
                    kind = token if token in ("[CLS]", "[SEP]") else "punctuation" if punctuation else None
                    if kind is not None:
                        totals[kind] += weights[q, k]
        for kind in SINKS:
            assert float(shares[kind][layer, head]) == pytest.approx(totals[kind] / queries, abs=1e-6), (kind, layer, head)
    assert 0 < float(sum(shares.values()).max()) <= 1 + 1e-6


def test_embedding_quality_counts_nearest_pairs_and_mean_cosines():
    """Two pairs and one other sentence, as unit vectors whose cosines are known."""
    from attn_core.real_model.temperature import embedding_quality

    angles = torch.tensor([0.0, 0.1, 1.5, 1.6, 0.8])  # pairs (0, 1) and (2, 3) close; 4 between them
    embeddings = torch.stack([angles.cos(), angles.sin()], dim=-1)  # (5, 2)
    nearest, pair_cosine, other_cosine = embedding_quality(embeddings, n_pairs=2)
    assert nearest == 1.0
    assert pair_cosine == pytest.approx(math.cos(0.1))
    others = [(i, j) for i in range(5) for j in range(i + 1, 5) if (i, j) not in ((0, 1), (2, 3))]
    assert other_cosine == pytest.approx(sum(math.cos(angles[i] - angles[j]) for i, j in others) / len(others))
    swapped = embeddings[[0, 2, 1, 3, 4]]  # now sentence 0's pair is 2, which is far from it
    assert embedding_quality(swapped, n_pairs=2)[0] == 0.0


def test_a_hotter_head_spreads_its_rows_and_the_built_in_pairs_are_found_as_trained(model):
    from attn_core.examples import PARAPHRASE_PAIRS, UNRELATED_SENTENCES
    from attn_core.real_model.temperature import heads_in, measure, sweep_taus

    taus = sweep_taus(HEAD_SIZE)
    assert taus[0] == pytest.approx(0.1) and taus[-1] == pytest.approx(10) and 1.0 in taus
    assert 1 / math.sqrt(HEAD_SIZE) in taus
    head = heads_in("head", 1, 4, 6, 12)
    assert head == [(1, 4)] and len(heads_in("layer", 1, 4, 6, 12)) == 12 and len(heads_in("all", 1, 4, 6, 12)) == 72
    measured = [measure(model, PARAPHRASE_PAIRS, UNRELATED_SENTENCES, head, tau) for tau in (0.1, 1.0, 10.0)]
    entropies = [quality.entropy for quality in measured]
    assert entropies[0] < entropies[1] < entropies[2]  # softmax(s / τ) flattens as τ grows, row by row
    as_trained = measured[1]
    # As trained, at least 11 of the 12 paired sentences have their pair nearest, and pairs are far closer than the rest.
    assert as_trained.nearest_is_pair >= 11 / 12 and as_trained.pair_cosine > as_trained.other_cosine + 0.3


def test_the_padding_check_finds_rounding_with_the_mask_and_the_pad_weight_without_it(model):
    from attn_core.real_model.mask_effects import padding_check

    check = padding_check(model, SENTENCES)
    assert check.masked_difference <= TOLERANCE
    longest = check.pads.index(0)
    assert float(check.unmasked_cosine[longest]) == pytest.approx(1.0, abs=1e-6)
    assert all(float(check.unmasked_cosine[b]) < 0.999 for b in range(3) if check.pads[b] > 0)
    # The pad weight of a head, recomputed query by query from the unmasked run.
    run = model.run(model.encode(SENTENCES), padding_mask=False)
    for layer, head in ((0, 0), (3, 7)):
        total, queries = 0.0, 0
        for b, tokens in enumerate(check.tokens):
            if check.pads[b]:
                rows = run.attention[layer].weights[b, head, : len(tokens)]  # (real queries, T)
                total += float(rows[:, len(tokens) :].sum())
                queries += len(tokens)
        assert float(check.pad_weight[layer, head]) == pytest.approx(total / queries, abs=1e-6)


def test_a_change_is_measured_on_the_embeddings_and_head_by_head(model):
    from attn_core.real_model.mask_effects import change_of

    causal = change_of(model, SENTENCES, causal=True)
    assert causal.head_change.shape == (6, 12) and float(causal.head_change.min()) >= 0
    assert all(0 < float(c) < 0.999 for c in causal.cosine)
    one = change_of(model, SENTENCES, hide_in=[(2, 6)])
    assert float(one.head_change[:2].abs().max()) == 0.0  # layers before it: untouched
    assert float(one.head_change[2, 6]) > 0 and float(one.head_change[2, 6]) == float(one.head_change[2].max())
    encoded = model.encode(SENTENCES)
    before, after = (
        model.run(encoded).attention[2].weights[:, 6],
        model.run(encoded, hide_in=[(2, 6)]).attention[2].weights[:, 6],
    )
    real = encoded.mask
    expected = float((after - before).abs().sum(dim=-1)[real].mean()) / 2  # the share of its rows' weight that moved
    assert float(one.head_change[2, 6]) == pytest.approx(expected, abs=1e-6)


def test_hiding_the_cls_key_everywhere_equals_transformers_with_it_masked(model, reference):
    encoded = model.encode(SENTENCES)
    cls = encoded.ids == 101  # [CLS] in the vocabulary
    everywhere = [(layer, head) for layer in range(6) for head in range(12)]
    expected = pooled(reference, encoded.ids, encoded.mask & ~cls, encoded.mask.float())
    embeddings = model.embed(SENTENCES, hide_token="[CLS]", hide_in=everywhere)
    torch.testing.assert_close(embeddings, expected, atol=TOLERANCE, rtol=0)
