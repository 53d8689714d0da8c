"""Doc-comment markup reduced to the words it marks up.

C#'s `///` comments are XML (`<summary>`, `<see cref="X"/>`, `<param name="x">`), Javadoc and KDoc write
`{@link X}` and `{@code x}`, and both carry HTML (`<p>`, `<code>`). The tags are not what a reader or a query
says: kept, `<summary>` was the first word of every C# docstring that the report quoted and that BM25 and the
embedder read. Only doc-comment tags are touched, so a docstring that says `Returns <Response [200]>` or a
type such as `Array<string>` keeps its angle brackets.
"""

from __future__ import annotations

import re

_TAGS = (
    "summary|remarks|para|returns|value|example|exception|param|typeparam|see|seealso|paramref|typeparamref|"
    "inheritdoc|list|item|term|description|listheader|include|permission|c|code|p|br|b|i|em|strong|tt|pre|"
    "ul|ol|li|a|blockquote|h[1-6]|dl|dt|dd|sup|sub|u"
)
# `<see cref="T:System.String"/>` and friends: the reference is the word.
_REFERENCE = re.compile(r'<(?:see|seealso|paramref|typeparamref)\s+(?:cref|name|langword|href)="(?:[A-Z]:)?([^"]*)"\s*/>')
_NAMED = re.compile(r'<(param|typeparam)\s+name="([^"]*)"\s*>')  # `<param name="x">the x</param>` -> `x: the x`
_RETURNS = re.compile(r"<returns>\s*")
_EXCEPTION = re.compile(r'<exception\s+cref="(?:[A-Z]:)?([^"]*)"\s*>')
_TAG = re.compile(rf"</?(?:{_TAGS})(?:\s[^<>]*)?/?>")  # lower case only: `Foo<A>` is a generic type
_INLINE = re.compile(r"\{@(?:link|linkplain|code|literal|value|see)\s+([^{}]*)\}")  # Javadoc / KDoc / JSDoc
# Markdown links (rustdoc, Go, JSDoc, Python docs): `[text](url)`, `[text][ref]`, rustdoc's `[`Foo`]`, and the
# `[ref]: url` lines they point at; reStructuredText's `` `text <url>`_ ``
_MD_LINK = re.compile(r"\[([^\[\]\n]+)\]\((?=[^()\s]*[./#:])[^()\s]*(?:\([^()\s]*\)[^()\s]*)*\)")  # a target has . / # or :
_MD_REFERENCE = re.compile(r"\[([^\[\]\n]+)\]\[([^\[\]\n]*)\]")
_MD_BARE = re.compile(r"\[(`[^`\n]+`)\](?![(\[:])")
_MD_DEFINITION = re.compile(r"(?m)^\s*\[([^\[\]\n]+)\]:\s*\S+.*$\n?")
_RST_LINK = re.compile(r"`([^`<>\n]+?)\s*<[^<>`\s]+>`__?")


# an admonition's opening line (MkDocs Material, Python-Markdown): `!!! note`, `??? warning "Deprecated"`, `???+ tip`
_ADMONITION = re.compile(r'^(?:!!!|\?\?\?\+?)[ \t]+[\w-]+(?:[ \t]+"([^"\n]*)")?[ \t]*$', re.M)


def summary_first(text: str) -> str:
    """A doc that opens with an admonition (pydantic's `!!! abstract "Usage Documentation"` and a link, on BaseModel,
    Field, validate_call...) has its summary after it: the aside moves to the end, so the summary leads what the
    embedder reads and what the rank stage takes for the doc summary. Each admonition's opening line keeps only
    its title."""
    if "!!!" not in text and "???" not in text:
        return text
    head, _, rest = text.partition("\n\n")
    if _ADMONITION.match(head) and rest.strip():
        text = f"{rest}\n\n{head}"
    return re.sub(r"\n{3,}", "\n\n", _ADMONITION.sub(lambda m: m.group(1) or "", text)).strip()


def strip_doc_markup(text: str) -> str:
    """`<summary>Finds <see cref="Foo"/>.</summary>` -> `Finds Foo.`; `{@link Bar#baz}` -> `Bar#baz`;
    `[`Captures`](struct.Captures.html)` -> `` `Captures` ``: a link's target is no word a query says."""
    text = summary_first(text)
    if "[" in text or "`_" in text:
        defined = {m.group(1).lower() for m in _MD_DEFINITION.finditer(text)}
        if defined:  # `[text][ref]` only where `[ref]: url` says it is a link: `T["_zod"]["input"]` is code
            text = _MD_DEFINITION.sub("", text)
            text = _MD_REFERENCE.sub(lambda m: m.group(1) if (m.group(2) or m.group(1)).lower() in defined else m.group(0), text)
        text = _MD_LINK.sub(r"\1", text)
        text = _MD_BARE.sub(r"\1", text)
        text = _RST_LINK.sub(r"\1", text)
    if "<" not in text and "{@" not in text:
        return text.strip()
    text = _REFERENCE.sub(r"\1", text)
    text = _NAMED.sub(r"\2: ", text)
    text = _RETURNS.sub("Returns ", text)
    text = _EXCEPTION.sub(r"Throws \1: ", text)
    text = _INLINE.sub(lambda m: m.group(1).strip(), text)
    text = _TAG.sub("", text)
    lines = [" ".join(line.split()) for line in text.splitlines()]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
