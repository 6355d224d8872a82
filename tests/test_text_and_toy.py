"""Tokenizer, seeded toy inputs and the Pipeline's walkthrough."""

import pytest
import torch

from attn_core import embed_tokens, qkv_projections, rope, sdpa_difference, sinusoidal, tokenize
from attn_core.walkthrough import PRESETS, build_walkthrough


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("I am going to play", ["I", "am", "going", "to", "play"]),
        (
            "The animal didn't cross the street, because it was tired!",
            ["The", "animal", "didn't", "cross", "the", "street", ",", "because", "it", "was", "tired", "!"],
        ),
        ("cafe\u0301 naïve", ["café", "naïve"]),  # decomposed accents are composed first
        ("我喜欢 AI", ["我", "喜", "欢", "AI"]),
        ("ok 👍🏽 👨\u200d👩\u200d👧 🇫🇷🇩🇪", ["ok", "👍🏽", "👨\u200d👩\u200d👧", "🇫🇷", "🇩🇪"]),
        ("हिन्दी भाषा", ["हिन्दी", "भाषा"]),
        ("a\u200bb\x00c", ["a", "b", "c"]),  # invisible characters separate tokens
        ("", []),
        ("  \n\t\u200d ", []),
    ],
)
def test_tokenize(text, tokens):
    assert tokenize(text) == tokens


def test_same_word_same_vector_in_any_sentence():
    first = embed_tokens(tokenize("the bank approved my loan"), 16, seed=3)
    second = embed_tokens(tokenize("we sat on the river Bank"), 16, seed=3)
    assert torch.equal(first[1], second[5])  # "bank" == "Bank"
    assert torch.equal(first[0], second[3])  # "the"
    assert not torch.equal(first[1], embed_tokens(["bank"], 16, seed=4)[0])  # another seed, another table


def test_same_seed_same_numbers_everywhere():
    # Pinned values: a change to the seeding scheme would change every shared link's numbers.
    assert embed_tokens(["attention"], 4, seed=0)[0].tolist() == pytest.approx([0.8582, 1.0949, 0.1151, 1.8907], abs=1e-4)
    w_q, _, _ = qkv_projections(4, 2, seed=0)
    assert w_q[0].tolist() == pytest.approx([-0.0938, -0.1468], abs=1e-4)


def test_sinusoidal_positions():
    pe = sinusoidal(4, 6)
    assert pe.shape == (4, 6)
    assert pe[0].tolist() == [0, 1, 0, 1, 0, 1]  # sin(0), cos(0)
    assert not torch.equal(pe[1], pe[2])


def test_without_positions_repeated_words_get_identical_outputs():
    tokens = tokenize("the cat saw the dog")
    plain = build_walkthrough("custom", tokens, 16, 8).steps.context[0]
    assert torch.allclose(plain[0], plain[3])  # "the" ... "the"
    with_positions = build_walkthrough("custom", tokens, 16, 8, positional=True).steps.context[0]
    assert not torch.allclose(with_positions[0], with_positions[3])


def test_self_attention_is_permutation_equivariant():
    tokens = tokenize("I am going to play")
    out = build_walkthrough("custom", tokens, 16, 8).steps.context[0]
    out_reversed = build_walkthrough("custom", tokens[::-1], 16, 8).steps.context[0]
    assert torch.allclose(out.flip(0), out_reversed, atol=1e-6)


@pytest.mark.parametrize("preset", PRESETS)
def test_every_preset_agrees_with_sdpa(preset):
    walk = build_walkthrough(preset, tokenize("hello there"), 12, 6, seed=1)
    assert sdpa_difference(walk.steps) < 1e-5
    assert len(walk.query_tokens) == walk.steps.weights.shape[0]
    assert [len(t) for t in walk.query_tokens] == [walk.steps.weights.shape[1]] * len(walk.query_tokens)


def test_presets_reproduce_the_sources():
    playing = build_walkthrough("playing-outside", [], 99, 99).steps
    assert torch.allclose(playing.weights[0], torch.tensor([[0.5137, 0.4863], [0.5206, 0.4794]]), atol=5e-5)
    batch = build_walkthrough("random-batch", [], 99, 99)
    assert batch.x.shape == (6, 8, 32) and batch.w_q.shape == (32, 16)
    assert batch.steps.q.shape == (6, 8, 16) and batch.steps.weights.shape == (6, 8, 8)
    cat = build_walkthrough("cat-sat", [], 10, 5)
    assert cat.query_tokens == [["The", "cat", "sat", "on", "the", "mat"]]


def test_cross_attention_walkthrough():
    walk = build_walkthrough("custom", tokenize("le chat"), 8, 4, source_tokens=tokenize("the black cat"))
    assert walk.key_tokens == [["the", "black", "cat"]]
    assert walk.steps.weights.shape == (1, 2, 3)
    assert walk.x_source.shape == (1, 3, 8)


def test_unscaled_walkthrough_is_sharper():
    tokens = tokenize("a fairly long sentence to compare sharpness of attention rows")
    scaled = build_walkthrough("custom", tokens, 64, 64, scaled=True).steps.weights
    unscaled = build_walkthrough("custom", tokens, 64, 64, scaled=False).steps.weights
    assert unscaled.amax(-1).mean() > scaled.amax(-1).mean()


def test_rope_scores_depend_on_the_distance_only_and_keep_lengths():
    torch.manual_seed(0)
    q, k = torch.randn(2, 16, dtype=torch.float64).unbind(0)  # one query and one key word, d = 16

    def score(m: float, n: float) -> float:
        return float(rope(q[None], torch.tensor([m])) @ rope(k[None], torch.tensor([n]))[0])

    assert score(3, 1) == pytest.approx(score(10, 8), abs=1e-12) == pytest.approx(score(2.5, 0.5), abs=1e-12)
    assert score(3, 1) != pytest.approx(score(3, 2), abs=1e-3)
    x = torch.randn(3, 5, 16, dtype=torch.float64)  # (B, T, d)
    rotated = rope(x, torch.arange(5))
    assert torch.allclose(rotated.norm(dim=-1), x.norm(dim=-1)) and torch.equal(rotated[:, 0], x[:, 0])  # position 0
    # Pair i of position m turns by m·base^(-2i/d): the complex product (x_2i + i·x_2i+1)·e^{i·m·θ_i}.
    theta = 10000.0 ** (-torch.arange(0, 16, 2, dtype=torch.float64) / 16)
    turns = torch.polar(torch.ones(5, 8, dtype=torch.float64), torch.arange(5.0)[:, None] * theta)  # (T, d/2)
    expected = torch.view_as_real(torch.view_as_complex(x.reshape(3, 5, 8, 2)) * turns)
    assert torch.allclose(rotated, expected.reshape(3, 5, 16))
    with pytest.raises(ValueError, match="d must be even"):
        rope(torch.randn(4, 5), torch.arange(4))
