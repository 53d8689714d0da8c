"""A source file's bytes as text, and text as lines, the way interpreters, editors and git read them.

Lines break at "\\n", "\\r\\n" and a lone "\\r" only: `str.splitlines` also breaks at form feeds, U+0085, U+2028 and
others, which put a passage's text a line or two away from the lines it cites. Text is decoded as the file says:
a Python file by its PEP 263 coding line, any file by a UTF-8 or UTF-16 byte-order mark, else as UTF-8 (with
replacement characters where it is not); the mark itself is no part of the text.
"""

from __future__ import annotations

import codecs
import io
import re
import tokenize

_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_LONE_CR = re.compile(rb"\r(?!\n)")
_UTF16_BOMS = (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)
_UTF32_LE_BOM = codecs.BOM_UTF32_LE  # starts with UTF-16 LE's mark: told apart by its two zero bytes
INVALID_UTF8 = "invalid UTF-8 (decoded with replacement characters)"


def source_lines(text: str) -> list[str]:
    """The text's lines without their endings, numbered as editors, git and tree-sitter number them."""
    if not text:
        return []
    lines = _LINE_BREAK.split(text)
    if lines[-1] == "":  # a final line ending ends the last line; it opens no empty one
        lines.pop()
    return lines


def decoded_lines(data: bytes, language: str) -> list[str]:
    """A file's bytes as the lines the index numbers (decoded as `utf8_source` decodes them): what a receipt's line,
    git's line mapping and a "past the end" check all count."""
    text, _ = utf8_source(data, language)
    return source_lines(text.decode("utf-8", "replace"))


def has_utf16_bom(head: bytes) -> bool:
    """The bytes open with a UTF-16 byte-order mark and read as UTF-16 text (no NUL character): text, whose ASCII
    characters each carry a zero byte, not a binary file."""
    if not head.startswith(_UTF16_BOMS) or head.startswith(_UTF32_LE_BOM):
        return False
    return "\x00" not in head[: len(head) // 2 * 2].decode("utf-16", "replace")


def utf8_source(source: bytes, language: str) -> tuple[bytes, str]:
    """The file's text as UTF-8 bytes without a byte-order mark (what tree-sitter parses and passages quote), and ''
    or what was wrong with its encoding. Bytes that are UTF-8 already come back as they are, valid or not."""
    encoding = _encoding(source, language)
    if encoding == "utf-8":
        try:
            source.decode("utf-8")
        except UnicodeDecodeError:
            return source, INVALID_UTF8
        return source, ""
    try:
        return source.decode(encoding).encode("utf-8"), ""
    except UnicodeDecodeError:
        pass
    bare = source.removeprefix(codecs.BOM_UTF8)
    if encoding not in ("utf-16", "utf-8-sig"):  # a wrong coding line over UTF-8 text: the text is what counts
        try:
            return bare.decode("utf-8").encode("utf-8"), ""
        except UnicodeDecodeError:
            pass
    name = {"utf-16": "UTF-16", "utf-8-sig": "UTF-8"}.get(encoding, f"{encoding}, as its coding line says,")
    return source.decode(encoding, "replace").encode("utf-8"), f"invalid {name} (decoded with replacement characters)"


def _encoding(source: bytes, language: str) -> str:
    """The codec that reads the file: a UTF-16 mark first (no coding line can be read past it), then a Python file's
    coding line (with or without a UTF-8 mark), then a UTF-8 mark; 'utf-8' when nothing says otherwise."""
    if has_utf16_bom(source[:8192]):
        return "utf-16"
    if language == "python":
        declared = _python_coding(source)
        if declared is not None:
            return declared
    return "utf-8-sig" if source.startswith(codecs.BOM_UTF8) else "utf-8"


def _python_coding(source: bytes) -> str | None:
    """What the interpreter would decode the file with (PEP 263), or None when its first lines do not say validly
    (an unknown codec, a mark that contradicts the coding line, a first line that is not UTF-8 without a coding line).
    A lone CR ends a line here as it does for Python."""
    head = _LONE_CR.sub(b"\n", source[:4096])
    try:
        found, _ = tokenize.detect_encoding(io.BytesIO(head).readline)
    except SyntaxError:
        return None
    name = codecs.lookup(found).name
    return None if name.startswith(("utf-16", "utf-32")) else name  # a coding line in ASCII cannot be UTF-16's
