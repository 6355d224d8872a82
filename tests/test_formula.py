"""Step formulas in plain Unicode, as chart subtitles show them (the views write them in LaTeX)."""

from __future__ import annotations

import pytest

from attn_ui.formula import plain_formula


@pytest.mark.parametrize(
    ("latex", "plain"),
    [
        (r"X \in \mathbb{R}^{T \times C}", "X ∈ ℝ^(T × C)"),
        (r"K = X_{src}\,W_K + b_K", "K = X_src W_K + b_K"),
        (r"S = Q K^\top", "S = Q Kᵀ"),
        (r"S' = S \cdot \frac{1}{\sqrt{64}}", "S' = S · 1/√64"),
        (r"S' = S \cdot 1 \;\text{(unscaled)}", "S' = S · 1 (unscaled)"),
        (r"A = \operatorname{softmax}_{\text{keys}}(S')", "A = softmax_keys(S')"),
        (r"A = \operatorname{softmax}\!\left(0.5 \cdot \frac{Q K^\top}{\sqrt{64}}\right)", "A = softmax(0.5 · (Q Kᵀ)/√64)"),
        (r"S' = \frac{Q K^\top}{\sqrt{d_k}}, \; -\infty \text{ where masked}", "S' = (Q Kᵀ)/√d_k, -∞ where masked"),
        (r"M^{pad}_{b j} = [\,j < \text{length}_b\,]", "M^pad_bj = [ j < length_b ]"),
        (r"M_{ij} \in \{\text{False}, \text{True}\}", "M_ij ∈ {False, True}"),
        (r"Z^{2} = A^{2} V^{2}", "Z² = A² V²"),
        (r"M_{ij} = [\,\mathrm{doc}(i) = \mathrm{doc}(j)\,] \wedge [\,j \le i\,]", "M_ij = [ doc(i) = doc(j) ] ∧ [ j ≤ i ]"),
        (r"M_{ij} = [\,j \le i\,] \vee [\,i < P \wedge j < P\,]", "M_ij = [ j ≤ i ] ∨ [ i < P ∧ j < P ]"),
        (r"\operatorname{Concat}(Z^0, \dots, Z^{h-1}) \in \mathbb{R}^{T \times C}", "Concat(Z⁰, …, Z^(h-1)) ∈ ℝ^(T × C)"),
    ],
)
def test_formulas_of_the_views_read_as_plain_text(latex, plain):
    assert plain_formula(latex) == plain


def test_an_unknown_command_keeps_its_name():
    assert plain_formula(r"\alpha_{i} = \beta") == "alpha_i = beta"
