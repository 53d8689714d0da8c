"""BM25 reads identifiers and words holding non-ASCII letters: `計算する` gave no token, `método` the token `todo`."""

from __future__ import annotations

from assay.stages.index.lexical import LexicalIndex
from assay.stages.index.tokens import lexical_tokens, tokenize


def test_non_ascii_words_are_tokens_whole_and_by_snake_case_part() -> None:
    assert lexical_tokens("計算する(x)") == ["計算する"]
    assert lexical_tokens("def größe_berechnen(wert):") == ["def", "wert", "größe_berechnen", "größe", "berechnen"]
    assert "todo" not in lexical_tokens("def método(self):") and "método" in lexical_tokens("def método(self):")
    assert lexical_tokens("What does Ünïcödé do?") == ["ünïcödé"]


def test_ascii_text_tokenizes_as_before() -> None:
    """The learned models' features come from `tokenize`: on ASCII text BM25's tokens are exactly its tokens."""
    for text in ("HTTPAdapter.send_request(x)", "def merge_cookies(jar, cookies):\n    return jar", "URLs and userIDs 42"):
        assert lexical_tokens(text) == tokenize(text)


def test_bm25_finds_a_definition_by_its_non_ascii_name_and_not_by_a_fragment() -> None:
    index = LexicalIndex.build(["a", "b", "c"], ["def 計算する(x):\n    return x", "class Ünïcödé:\n    def método(self): pass",
                                                 "def todo_list():\n    return []"])
    assert [i for i, _ in index.search("What does 計算する call?", 3)] == ["a"]
    assert [i for i, _ in index.search("todo", 3)] == ["c"]
    assert [i for i, _ in index.search("método", 3)] == ["b"]


def test_camel_case_parts_of_a_non_ascii_name_are_tokens() -> None:
    """`naïveBayesModel` was found by "model" before non-ASCII words were read whole; it must still be."""
    assert {"naïve", "model"} <= set(lexical_tokens("naïveBayesModel")) and "data" in lexical_tokens("getÜberData")
    index = LexicalIndex.build(["a", "b"], ["def naïveBayesModel(x): pass", "def other(x): pass"])
    assert [i for i, _ in index.search("model", 2)] == ["a"]


def test_a_decomposed_name_is_the_composed_one() -> None:
    import unicodedata

    composed, decomposed = "café_total", unicodedata.normalize("NFD", "café_total")
    assert lexical_tokens(decomposed) == lexical_tokens(composed) == ["café_total", "café", "total"]
