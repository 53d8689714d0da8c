"""Output budgets: the text an agent reads fits `max_tokens`, filled best-first; the JSON keeps everything.

Tokens are counted with a real tokenizer shipped offline (the WordPiece vocabulary of the default
embedder, `data/minilm-tokenizer.json`), not estimated from characters. On code it lands within a few
percent of GPT-style BPE counts; budgets are a ceiling for the reader, not a billing figure.
"""

from __future__ import annotations

from functools import lru_cache

from assay.stages.core.artifacts import Candidate, Retrieval
from assay.stages.core.fs_names import on_disk

@lru_cache(maxsize=1)
def _tokenizer():
    from assay.stages.index.embed import wordpiece_tokenizer

    return wordpiece_tokenizer()


_LINE_TOKENS: dict[str, int] = {}  # tokens per distinct line: a report's legend, guidance and rows repeat across answers
_LINE_TOKENS_MAX = 50_000


def count_tokens(text: str) -> int:
    """Tokens in `text`. WordPiece never joins characters across a newline, so the count is the sum over lines,
    and each distinct line is tokenized once per process (a report is counted to fit, then for its receipt)."""
    return sum(count_many(text.split("\n"))) if text else 0


def count_many(texts: list[str]) -> list[int]:
    """Token counts of many texts; the ones not seen before go through the tokenizer in one batched call."""
    distinct = dict.fromkeys(texts)
    known = {t: _LINE_TOKENS[t] for t in distinct if t in _LINE_TOKENS}
    missing = [t for t in distinct if t not in known]
    if missing:
        known.update(zip(missing, (len(e.ids) for e in _tokenizer().encode_batch_fast(missing, add_special_tokens=False))))
        if len(_LINE_TOKENS) + len(missing) > _LINE_TOKENS_MAX:
            _LINE_TOKENS.clear()
        _LINE_TOKENS.update((t, known[t]) for t in missing)
    return [known[t] for t in texts]


def fit(blocks: list[list[str]], max_tokens: int | None, more: str = "{n} more line(s) not shown: ask with a larger max_tokens") -> str:
    """Lines of each block in order (most important block first) while they fit, then one line counting the
    rest. A line is never cut in half, and room for the closing line is always kept. A budget too small for
    anything still gets the first line and that count: an empty text reads as "no answer", not "too small"."""
    lines = [line for block in blocks for line in block]
    whole = "\n".join(lines)
    if max_tokens is None or count_tokens(whole) <= max_tokens:
        return whole
    kept: list[str] = []
    used = 0
    costs = count_many(lines)
    heads = {sum(map(len, blocks[:b])) for b, block in enumerate(blocks) if len(block) > 1}  # a block's heading line
    reserve = count_tokens(more.format(n=len(lines))) + 1  # the longest count it can show
    for i, line in enumerate(lines):
        cost = costs[i] + 1
        if used + cost + reserve > max_tokens:
            if not kept:  # not even the first line fits: it and the count anyway, over the budget
                return "\n".join([line, more.format(n=len(lines) - 1)]) if len(lines) > 1 else line
            if len(kept) > 1 and i - 1 in heads:  # a heading whose first row did not fit ("Sources:" alone) goes too
                kept.pop()
                i -= 1
            note = more.format(n=len(lines) - i)
            return "\n".join([*kept, note]) if used + reserve <= max_tokens else "\n".join(kept)
        kept.append(line)
        used += cost
    return "\n".join(kept)


def search_rows(candidates: list[Candidate], why) -> list[dict]:
    """Search results as JSON rows, the same in every door: each candidate but its body, with its rank, `why` (what
    ranked it) and the rank stage's score and signals as `score` and `signals` (the MCP tool's first names)."""
    return [{**c.model_dump(mode="json", exclude={"body", "rank_score", "rank_signals"}), "rank": position,
             "score": c.rank_score, "signals": c.rank_signals, "why": why(c)}
            for position, c in enumerate(candidates, start=1)]


def search_json(query: str, result: Retrieval, why, words=lambda text: text) -> dict:
    """What a search found, as data: the rows, and the degraded-retrieval note and the index's freshness, which a
    reader must not lose with the text (`words`: the door's terms for the note's advice)."""
    freshness = result.freshness
    return {"query": query, "results": search_rows(result.candidates, why), "note": words(result.note) if result.note else result.note,
            "freshness": freshness.model_dump(mode="json") if freshness is not None else None}


def score_text(value: float | None, digits: int) -> str:
    """A retrieval score as the search rows print it: `-` where that retriever did not find the passage."""
    return "-" if value is None else f"{value:.{digits}f}"


def search_text(candidates: list[Candidate], max_tokens: int | None, outline: bool = False, why=None,
                budget_name: str = "max_tokens") -> str:
    """Search results for an agent: whole entities best-first while they fit, then signatures and locations
    only, then "N more". `outline`: signatures and locations only, from the first row. `budget_name`: what the
    door calls the budget (the CLI's `--max-tokens`)."""
    def head(c: Candidate, rank: int) -> str:
        reason = why(c) if why is not None else ""
        stale = " STALE" if c.stale else ""
        return f"{rank}. {c.file}:{c.start_line}-{c.end_line} [{c.entity}] ({c.kind}){stale}" + (f" why: {reason}" if reason else "")

    def outline_row(c: Candidate, rank: int) -> str:
        sig = f" {c.signature[:160]}" if c.signature else ""
        return head(c, rank) + sig

    if max_tokens is None and not outline:
        return "\n".join(head(c, i) for i, c in enumerate(candidates, start=1))

    def more(left: int) -> str:
        return f"{left} more result(s) not shown: ask with a larger {budget_name}, or open one of them at its file:line"

    out: list[str] = []
    used = 0
    full = not outline
    for i, c in enumerate(candidates, start=1):
        left = len(candidates) - i + 1
        note = more(left)
        reserve = count_tokens(note) + 2
        if full:
            block = head(c, i) + "\n" + c.body
            cost = count_tokens(block + "\n")
            if max_tokens is None or used + cost + reserve <= max_tokens:
                out.append(block)
                used += cost
                continue
            full = False  # the rest as signatures: more results, fewer tokens each
        row = outline_row(c, i)
        cost = count_tokens(row + "\n")
        if max_tokens is not None and used + cost + (reserve if i < len(candidates) else 0) > max_tokens:
            if not out:  # a budget too small for anything: the best hit's location and the count anyway
                out.extend([head(c, i), more(left - 1)] if left > 1 else [head(c, i)])
            else:
                out.append(note)
            break
        out.append(row)
        used += cost
    return "\n".join(out)


BYTES_PER_TOKEN = 3.4  # measured: the pytest 8.4.2 sdist's .py files with the shipped tokenizer (3.42 bytes per token)


def file_tokens(root, files: list[str]) -> int:
    """About how many tokens the whole cited files hold (what an agent would read without Assay): their size
    over the measured bytes per token, so the figure costs a `stat`, not a read and a tokenizer pass."""
    total = 0
    for f in dict.fromkeys(files):
        try:
            total += round(on_disk(root, f).stat().st_size / BYTES_PER_TOKEN)
        except OSError:
            continue
    return total
