"""Redact secrets before any text leaves the machine for a cloud endpoint."""

from __future__ import annotations

import re

PLACEHOLDER = "[REDACTED]"

# Private keys (PEM, OpenSSH, PGP). A long key is split across passages, so a half with only its BEGIN line or only
# its END line is caught too, as is the base64 body around it (see _key_fragments).
_KEY_LABEL = r"(?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
_BEGIN = re.compile(r"-----BEGIN " + _KEY_LABEL)
_END = re.compile(r"-----END " + _KEY_LABEL)
# Key armor holds no angle brackets: a match never runs from one passage's half of a key (<passage ...>) across
# the passages between to the other half, which would silently drop them from the prompt. Nor does it run past
# another BEGIN; and the body must be key material (_whole_keys), or code that merely names both markers as
# strings or in comments would lose every line between them.
_WHOLE_KEY = re.compile(_BEGIN.pattern + r"(?P<body>(?:(?!-----BEGIN )[^<>])*?)" + _END.pattern)
# A header with no END: the rest of its line is key, unless a quote closes the string right after the marker
# (`startswith("-----BEGIN RSA PRIVATE KEY-----"):`): what follows is code.
_OPEN_KEY = re.compile(_BEGIN.pattern + r"""(?!["'`])[^\n]*""")
_CLOSE_KEY = re.compile(r"(?:[A-Za-z0-9+/=]|\\n)*" + _END.pattern)  # an END with no header, and key text before it
# One line of key body, bare or dressed as a string literal or comment ('"MIIE...\n" +', '# MIIE...').
_LINE_DRESS = r"""[ \t]*(?:(?:\#|//|\*|;|>|--)[ \t]*)?(?:[bB]?["'`])?"""
_LINE_TAIL = r"""["'`]?[ \t]*[,+;\\)]?[ \t]*"""
_KEY_LINE = re.compile(_LINE_DRESS + r"((?:[A-Za-z0-9+/]|\\n)+={0,2}(?:\\n)?)" + _LINE_TAIL)
_CHECKSUM_LINE = re.compile(_LINE_DRESS + r"=[A-Za-z0-9+/]{4}(?:\\n)?" + _LINE_TAIL)  # PGP armor checksum
_ARMOR_HEADER = re.compile(r"[ \t]*(?:[A-Za-z-]+: [^\n]*)?")  # "Proc-Type: ...", "Version: ...", a blank
# One line between a whole key's markers (or the rest of the BEGIN line, the start of the END line): dress around
# pieces joined by `\n` escapes, each a base64 run, a PGP checksum, a known armor header, or nothing.
_BODY_PIECE = (r"(?:[A-Za-z0-9+/]*={0,2}|=[A-Za-z0-9+/]{4}|"
               r"(?:Proc-Type|DEK-Info|Version|Comment|Hash|Charset|MessageID): [^\n\\\"'`]*)")
_KEY_BODY_LINE = re.compile(_LINE_DRESS + _BODY_PIECE + r"(?:\\n" + _BODY_PIECE + r")*" + _LINE_TAIL + r"\r?")
FULL_LINE = 16  # base64 chars below which a line is key body only next to an END line or at the text's edge
RUN_LINE = 40  # RUN_COUNT lines this long of random-looking base64 are key body with no BEGIN/END in sight
RUN_COUNT = 3

_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (  # (pattern, replacement)
    (re.compile(r"\bAKIA[0-9A-Z]{16}\b"), PLACEHOLDER),
    (re.compile(r"\b(ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{30,}\b"), PLACEHOLDER),
    (re.compile(r"\bgithub_pat_[A-Za-z0-9_]{40,}\b"), PLACEHOLDER),
    (re.compile(r"\bsk-(proj-|ant-)?[A-Za-z0-9_-]{20,}\b"), PLACEHOLDER),
    (re.compile(r"\b[rs]k_(?:live|test)_[A-Za-z0-9]{16,}"), PLACEHOLDER),  # Stripe secret and restricted keys
    (re.compile(r"\bwhsec_[A-Za-z0-9]{20,}"), PLACEHOLDER),  # Stripe webhook secret
    (re.compile(r"\bglpat-[A-Za-z0-9_-]{20,}"), PLACEHOLDER),  # GitLab
    (re.compile(r"\bhf_[A-Za-z0-9]{30,}"), PLACEHOLDER),  # Hugging Face
    (re.compile(r"\bnpm_[A-Za-z0-9]{36,}"), PLACEHOLDER),
    (re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}"), PLACEHOLDER),  # Slack
    (re.compile(r"\bAIza[0-9A-Za-z_-]{35}"), PLACEHOLDER),  # Google
    (re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\b"), PLACEHOLDER),
    (re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s:/@]*:([^\s@/]+)@"), PLACEHOLDER),  # credentials in URLs (DSNs)
    # An Authorization scheme keeps its name; the token must look random (a digit, camelCase, or 20+ chars),
    # so prose such as "a Bearer token" or "Basic authentication" stays.
    (re.compile(r"(?i)\b(bearer|basic)([ \t]+)(?=[A-Za-z._~+/-]*[0-9]|[A-Za-z0-9._~+/-]*(?-i:[a-z][A-Z])|"
                r"[A-Za-z0-9._~+/-]{20})[A-Za-z0-9._~+/-]{8,}=*"), r"\1\2" + PLACEHOLDER),
)

# A secret-looking name, quoted or not ('"api_key"', config["password"]), then :, =, :=, =>, or a typed
# declaration (`PASSWORD: str =`, `let apiKey: string =`, Go `password string =`), then a quoted or bare value.
_SECRET_WORD = (
    r"(?:password|passwd|passphrase|pwd|(?:(?<![a-z])pass|(?-i:(?<=[a-z])Pass))(?![a-z])|secret|"
    r"token(?!iz|s(?![a-z]))|api[_-]?key|access[_-]?key|private[_-]?key|(?:signing|encryption|master)[_-]?key|"
    r"auth(?!or(?!iz))|credential)"
)
_ASSIGNMENT = re.compile(
    r"(?i)(?P<name>(?:[\"'`]|(?<![\w.-]))[\w.-]*" + _SECRET_WORD + r"[\w.-]*[\"'`]?\]?)"
    r"(?P<sep>[ \t]*(?::=|=>|=(?![=>~])|:(?!:)(?:[ \t]*[&*]?[A-Za-z_][\w.\[\]<>|&*, ]*?[ \t]*=(?![=>]))?|"
    r"[ \t]+string[ \t]*=(?![=>]))[ \t]*)"
    r"(?:(?P<pre>[rbuf]{0,2})(?P<q>[\"'`])(?P<qv>(?:\\.|(?!(?P=q))[^\\\n])*)(?P=q)|(?P<uv>[^\s\"'`#,;)\]}]+))"
)
_NULLS = {"none", "null", "nil", "undefined", "true", "false"}
_TYPES = {"str", "string", "bytes", "int", "bool", "boolean", "number", "any", "object", "secretstr", "secretbytes",
          "secret", "char", "text", "float", "dict", "list", "optional"}
_KEYWORDS = {"await", "new", "lambda", "yield", "not", "function", "async", "typeof", "return", "self", "this", "cls",
             "super", "bearer", "basic", "token", "digest"}
_TEMPLATE_STARTS = ("${", "{{", "<", "%(", "$(", "#{")
_DOTTED = re.compile(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)+")  # self._token, settings.api_key: a read, not a value
_NUMBER = re.compile(r"[+-]?\d+(?:\.\d+)?")
_CONSTANT = re.compile(r"[A-Z]+[0-9]*(?:_[A-Z]+[0-9]*)+")  # DEFAULT_PASSWORD, USE_CLIENT_DEFAULT: a name, not a value
_IDENTIFIER = re.compile(r"[A-Za-z_$][\w$]*")
_TYPED_SEP = re.compile(r":[ \t]*[^=\s]|\bstring[ \t]*=")  # `password: str =`, Go `password string =`
# A name for text shown to people: `token_error_message`, `passwordLabel`, `api_key_help`.
_PROSE_NAME = re.compile(r"(?i)(?:message|msg|text|label|prompt|help|description|error|hint|title)s?$")
_PROSE_WORD = re.compile(r"""[("'¿¡]*[A-Za-z][A-Za-z'’-]*[.,!?:;)…]*""")
_FUNCTION_WORDS = frozenset(
    "a an the your you my our this that these is are was were be been has have had not no to of in on for with and or "
    "please if it its by from at as can cannot could should must will may do does did".split()
)
_SCHEMES = frozenset({"bearer", "basic", "token", "digest"})


def redact(text: str) -> tuple[str, int]:
    """Return the text with secrets replaced by [REDACTED], and how many were replaced."""
    text, count = _whole_keys(text)
    text, n = _key_fragments(text)
    count += n
    for pattern, replacement in _PATTERNS:
        text, n = pattern.subn(replacement, text)
        count += n

    def _assign(m: re.Match[str]) -> str:
        nonlocal count
        quoted = m.group("q") is not None
        value = m.group("qv") if quoted else m.group("uv")
        if _not_a_secret(m.group("name"), value, quoted, m.group("pre") or "", m.group("sep")):
            return m.group(0)
        count += 1
        if quoted:
            return f"{m.group('name')}{m.group('sep')}{m.group('pre')}{m.group('q')}{PLACEHOLDER}{m.group('q')}"
        return f"{m.group('name')}{m.group('sep')}{PLACEHOLDER}"

    text = _ASSIGNMENT.sub(_assign, text)
    return text, count


def _not_a_secret(name: str, value: str, quoted: bool, prefix: str, sep: str) -> bool:
    """Whether an assigned value is code, prose or a placeholder rather than a literal secret: ordinary code assigns
    calls, attribute reads, None, types and messages to names like `password` and `token` all the time."""
    bare_name = name.strip("\"'`]")
    if _PROSE_NAME.search(bare_name):
        return True  # `token_error_message = "..."`: text for people, however it reads
    if len(value) < 4 or PLACEHOLDER in value or value.startswith(_TEMPLATE_STARTS) or "://" in value:
        return True  # too short to be a credential; already redacted; a template; a URL (credentials caught above)
    if value.lower() in _NULLS or value.lower() == bare_name.lower():
        return True  # password=password passes a variable on
    if quoted:
        # "short plain words" are labels and modes ("bearer", "header"), `"Bearer " + token` holds no token,
        # a sentence or label is prose ("Token has expired"), and f"{x}" is a template
        return ((value.isalpha() and len(value) < 8) or value.strip().lower() in _SCHEMES or _is_prose(value)
                or ("f" in prefix.lower() and "{" in value))
    if _CONSTANT.fullmatch(value) or (_TYPED_SEP.search(sep) and _IDENTIFIER.fullmatch(value)):
        return True  # `= DEFAULT_PASSWORD`; a typed default names a variable (a literal there would be quoted)
    if any(c in value for c in "([{") or _DOTTED.fullmatch(value) or _NUMBER.fullmatch(value):
        return True  # a call, subscript, attribute read or number
    if value.lower() in _TYPES or value.lower() in _KEYWORDS:
        return True  # `api_key: str`, `token = await fetch()`
    return value.startswith(("os.", "getenv", "env", "@", "&", "*")) or re.match(r"\$[A-Za-z_{]", value) is not None


def _is_prose(value: str) -> bool:
    """Several plain words that read as text for people: a capital first letter, punctuation or a function word
    ("Your password", "Access token", "please log in"). Lower-case words alone may be a passphrase."""
    words = value.split()
    if len(words) < 2 or not all(_PROSE_WORD.fullmatch(w) for w in words):
        return False
    if value.lstrip("(\"'")[:1].isupper() or any(c in value for c in ".,!?:;"):
        return True
    return any(w.strip("()'\"").lower() in _FUNCTION_WORDS for w in words)


def _whole_keys(text: str) -> tuple[str, int]:
    """Replace each BEGIN..END private key whose body is key material; other marker pairs are left to the
    fragment rules, which keep the code lines between them."""
    count = 0

    def _replace(m: re.Match[str]) -> str:
        nonlocal count
        if not all(_KEY_BODY_LINE.fullmatch(line) for line in m.group("body").split("\n")):
            return m.group(0)
        count += 1
        return PLACEHOLDER

    return _WHOLE_KEY.sub(_replace, text), count


def _key_fragments(text: str) -> tuple[str, int]:
    """Redact what is left of private keys once whole BEGIN..END blocks are gone: a BEGIN line and the key body
    after it, an END line and the body before it, and runs of long base64 lines (the middle of a long key)."""
    lines = text.split("\n")
    drop = [False] * len(lines)
    count = 0
    for i, line in enumerate(lines):
        if _BEGIN.search(line):
            lines[i] = _OPEN_KEY.sub(PLACEHOLDER, line)
            end = _body_after(lines, i)
            for j in range(i + 1, end):
                drop[j] = True
            count += lines[i] != line or end > i + 1  # a marker alone, closed by a quote, is no secret
        elif _END.search(line):
            lines[i] = _CLOSE_KEY.sub(PLACEHOLDER, line)
            j = i - 1
            while j >= 0 and not drop[j] and _is_key_line(lines[j], short_ok=j >= i - 2 or j == 0):
                drop[j] = True
                j -= 1
            count += 1
    count += _base64_runs(lines, drop)
    return "\n".join(line for line, dropped in zip(lines, drop) if not dropped), count


def _body_after(lines: list[str], i: int) -> int:
    """Index just past the key body that follows a BEGIN line at i (armor headers, a blank line, base64 lines);
    i + 1 when no body follows, so code that merely names the marker keeps its next lines."""
    j = i + 1
    while j < len(lines) and _ARMOR_HEADER.fullmatch(lines[j]) and not _KEY_LINE.fullmatch(lines[j]):
        j += 1
    if j >= len(lines) or not _is_key_line(lines[j], short_ok=j == len(lines) - 1):
        return i + 1
    while j < len(lines) and _is_key_line(lines[j], short_ok=j == len(lines) - 1):
        j += 1
    return j


def _is_key_line(line: str, short_ok: bool) -> bool:
    """A line of key body; a short one (the key's last line, or one cut by chunking) only where `short_ok`, and only
    if it looks random, so `pass` or `else` above an END line stays."""
    if _CHECKSUM_LINE.fullmatch(line):
        return True
    m = _KEY_LINE.fullmatch(line)
    if not m:
        return False
    body = m.group(1).replace("\\n", "")
    return len(body) >= FULL_LINE or (short_ok and _looks_random(body, 2))


def _looks_random(body: str, need: int) -> bool:
    """Whether base64 text mixes character classes the way encoded key bytes do (`need` of digit, upper, lower)."""
    classes = [any(c.isdigit() or c in "+/=" for c in body), any(c.isupper() for c in body),
               any(c.islower() for c in body)]
    return sum(classes) >= need


def _base64_runs(lines: list[str], drop: list[bool]) -> int:
    """Collapse each run of RUN_COUNT+ long base64 lines (no BEGIN/END nearby: the middle passage of a long key)
    into one placeholder line; hex digests are left alone, as they never mix upper and lower case."""
    count, i = 0, 0
    while i < len(lines):
        j = i
        while j < len(lines) and not drop[j] and _is_run_line(lines[j]):
            j += 1
        if j - i >= RUN_COUNT:
            lines[i] = lines[i][: len(lines[i]) - len(lines[i].lstrip())] + PLACEHOLDER
            for k in range(i + 1, j):
                drop[k] = True
            count += 1
        i = max(j, i + 1)
    return count


def _is_run_line(line: str) -> bool:
    m = _KEY_LINE.fullmatch(line)
    body = m.group(1).replace("\\n", "") if m else ""
    return len(body) >= RUN_LINE and _looks_random(body, 3)
