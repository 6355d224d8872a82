"""attn_core.geometry and attn_core.positions: order blindness, the two kinds of position, the query-key map."""

from __future__ import annotations

import math

import pytest
import torch

from attn_core import MiniLM, embed_tokens, qkv_projections, rope, sinusoidal
from attn_core.geometry import (
    by_distance,
    head_queries_keys,
    normalise_queries_keys,
    order_check,
    pair_rotation,
    pca_2d,
    position_scores,
    query_key_map,
    rotation_similarity,
    shuffled_order,
    weights_from,
    word_paths,
)

WORDS = "the a cat dog sat ran on under mat rug river bank money I we play".split()


def random_sentence(seed: int) -> list[str]:
    generator = torch.Generator().manual_seed(seed)
    t = int(torch.randint(3, 12, (1,), generator=generator))
    return [WORDS[int(i)] for i in torch.randint(len(WORDS), (t,), generator=generator)]


@pytest.mark.parametrize("seed", range(8))
def test_shuffling_the_tokens_shuffles_the_outputs_unless_positions_are_added(seed):
    tokens = random_sentence(seed)
    x = embed_tokens(tokens, 16, seed)  # (T, 16)
    w_q, w_k, w_v = qkv_projections(16, 8, seed)
    order = shuffled_order(len(tokens), seed + 1)
    plain = order_check(x, w_q, w_k, w_v, order)
    assert plain.difference < 1e-5 and plain.weights_difference < 1e-5
    assert torch.equal(plain.shuffled.q, (x @ w_q)[order])  # the shuffle's queries are the tokens' own, moved
    placed = order_check(x, w_q, w_k, w_v, order, positions=True)
    moved = [slot for slot, token in enumerate(order.tolist()) if tokens[slot] != tokens[token]]
    assert moved, "the permutation moved some word to a slot of another word"
    assert placed.difference > 1e-3


def test_seed_zero_keeps_the_order_and_any_other_moves_a_token():
    assert shuffled_order(5, 0).tolist() == [0, 1, 2, 3, 4]
    for seed in range(1, 50):
        order = shuffled_order(3, seed)
        assert sorted(order.tolist()) == [0, 1, 2] and order.tolist() != [0, 1, 2]
    assert torch.equal(shuffled_order(7, 9), shuffled_order(7, 9))
    assert shuffled_order(1, 4).tolist() == [0]


def test_sinusoidal_is_the_formula_of_attention_is_all_you_need():
    t, d = 12, 10
    encoding = sinusoidal(t, d)
    for pos in range(t):
        for i in range(d // 2):
            angle = pos / 10000 ** (2 * i / d)
            assert float(encoding[pos, 2 * i]) == pytest.approx(math.sin(angle), abs=1e-6)
            assert float(encoding[pos, 2 * i + 1]) == pytest.approx(math.cos(angle), abs=1e-6)


def test_rope_keeps_norms_and_scores_depend_on_the_distance_only():
    generator = torch.Generator().manual_seed(1)
    q, k = torch.randn(2, 7, 32, generator=generator)  # (T, d) each, float32
    positions = torch.arange(7)
    assert torch.allclose(rope(q, positions).norm(dim=-1), q.norm(dim=-1), atol=1e-5)
    for shift in (1, 5, 100, -3, 2.5):
        for m, n in ((0, 0), (3, 1), (1, 6), (6, 2)):
            here = rope(q[m : m + 1], torch.tensor([m])) @ rope(k[n : n + 1], torch.tensor([n])).T
            there = rope(q[m : m + 1], torch.tensor([m + shift])) @ rope(k[n : n + 1], torch.tensor([n + shift])).T
            assert float(here) == pytest.approx(float(there), abs=1e-5)


def test_a_rope_score_grid_has_constant_diagonals_and_a_sinusoidal_one_does_not():
    x = embed_tokens(["cat", "mat"], 16, 0)  # (2, 16)
    w_q, w_k, _ = qkv_projections(16, 8, 0)
    rope_grid = position_scores(x[0], x[1], w_q, w_k, 10, "rope")  # (10, 10)
    sinusoidal_grid = position_scores(x[0], x[1], w_q, w_k, 10, "sinusoidal")
    assert rope_grid.shape == sinusoidal_grid.shape == (10, 10)
    assert by_distance(rope_grid).spread < 1e-5
    assert by_distance(sinusoidal_grid).spread > 1e-2
    # Each cell is the two words' own q and k, placed: the formula of each kind, cell by cell.
    q, k = x[0] @ w_q, x[1] @ w_k
    rotated = rope(q[None], torch.tensor([7])) @ rope(k[None], torch.tensor([3])).T
    assert float(rope_grid[7, 3]) == pytest.approx(float(rotated), abs=1e-5)
    encoding = sinusoidal(10, 16)
    added = ((x[0] + encoding[7]) @ w_q) @ ((x[1] + encoding[3]) @ w_k)
    assert float(sinusoidal_grid[7, 3]) == pytest.approx(float(added), abs=1e-5)
    with pytest.raises(ValueError, match="kind"):
        position_scores(x[0], x[1], w_q, w_k, 4, "learned")


def test_by_distance_reads_each_diagonal():
    scores = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]])
    stats = by_distance(scores)
    assert stats.distances.tolist() == [-2, -1, 0, 1, 2]  # m − n
    assert stats.mean.tolist() == [3.0, 4.0, 5.0, 6.0, 7.0]
    assert stats.low.tolist() == [3.0, 2.0, 1.0, 4.0, 7.0] and stats.high.tolist() == [3.0, 6.0, 9.0, 8.0, 7.0]


def test_a_pair_turns_by_theta_per_position_and_keeps_its_length():
    vector = torch.randn(8, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    turn = pair_rotation(vector, 1, 6)
    assert turn.theta == pytest.approx(10000 ** (-2 / 8))
    start = torch.complex(vector[2], vector[3])
    for m in range(6):
        expected = start * torch.polar(torch.tensor(1.0, dtype=torch.float64), torch.tensor(m * turn.theta, dtype=torch.float64))
        assert torch.allclose(turn.points[m], torch.stack([expected.real, expected.imag]))
    with pytest.raises(ValueError, match="pairs 0 to 3"):
        pair_rotation(vector, 4, 3)


def test_a_rotated_vector_points_less_its_own_way_with_distance():
    similarity = rotation_similarity(16, torch.arange(0, 20))
    assert float(similarity[0]) == 1.0
    q = torch.randn(4000, 16, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    turned = rope(q, torch.full((4000,), 5))
    measured = torch.nn.functional.cosine_similarity(q, turned, dim=-1).mean()
    assert float(measured) == pytest.approx(float(similarity[5]), abs=0.02)
    assert float(similarity[1:4].max()) < 1 and float(similarity[2]) < float(similarity[1])


def test_normalising_queries_and_keys_leaves_the_weights_unchanged():
    generator = torch.Generator().manual_seed(4)
    q = torch.randn(6, 8, generator=generator, dtype=torch.float64) * 3 + 1
    k = torch.randn(6, 8, generator=generator, dtype=torch.float64) * 0.5 - 2
    q_normal, k_normal, c = normalise_queries_keys(q, k)
    assert torch.allclose(k_normal.mean(dim=0) * c, q_normal.mean(dim=0) / c)  # the keys' mean moved to the queries'
    assert float(q_normal.norm(dim=-1).mean()) == pytest.approx(float(k_normal.norm(dim=-1).mean()))
    for scale in (None, 1.0):  # with and without 1/√d_k
        assert torch.allclose(weights_from(q_normal, k_normal, scale), weights_from(q, k, scale), atol=1e-12)


def test_the_map_is_the_pca_of_the_normalised_queries_and_keys():
    generator = torch.Generator().manual_seed(5)
    q, k = torch.randn(2, 5, 8, generator=generator, dtype=torch.float64)
    weights = weights_from(q, k)
    found = query_key_map(q, k, weights, top=2)
    points = torch.cat([found.q, found.k])  # (10, 8)
    centred = points - points.mean(dim=0)
    # The map keeps distances along its two axes: its Gram matrix is the best rank-2 one of the centred points.
    u, s, _ = torch.linalg.svd(centred)
    assert torch.allclose(found.points @ found.points.T, (u[:, :2] * s[:2]) @ (u[:, :2] * s[:2]).T, atol=1e-10)
    assert torch.equal(found.strongest[:, 0], weights.argmax(dim=-1))
    assert torch.equal(found.nearest, torch.cdist(found.points[:5], found.points[5:]).argmin(dim=-1))
    assert found.agreement == float((found.nearest == weights.argmax(dim=-1)).double().mean())
    assert float(found.explained.sum()) <= 1 + 1e-12


def test_pca_signs_are_fixed():
    points = torch.randn(9, 4, generator=torch.Generator().manual_seed(6), dtype=torch.float64)
    first, _ = pca_2d(points)
    second, _ = pca_2d(points + 10)  # the same cloud, elsewhere
    assert torch.allclose(first, second, atol=1e-9)


@pytest.fixture(scope="module")
def model() -> MiniLM:
    return MiniLM.load()


def test_a_real_heads_map_keeps_its_weights(model):
    run = model.run_texts(["We sat on the river bank", "A longer sentence pads the first one in the batch"])
    q, k, weights = head_queries_keys(run, 2, 5)
    t = len(run.encoded.tokens[0])
    assert q.shape == k.shape == (t, 32) and torch.allclose(weights, run.weights(0)[2, 5])
    assert torch.allclose(weights_from(q, k), weights, atol=1e-5)  # no padding key left in
    found = query_key_map(q, k, weights)
    assert torch.allclose(weights_from(found.q, found.k), weights, atol=1e-5)


def test_the_bank_paths_are_its_vectors_layer_by_layer(model):
    sentences = ["I deposited money at the bank", "We sat on the river bank", "No such word here"]
    paths = word_paths(model, sentences, "bank")
    assert paths.sentences == sentences[:2] and len(paths.stages) == 2 + model.config.n_layers
    assert paths.points.shape == (2, len(paths.stages), 2)
    run = model.run_texts(sentences[:2])
    stages = (run.word_vectors, *run.hidden_states)
    vectors = torch.stack([stage[b, run.encoded.positions_of(b, "bank")[0]] for b in range(2) for stage in stages])
    assert torch.allclose(paths.points.reshape(-1, 2), pca_2d(vectors)[0], atol=1e-4)
    # Identical rows of the embedding table: the two sentences' paths start at the same point.
    assert torch.allclose(paths.points[0, 0], paths.points[1, 0], atol=1e-6)
    with pytest.raises(ValueError, match="at least two"):
        word_paths(model, sentences, "river")
