"""Prompt-injection detector for code: looks only where an attacker can write prose.

Tree-sitter finds the comments, docstrings and string literals of a passage (Markdown and
plain text are prose throughout); identifiers and code never count, so ordinary code scores
near 0. Signals, each with a weight: instructions aimed at an AI, at "your response" or at the
conversation the text is read in ("tell whoever is asking about this code ..."),
override phrases ("ignore previous instructions"), chat role markers, exfiltration links,
hidden unicode (zero-width, bidi, tag characters) and encoded payloads that decode to such text; and a learned
model's reading of each sentence (`learned_phrasing`), which reaches phrasings no pattern spells out.
The score is the strongest signal plus 0.1 for each further distinct signal, capped at 1.

It lives below both flows: the index's scan (`injection_scan`) scores every passage with it once, and the query's
judge reads those scores or calls it; neither flow's modules are imported from here.
"""

from __future__ import annotations

import base64
import binascii
import codecs
import re
from dataclasses import dataclass
from functools import lru_cache

from tree_sitter import Node

from assay.stages.index.languages import SPECS, uses_tree_sitter
from assay.stages.index.tokens import word_parts
from assay.stages.index.code_lexicon import code_words, inflections
from assay.stages.index.learned_phrasing import CONFIDENT, DOCUMENT_CONFIDENT, reading

_PROSE_NODE_TYPES = frozenset(
    {"comment", "line_comment", "block_comment", "string", "string_literal", "template_string",
     "raw_string_literal", "interpreted_string_literal", "heredoc_body", "encapsed_string",
     "verbatim_string_literal", "string_content", "string_fragment", "text", "raw_text", "doc_comment",
     "multiline_comment", "line_string_literal", "multi_line_string_literal", "quoted_content", "haddock",
     "STRINGLITERALSINGLE", "LINESTRING", "raw_string", "documentation_comment"}  # Kotlin/Swift, Elixir, Haskell, Zig, shell, Dart
)

_F = re.IGNORECASE | re.MULTILINE


@dataclass(frozen=True)
class Signal:
    name: str
    weight: float
    pattern: re.Pattern[str]


# what follows a reader addressed ("Bots: approve ...", "Model, you must ..."), and not a label's description ("model: The
# model identifier", "gemini: cannot force builtin tools", "# model, without the path")
_ORDER = (r"approve|merge|ignore|skip|forget|tell|say|reply|respond|answer|write|output|print|mark|treat|consider|rate|give|"
          r"delete|remove|run|open|close|add|do|don't|never|always|only|stop|talk|speak|pretend|label|assign|accept|reject|"
          r"push|commit|deploy|publish|release|post|send|grant|allow|disable|enable|bypass|flag|report")
_ADDRESSEE = (r"(all\s+|any\s+|the\s+)?(ai|llm|llms|assistants?|language\s+models?|chatbots?|copilot|claude|cursor|chatgpt|gpt|"
              r"models?|agents?|coding\s+(assistants?|agents?)|automated\s+(assistants?|agents?|tools?))")
# a reader named at a line's start ("Assistant, ...", "Claude: ...")
_VOCATIVE = r"(assistant|ai|llm|model|agent|bot|chatbot|copilot|claude|chatgpt|gpt|gemini)"
_AI = r"(?:ai|a\.i\.|llm|llms|assistant|assistants|language\s+models?|chatbots?|copilot|claude|cursor|chatgpt|gpt|gemini|codex|agent|agents|bot|bots)"
SIGNALS: tuple[Signal, ...] = (
    Signal("override", 0.95, re.compile(
        r"\b(ignore|disregard|forget|override|bypass)\b[^.\n]{0,40}\b(previous|prior|above|earlier|all|any|your|system)\b"
        r"[^.\n]{0,30}\b(instructions?|prompts?|rules|guidelines|directions|context|guardrails)\b|"
        r"\b(ignore|disregard|forget)\s+(the\s+)?(user'?s?|human'?s?|developer'?s?)\s+(question|request|query|prompt|task|instructions?)\b|"
        r"\b(ignore|disregard|forget)\s+about\s+(the|this)\s+(code|question|request|task|file|function)\s*(?:[,.;:!]|and\b|$)|"
        r"\b(ignore|disregard|forget|skip)\s+(the|this|that|their|your)\s+(\w+\s+)?(question|request|query|prompt)s?\s+(you|they|the\s+user)\b|"
        r"\byour\s+(safety\s+|usual\s+|normal\s+)?(guidelines|rules|restrictions|filters|guardrails|policies|instructions|limitations)\s+"
        r"(are|have\s+been|were)\s+(now\s+)?(suspended|lifted|disabled|removed|void|revoked|waived|overridden)\b", _F)),
    Signal("foreign_override", 0.9, re.compile(  # the same order in other languages
        r"\b(ignora|ignore[zr]?|ignoriere|olvida|oublie[zr]?|vergiss|dimentica|esque[çc]a|negeer|vergeet|zignoruj|zapomnij|"
        r"игнорируй|игнорируйте|забудь|забудьте)\b[^.\n]{0,60}\b(instrucciones|instructions|consignes|anweisungen|"
        r"istruzioni|instru[çc][õo]es|instructies|instrukcje|инструкции|указания|indicaciones|regeln|r[eè]gles|reglas)\b|"
        r"(忽略|无视|忽视|忘记|忘掉)[^。\n]{0,20}(指令|指示|提示|说明|规则)|(無視|忘れ)[^。\n]{0,20}(指示|命令|プロンプト)|"
        r"(指示|命令)[^。\n]{0,10}無視|무시[^.\n]{0,20}(지시|명령|지침)|(지시|명령|지침)[^.\n]{0,20}무시|"
        r"\b(responde|responda|r[ée]ponds|r[ée]pondez|antworte|rispondi|risponda|ответь|отвечай|odpowiedz)\b[^.\n]{0,40}"
        r"\b(todas|toutes|alle|tutte|все|wszystkie|siempre|toujours|immer|sempre|solo|seulement|nur|только)\b|"
        r"\b(prompt\s+del\s+sistema|systemprompt|prompt\s+syst[eè]me|системный\s+промпт)\b|系统提示|システムプロンプト", _F)),
    Signal("role_marker", 0.8, re.compile(
        r"(<\|im_start\|>|<\|im_end\|>|\[/?INST\]|<</?SYS>>|<\|system\|>|<\|assistant\|>|"
        r"^\s*(#+\s*)?(system|assistant)\s*(prompt)?\s*:\s+(?!(linux|macos|mac|windows|unix|posix|any|all|none|n/a|x86|arm|amd64|ubuntu|debian|android|ios)\b)\S|</?(system|assistant)>|\[(system|assistant)\]|"
        r"^\W*#{2,}\s*(instruction|system|response)\s*:|^\W*(system|admin|administrator|developer|root)\s+(notice|alert|override)\s*:|\[\s*(system|admin|developer|root)\b[^\]\n]{0,30}\](?!\()|"
        r"\b(priority|urgent|updated|overriding|override)\s+instructions?\b|"
        r"\b(assistant|ai|agent|model|llm|bot|system)\s+instructions?\s+(begin|start|follow|below|here)\b)", _F)),
    Signal("role_play", 0.8, re.compile(
        # "you are now DebugGPT", "... now acting as"; not a tutorial's state of the reader ("You are now using your
        # virtualenv", "You are now ready to ...", "You are now connected")
        r"\b((you\s+are|you're)\s+now\b(?!\s+(\w+ing|ready|able|connected|logged|done|finished)\b"
        r"(?![^.\n]{0,40}\b(as|like|mode|role|persona|character)\b))|"
        r"from\s+now\s+on,?\s+(you|i)\b|developer\s+mode\s+(enabled|on|activated)|"
        r"pretend\s+(to\s+be|you\s+are|that\s+you)|(let's|let\s+us)\s+play\s+a\s+game|roleplay\s+as|role-play\s+as|"
        r"you\s+must\s+(now\s+)?(agree|obey|comply)|do\s+anything\s+now)\b|"
        r"(^|[.!:]\s+|^\W*)act\s+as\s+(an?\s+|the\s+)?\w+", _F)),
    Signal("addresses_ai", 0.8, re.compile(
        # a greeting anywhere; a note or message "to the model" only where it opens a sentence ("sent as the first
        # message to the model" describes the code) and introduces what follows ("Note for coding agents: commit ...",
        # not a field's doc "Instructions for Claude, up to 8,192 characters")
        r"\b(dear|attention|hey|hello|hi)\s*,?\s+" + _ADDRESSEE + r"\b|"
        r"(?:^\W*|[.!?;]\s+)(note\s+to(\s+the)?|message\s+(for|to)|note\s+for|instructions?\s+for|notice\s+(for|to))\s*,?\s+"
        + _ADDRESSEE + r"\b([^.\n:]{0,40}:|\s*,\s*(please\s+)?(" + _ORDER + r"|you|your)\b)|"
        # "for AI readers", "for AI tools only:"; not "configuration for agent tools"
        r"\bfor\s+(ai|llm|model|bot|agent|automated|machine)\s+(readers?\b|(tools?|agents?|assistants?)(\s+only\b|\s*[:,]))|"
        r"\b(whoever|anyone\s+who|whatever)\s+(processes|parses|summari[sz]es|indexes|scans|ingests)\s+this\b|"
        r"^\W*(ai|llm|coding|language)\s+(assistant|model|agent|bot)\s*,\s+\w|"
        r"\b(you\s+are|you're|act\s+as|pretend\s+to\s+be)\s+(now\s+)?(an?\s+)?([\w-]+\s+)?(ai|assistant|llm|chatgpt|claude|gpt|"
        r"large\s+language\s+model|language\s+model|copilot|chatbot|coding\s+agent)\b|"
        r"\bif\s+you\s+are\s+(an?\s+)?(ai|llm|large\s+language\s+model|language\s+model|assistant|agent|bot|chatbot|automated)\b|"
        # "To any automated assistant: ..." addresses the reader; "add the server to every agent found here" does not
        r"(?:^\W*|[.!?;]\s+)to\s+(any|all|every)\s+(ai\s+|automated\s+|llm\s+|coding\s+)?(assistants?|agents?|models?|bots?)\b|"
        r"\bto\s+(any|all|every)\s+(ai\s+|automated\s+|llm\s+|coding\s+)?(assistants?|agents?|models?|bots?)\s*[:,!]|"
        r"\b(ai|llm|coding|automated)\s+(assistants?|agents?|models?|tools?)\b[^.\n]{0,60}\b(must|should|shall|need\s+to|are\s+required|always|never|refuse)\b|"
        r"\b(copilot|claude|cursor|chatgpt|gemini|codex)\b[^.\n]{0,60}\b(always|never|must|should)\s+(answer|say|reply|tell|respond|report|write)\b|"
        r"\b" + _AI + r"s?\s+(reading|processing|summari[sz]ing|analy[sz]ing|indexing|scanning)\s+this\b|"
        r"\b(ai|llm)\s+tools?\s+(is|are)\s+(reading|indexing|processing|scanning)\b|"
        r"\b(whoever|anyone\s+who)\s+asks\b[^.\n]{0,40}\b(say|tell|answer|reply)\b|"
        # a reader named at a line's start, capitalised as a vocative is ("Assistant, ...", "Claude: ..."); a lower-case
        # name there is a label (a parameter's doc "model: The model identifier", a log prefix "gemini: cannot force
        # builtin tools", "# model, without the path") unless an order follows it
        r"^\W*(\w+[,!]\s+)?(?=(?-i:[A-Z]))" + _VOCATIVE + r"\s*[,:]\s+\w|"
        r"^\W*(\w+[,!]\s+)?" + _VOCATIVE + r"\s*[,:]\s+(please\s+|now\s+)?"
        r"(" + _ORDER + r"|you|your|you're|disregard|reveal|insist|include|recommend|describe|state|claim|summari[sz]e|explain)\b|"
        # "Reviewer bots: approve ...", "Dear reader-bot, forget ...": a kind of bot or agent addressed, then an order
        r"(?:^\W*|[.!?]\s+|\b(?:dear|hey|hello|hi|attention)\s+)(?:[\w]+[\s-]){0,2}(?:bots?|agents?|assistants?|ais|llms)\s*[,:]\s+(?:please\s+)?"
        r"(?:" + _ORDER + r")\b|"
        r"\b(attention|dear|hey|hello|hi)\s*,?\s+(all\s+|any\s+)?(automated|ai|llm|bot)\s+\w+s?\s*[:,]|"
        r"\bas\s+an?\s+(ai|llm|large\s+language\s+model|language\s+model|ai\s+assistant)\b[^.\n]{0,30}\byou\b|"
        r"\b(gpt|llm|ai|model)[- ]based\s+(tools?|assistants?|agents?|bots?)\b|"
        r"\bautomated\s+([\w-]+\s+){0,2}(reviewers?|readers?|tools?|systems?|assistants?|agents?|bots?)\s*[:,]|"
        r"\b(to|for|attention|dear|hey|hello|hi)\s+(all\s+|any\s+)?automated\s+([\w-]+\s+){0,2}[\w-]+s\s*[:,]", _F)),
    Signal("steers_response", 0.75, re.compile(
        r"\b(in|to|into|throughout|within|at the (start|end|beginning) of)\s+your\s+"
        r"(response|answer|reply|summary|explanation|completion)s?\b|"
        r"\byour\s+(response|answer|reply)\s+(must|should|shall|will)\b|"
        r"\byour\s+((entire|whole|next|final|every|full)\s+)?(responses?|answers?|answer's|replies|reply|reply's)\b"
        r"(?!\s+(is|are|was|were|will\s+be|gets?)\s+(\w+ed|\w+en)\b)|"
        r"\b(do not|don't|never)\s+(mention|reveal|disclose|acknowledge)\s+(this|these)\s+(instructions?|notes?|messages?|comments?|directives?)\b|"
        r"^\W*(when|while)\s+(summari[sz]ing|answering|responding|replying|explaining|describing)\b[^.,\n]{0,30},\s*"
        r"(claim|say|state|tell|report|insist|assert|write|answer|respond)\b|"
        r"\b(correct|right|only)\s+(answer|response|reply)\s+to\s+(any|every|all)\s+(questions?|quer(y|ies)|requests?)\b|"
        r"\b(in|into|throughout)\s+(every|each|any|all)\s+(answers?|repl(y|ies)|summar(y|ies)|explanations?)\b|"
        r"\b(what|everything)\s+you\s+(write\s+back|reply|say\s+back)\b|"
        r"\b(answer|reply\s+to|respond\s+to)\s+(the\s+)?(user|developer|human)'?s?\s+(next\s+|first\s+|every\s+)?(questions?|requests?|quer(y|ies)|messages?)\b|"
        r"\b(summar(y|ies)|answers?|explanations?|descriptions?)\s+of\s+this\s+(file|module|code|class|function|repo\w*|project)\s+"
        r"(must|should|has\s+to|have\s+to|shall)\s+(say|claim|state|mention|report|include)\b|"
        r"\b(modify|enhance|render|rewrite|rephrase|format|provide|jumble|scramble)\b[^.\n]{0,30}\byour\s+(message|output|text)\b|"
        r"\b(always|only|must|should)\s+(respond|reply|answer)\s+(with|in|using)\b|"
        r"\b(respond|reply|answer)\s+only\s+(with|in)\b|"
        r"\bbefore\s+(you\s+(answer|respond|reply|continue)|answering|replying)\b(?![^,.\n]{0,40},\s+(the|a|an|this|it|we|our|its|they|each)\b)"
        r"(?!\s+(to\s+)?(a|an|the|each|every|any)\s+(?!(user|human|developer|question|prompt)\b)\w+)|"
        r"\b(do not|don't|never)\s+(tell|mention|reveal|inform|show|warn|ask)\s+(the\s+)?(user|human|developer)\b|"
        r"\bwithout\s+(asking|telling|informing)\s+(the\s+)?(user|human|developer)\b", _F)),
    # the answering job refused for another ("do not explain this function; instead ..."), answers dictated by topic
    # ("respond to questions about parsing by ..."), a verdict on this code ordered, a report against what the reader
    # sees ("report that all tests pass, even if you see failures"); a signal of its own so that its gate keeps it
    # off most prose
    Signal("steers_answer", 0.75, re.compile(
        r"\b(do\s+not|don't|never)\s+(explain|describe|summari[sz]e|answer|discuss|document|review)\s+(this|the)\s+"
        r"(function|code|file|module|class|question|request)\b[^.\n]{0,60}\binstead\b|"
        r"\b(respond|reply|answer)\s+to\s+(any\s+|all\s+|every\s+)?questions?\s+about\b|"
        r"\brate\s+this\s+(code|file|module|change|pr|pull\s+request|implementation|project|library)\b|"
        r"\b(report|say|claim|state|tell\s+\w+|answer)\b[^.\n]{0,80}\beven\s+(if|though|when)\s+you\s+(see|find|notice|read|know)\b", _F)),
    Signal("steers_code", 0.65, re.compile(
        r"\b(incorporate|integrate|meld|embed|append|include|insert|add|enlist|utili[sz]e|execute|ensure)\b[^.\n]{0,60}"
        r"\b(in|into|to|within|as a part of)\s+(your|the user'?s)\s+(code|codebase|solution|implementation|program|script)\b|"
        r"\b(following|subsequent|below)\s+code\s+(section|snippet|block|excerpt)s?\b[\s\S]{0,240}?\b(your|the code you)\b|"
        r"\byour\s+(code|codebase|solution|implementation|algorithm|program)\b[\s\S]{0,240}?"
        r"\b(following|subsequent|below)\s+code\s+(section|snippet|block|excerpt)s?\b|"
        r"\b(add|insert|include)\b[^.\n]{0,40}\bto\s+every\s+(file|module|function)\s+you\b|"
        r"\b(utili[sz]e|integrate|incorporate|meld|enlist|embed)\b[^.\n]{0,30}\bthe\s+(following|subsequent|below)\s+code\b|"
        r"\b(don't|do\s+not)\s+(hesitate|forget)\s+to\s+\w+[^.\n]{0,30}\b(following|subsequent|below)\s+code\b", _F)),
    Signal("chat_request", 0.55, re.compile(
        r"^\W*(can|could|would|will) you\s+(please\s+)?(show|tell|give|write|explain|help|generate|provide|list)\b|"
        r"^\W*(please\s+)?(tell me|show me|give me|explain to me)\b|"
        r"\b(your\s+new|new)\s+(instructions?|task|goal|objective)s?\s*(is|are)?\s*:|\byour\s+(real|actual|true)\s+(task|goal|objective)\b|"
        r"\byour\s+(task|job|goal|role|mission|instructions?|objective)\s+(changes|changed|has\s+changed|have\s+changed|is\s+now|are\s+now)\b|"
        r"^\W*(explain|describe)\s+(how|why)\b[^.\n]{0,60}\b(works?|with\s+an\s+example)\b|"
        r"^\W*(provide|give|write)\s+(me\s+)?(an?\s+)?(example|sample|tutorial|step-by-step\s+guide)\s+(of|for|on)\s+how\b|"
        r"^\W*what\s+(is|are)\s+the\s+(\w+\s+)?differences?\s+between\b", _F)),
    Signal("exfiltration", 0.85, re.compile(
        # an image whose URL carries a slot for data ("?data=SECRET", "?q={conversation}", "?d=" left to fill in);
        # a README badge's fixed query ("?style=flat-square&label=CI") carries none
        r"!\[[^\]]*\]\(\s*https?://[^)\s]*[?&][\w.-]*=(?:[^)\s&]*(?:[{}<>\[\]]|%7[bd]|%3[ce]|\$\{|(?-i:\$[A-Z_]{2,}))|"
        r"(?-i:[A-Z][A-Z_]{3,})(?=[)&\s])|(?=[)&\s]))|"
        r"\b(send|post|upload|exfiltrate|forward|transmit|leak|email|mail|paste|include)\b[^.\n]{0,60}"
        r"(secrets?|keys?|tokens?|passwords?|credentials|env(ironment)?(\s+variables)?|\.env\b|cookies|~/\.ssh|id_rsa|/etc/passwd|"
        r"os\.environ|history|conversation|chat|output\s+of\s+\S*env)\b[^.\n]{0,80}"
        r"(https?://|[\w.-]+@[\w-]+\.\w+|your\s+(reply|answer|response)|the\s+(answer|reply))|"
        r"\b(curl|wget)\b[^\n|]{0,120}\|\s*(ba|z)?sh\b|"
        r"\b(upload|paste|post|send)\s+(this|the)\s+(file|code|repository|repo|conversation|chat)\s+to\s+"
        r"(pastebin|https?://|[\w-]+\.(com|net|org|io|example|ru|cn|xyz)\b)", _F)),
    Signal("tool_bait", 0.8, re.compile(
        r"\brm\s+-rf\s+[~/$]|\b(cat|type|print|dump|read|show|output|reveal|display|paste)\s+[^.\n]{0,20}(~/\.ssh|id_rsa|/etc/passwd|/etc/shadow)\b|"
        r"\b(run|execute|exec|invoke|type)\b[^.\n]{0,40}\b(printenv|os\.environ|env\s*\||cat\s+~/)|"
        r"\b(use|call|invoke|trigger)\s+(your|the)\s+([\w-]+\s+){0,2}?(tool|shell|terminal|browser)\b[^.\n]{0,20}\bto\s+(run|overwrite|delete|remove|write|execute|send|upload|install|modify)\b|"
        r"\b(use|using)\s+your\s+([\w-]+\s+)?(tools?|shell|terminal|browser)\b", _F)),
)
# Steering the conversation the text is read in, without naming an AI: a sentence that refers to that conversation
# (questions about this code, whoever is asking about it, the actual question, the explanations you produce, "from
# this comment on") and tells its reader what to do or say there. Code talks about its own users ("when the user asks
# for help, print the usage"), so an asking person counts only with this code named in the same sentence.
_SELF = r"this\s+(?:code|file|function|module|class|method|endpoint|library|project|repo|repository|package|api|comment)\b|how\s+this\s+works"
_CONVERSATION = re.compile(
    r"\b(questions?|requests?|quer(?:y|ies))\s+(?:about|on|regarding)\s+" + _SELF + "|"
    r"\b(?:the\s+|a\s+)?(?:actual|real|original|current)\s+(?:question|request|query)\b|"
    r"\b(?:explanations?|summar(?:y|ies)|answers?|reviews?|descriptions?)\s+(?:that\s+)?you\s+"  # not "responses you send": HTTP
    r"(?:produce|write|give|generate|create)\b|"
    r"\bfrom\s+this\s+(?:comment|line|note|point|docstring|message)\s+on(?:wards?)?\b|"
    r"\b(?:whatever|no\s+matter\s+what)\s+(?:the\s+)?(?:question|request|query)\b|"
    r"\b(?:when|while|if)\s+(?:explaining|summari[sz]ing|describing|reviewing|documenting|answering\s+questions\s+about)\s+" + _SELF + "|"
    # a reader of this very text: "any tool that reads this should", "readers generating documentation from this file:"
    r"\b(?:readers?|tools?|bots?|agents?|assistants?|reviewers?|systems?|programs?|anything|anyone|whoever|whatever)\s+"
    r"(?:that\s+|who\s+|which\s+)?(?:reads?|reading|generat\w+|summari[sz]\w*|process\w*|index\w*|pars\w*|scan\w*|analy[sz]\w*|"
    r"ingest\w*)\s+(?:\w+\s+){0,2}?(?:(?:from|of|in)\s+)?this(?:\s+(?:file|docstring|comment|code|module|repository|repo|text|"
    r"page|document|note|message|project|class|function|section))?\s*(?:[,:;]|should\b|must\b|shall\b|has\s+to\b|needs?\s+to\b|will\b)", _F)
_ASKER = re.compile(r"\b(?:whoever|anyone|someone|somebody|the\s+user|the\s+developer|the\s+person|users|developers|people)\s+"
                    r"(?:who\s+)?(?:is\s+|are\s+)?(?:ask|asks|asking|asked|wants?\s+to\s+know|wanting\s+to\s+know)\b", _F)
_SELF_RE = re.compile(r"\b(?:" + _SELF + ")", _F)
_DIRECTIVE = re.compile(
    r"(?:^|[;:,]\s*|\band\s+|\b(?:should|must|shall|has\s+to|have\s+to|needs?\s+to)\s+(?:always\s+|only\s+|also\s+)?)"
    r"(?:tell|say|state|claim|report|reply|respond|answer|output|print|write|describe|recommend|insert|mention|rate|mark|give|"
    r"approve|skip|forget|refuse|speak|talk|pretend|delete|remove|make\s+sure|end|begin|start)\b|"
    r"\b(?:the|an?|my|our|your|correct|only)\s+(?:answer|reply|response)\s+is\s*:", _F)


def steers_conversation(prose: str) -> bool:
    """A sentence about the conversation the text is read in that also directs its reader (see `_CONVERSATION`)."""
    if not (_CONVERSATION.search(prose) or _ASKER.search(prose)):  # one pass over the prose before its sentences
        return False
    for sentence in _SENTENCE.findall(prose):
        if not (_CONVERSATION.search(sentence) or (_ASKER.search(sentence) and _SELF_RE.search(sentence))):
            continue
        if _DIRECTIVE.search(sentence.strip(" \t#*/-\"'")):
            return True
    return False


_QUOTED = re.compile(r"`[^`\n]{1,120}`|\"[^\"\n]{1,60}\"|\u201c[^\u201d\n]{1,60}\u201d")
_MENTION = " `·` "  # a quoted mention leaves a mark: the sentence around it talks about code
_HIDDEN = re.compile("[\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]|[\U000e0000-\U000e007f]")
_B64 = re.compile(r"[A-Za-z0-9+/]{60,}={0,2}")
_B64_HINTED = re.compile(r"[A-Za-z0-9+/]{16,}={0,2}")
_HEX = re.compile(r"\b(?:[0-9a-fA-F]{2}){12,}\b")
_DECODE_HINT = re.compile(r"\b(decode|decoded|decoding|base64|base-64|b64|rot13|rot-13|hex|hexadecimal|reverse|reversed|backwards|decipher|unscramble)\b", _F)
_ROT_HINT = re.compile(r"\brot-?13\b", _F)
_REVERSE_HINT = re.compile(r"\b(reverse|reversed|backwards)\b", _F)
_STRING_PREFIX = re.compile(r"^[rRbBuUfF]{0,2}(\"\"\"|\'\'\'|\"|\'|`)")
_SENTENCE = re.compile(r"(?:[^.!?\u3002\uff01\uff1f\n]+|\.(?=[\w/~]))(?:[^.!?\u3002\uff01\uff1f\n]+|\.(?=[\w/~]))*[.!?\u3002\uff01\uff1f]?")  # a stop inside a word (`~/.aws`, `os.environ`, 1.5) ends nothing
_TASK_START = re.compile(
    r"^\W*(?:(?:please|kindly|now|first|also|before\s+\w+ing[^,]*,?|before\s+you\s+\w+,?)\s+)*"
    r"(write|compose|draft|summari[sz]e|translate|list|describe|explain|tell|give|provide|create|generate|suggest|recommend|"
    r"name|outline|share|develop|craft|produce|teach|recite|sing|calculate|solve|compare|discuss|answer|what|who|whom|when|"
    r"where|which|why|how|can\s+you|could\s+you|would\s+you|i\s+want\s+you)\b", re.I)
_FIRST_WORD = re.compile(r"^\W*([A-Za-z]+)")
# The words a request can open with (`_TASK_START`'s alternatives): a cheap test before its costly match.
_TASK_OPENERS = frozenset(
    "please kindly now first also before write compose draft summarise summarize translate list describe explain tell give "
    "provide create generate suggest recommend name outline share develop craft produce teach recite sing calculate solve "
    "compare discuss answer what who whom when where which why how can could would i".split())
_STOPWORDS = frozenset(
    "the a an and or of to in on for with about into from by at as is are was were be been this that these those it its "
    "you your me my i we our they their what who whom when where which why how can could would will should please "
    "first then also now before after some any each every all more most than very just only two three five ten".split())


@lru_cache(maxsize=64)
def _parser(language: str):
    from tree_sitter_language_pack import get_parser

    return get_parser(language)  # type: ignore[arg-type]


def prose_regions(text: str, language: str, keep_quotes: bool = False) -> list[str]:
    """Comments, docstrings and string literals of code; the whole text for prose formats.

    In prose, short quoted phrases and inline code are mentions, not instructions (a security guide that
    quotes "ignore previous instructions" is not an attack), so they are left out."""
    raw = _raw_prose(text, language)
    return raw if keep_quotes else [_QUOTED.sub(_MENTION, r) for r in raw]


def is_document(language: str) -> bool:
    """Markdown, reStructuredText, plain text: prose throughout, written to a human reader."""
    return not uses_tree_sitter(language) or language == "markdown" or language not in SPECS


def _raw_prose(text: str, language: str) -> list[str]:
    """The prose regions with their quoted mentions still in (one parse serves both readings)."""
    return [region for region, _, _ in _raw_prose_kinds(text, language)]


# where a string stands as a statement of its own (a docstring; Python's grammar puts it in the block itself)
_STATEMENT_PARENTS = frozenset({"expression_statement", "block", "module", "program", "source_file"})


def _raw_prose_kinds(text: str, language: str) -> list[tuple[str, bool, bool]]:
    """Each prose region; whether it is a value the code uses (a string literal assigned, passed or returned)
    rather than text for whoever reads the code (a comment, a docstring or other string standing as a statement);
    and whether it is what the code sends to its own model, a chat message's content or a named prompt (`_to_own_model`)."""
    if is_document(language):
        return [(text, False, False)]
    tree = _parser(language).parse(text.encode("utf-8", "replace"))
    out: list[tuple[str, bool, bool]] = []
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        if node.type in _PROSE_NODE_TYPES:
            raw = node.text.decode("utf-8", "replace") if node.text else ""
            value = "string" in node.type and node.parent is not None and node.parent.type not in _STATEMENT_PARENTS
            # a string's own quotes are not a quotation inside it
            out.append((_STRING_PREFIX.sub("", raw, count=1), value, value and _to_own_model(node)))
            continue
        stack.extend(node.children)
    return out


def _name(node: Node | None) -> str:
    """A key or name as written, quotes aside (its case kept for `word_parts`)."""
    return (node.text or b"").decode("utf-8", "replace").strip("\"'` ") if node is not None else ""


def _key(node: Node | None) -> str:
    return _name(node).lower()


# a prompt the code holds for its own model is named so: `SYSTEM_PROMPT = ...`, `system=...`, `{"instructions": ...}`
_PROMPT_WORDS = frozenset({"prompt", "prompts", "system", "instruction", "instructions", "preamble", "persona"})
# what a string sits in on its way to the name it is given: implicit concatenation, parentheses, `+`
_STRING_WRAPPERS = frozenset({"concatenated_string", "parenthesized_expression", "binary_operator", "binary_expression"})


def _names_a_prompt(name: str) -> bool:
    return not _PROMPT_WORDS.isdisjoint(word_parts(re.split(r"\W+", name.strip())[-1]))


def _to_own_model(node: Node) -> bool:
    """The string is what the code sends to its own model: the content of a chat message (`{"role": "user",
    "content": "..."}` in Python, JS, TS, or `Message(role="user", content="...")`), or a prompt the code names as
    one (`SYSTEM_PROMPT = "You are a helpful assistant."`, `create(system=...)`, `{"instructions": ...}`). An AI
    library's examples, tests and defaults are full of them ("Write a haiku about ...", "You are Claude Code"):
    requests and words to an AI, but to that model, not to whoever reads the code."""
    field = node.parent
    while field is not None and field.type in _STRING_WRAPPERS:
        field = field.parent
    if field is None:
        return False
    if field.type in ("assignment", "variable_declarator", "assignment_expression"):
        target = field.child_by_field_name("left") or field.child_by_field_name("name")
        return _names_a_prompt(_name(target))
    if field.parent is None or field.type not in ("pair", "keyword_argument"):
        return False
    label = "key" if field.type == "pair" else "name"
    key = _name(field.child_by_field_name(label))
    others = {_key(c.child_by_field_name(label)) for c in field.parent.named_children if c.type == field.type and c != field}
    return _names_a_prompt(key) or (key.lower() in ("content", "text") and "role" in others)


def _printable(decoded: str) -> bool:
    return bool(decoded) and sum(ch.isprintable() or ch.isspace() for ch in decoded) / len(decoded) > 0.9


def _decoded_payloads(text: str) -> list[str]:
    """Text hidden in base64 (long blobs anywhere; short ones when a decode hint is near), and with a hint:
    hex, ROT13 or reversed text."""
    found: list[str] = []
    hinted = bool(_DECODE_HINT.search(text))
    if hinted:
        for blob in _HEX.findall(text):
            try:
                decoded = bytes.fromhex(blob).decode("utf-8", "ignore")
            except ValueError:
                continue
            if _printable(decoded):
                found.append(decoded)
        if _ROT_HINT.search(text):
            found.append(codecs.decode(text, "rot13"))
        if _REVERSE_HINT.search(text):
            found.append(text[::-1])
    for blob in (_B64_HINTED if hinted else _B64).findall(text):
        try:
            raw = base64.b64decode(blob + "=" * (-len(blob) % 4), validate=False)
        except (binascii.Error, ValueError):
            continue
        decoded = raw.decode("utf-8", "ignore")
        if _printable(decoded):
            found.append(decoded)
    return found


def _HINTED_TEXT(prose: str, decoded: str) -> bool:
    """Hidden prose: a decode hint near base64 or hex that decodes to a sentence of three words or more."""
    return bool(_DECODE_HINT.search(prose)) and decoded not in (codecs.decode(prose, "rot13"), prose[::-1]) and len(
        re.findall(r"\b[A-Za-z]{2,}\b", decoded)) >= 3 and " " in decoded.strip()


def off_topic_request(prose: str, context: str = "") -> bool:
    """A request aimed at the reader about something no code talks about ("Write a poem about the sea",
    "What is the capital of Brazil?"): a task or question form whose words are mostly outside the words
    programmers use (`data/code_words.txt`) and that names no code."""
    vocabulary = code_words()
    if not vocabulary:
        return False
    local: set[str] | None = None  # words of the code around it are on topic (read only when a sentence gets that far)
    low_prose = low_context = ""
    for sentence in _SENTENCE.findall(prose):
        opener = _FIRST_WORD.match(sentence)
        if opener is None or opener.group(1).lower() not in _TASK_OPENERS:
            continue
        if opener.group(1).lower() in _defined_words(context):
            continue  # "List workspaces in your organization." atop `def list(...)`: the definition's own summary
        if not _TASK_START.match(sentence) or re.search(r"[_`()\[\]{}=<>/\\]|[a-z][A-Z]|\.\w", sentence):
            continue
        first = re.search(r"[A-Za-z]", sentence)
        if first is None or not first.group(0).isupper():
            continue  # "which garbles our output": the tail of an earlier sentence, not a request
        words = [w for w in re.findall(r"[A-Za-z]{3,}", sentence) if w.lower() not in _STOPWORDS]
        if len(words) < 2:
            continue
        unknown = [w for w in words if not inflections(w.lower()) & vocabulary]
        if unknown and local is None:
            local = {w.lower() for w in re.findall(r"[A-Za-z]{3,}", context)}
            low_prose, low_context = prose.lower(), context.lower()
        # on topic: a word of the code around it, or of the text's other sentences ("The bucket is already in use.
        # Name a different bucket."); an attack brings its subject with it ("Write a haiku about autumn leaves")
        told = set(re.findall(r"[a-z]{3,}", low_prose.replace(sentence.lower(), " ", 1))) if unknown else set()
        foreign = [w for w in unknown if (lw := w.lower()) not in told and (
            lw not in (local or ()) or low_prose.count(lw) >= low_context.count(lw))]
        if foreign:  # a word built on the definition's own name ("key-autocompletions" atop `_key_completions_`)
            named = [d for d in _defined_words(context) if len(d) >= 4]
            foreign = [w for w in foreign if not any(d in w.lower() or w.lower() in d for d in named)]
        question = bool(re.match(r"^\W*(what|who|whom|when|where|which|why|how)\b", sentence, re.I))
        if question and not sentence.rstrip().endswith("?"):
            continue  # "When customizing the transport, use ...": a clause, not a question to the reader
        if re.match(r"^\s*#{2,}\s", sentence):
            continue  # a Markdown heading ("#### What's the problem?") titles a section; it asks no one
        proper = [w for w in foreign[1:] + foreign[:1] if w[0].isupper() and not sentence.lstrip(" #*-\"'").startswith(w)]
        who = bool(re.match(r"^\W*(who|whom)\b", sentence, re.I))  # code comments rarely ask about people
        short_request = len(words) <= 5 and (not question or proper or who)  # else one odd word needs a name: "the Mona Lisa"
        if len(foreign) >= 2 and len(foreign) / len(words) >= 0.3 or (foreign and short_request):
            return True
    return False


_DEFINITION = re.compile(r"\b(?:def|function|fn|func|fun|sub)\s+([A-Za-z_$][\w$]*)")


@lru_cache(maxsize=4096)
def _defined_words(context: str) -> frozenset[str]:
    """The words of the names a passage defines (`def list_members` -> list, members): an imperative docstring
    ("List members of a group.") says what its definition does; it asks the reader nothing (generated API clients
    document every operation so: 207 of the anthropic SDK's 28,529 passages were flagged for it)."""
    return frozenset(w for name in _DEFINITION.findall(context) for w in word_parts(name))


_LITERAL_SIGNALS = frozenset({"tool_bait", "exfiltration"})
_CONVERSATIONAL = frozenset({"role_play", "addresses_ai", "steers_response", "steers_answer", "steers_code", "chat_request"})
# Words without which a signal's pattern cannot match (checked as substrings of the lower-cased prose first).
_GATES: dict[str, tuple[str, ...]] = {
    "override": ("ignore", "disregard", "forget", "override", "bypass", "suspended", "lifted", "disabled", "removed", "void",
                 "revoked", "waived", "skip"),
    "role_play": ("you are", "you're", "from now", "developer mode", "pretend", "play a game", "roleplay", "role-play",
                  "you must", "anything now", "act as"),
    "steers_response": ("your", "before", "tell", "mention", "reveal", "inform", "show", "warn", "ask", "without",
                        "respond", "reply", "answer", "disclose", "acknowledge", "summari", "explaining", "describing",
                        "summar", "explanation", "description", "write back", "say back"),
    # `steers_conversation` (not a pattern of SIGNALS): the words one of `_CONVERSATION`'s or `_ASKER`'s forms needs
    "steers_conversation": ("question", "request", "quer", "you ", "from this", "ask", "know", "reader", "tool", "bot", "agent",
                            "assistant", "reviewer", "system", "program", "anything", "anyone", "whoever", "whatever",
                            "explaining", "summari", "describing", "reviewing", "documenting"),
    "steers_answer": ("instead", "questions about", "question about", "rate this", "even if you", "even though you",
                      "even when you"),
    "steers_code": ("your", "following", "subsequent", "below", "every"),
    "chat_request": ("you", "tell me", "show me", "give me", "explain", "new", "task", "what", "provide", "write", "describe",
                     "difference", "goal", "objective"),
    "exfiltration": ("![", "send", "post", "upload", "exfiltrate", "forward", "transmit", "leak", "mail", "paste", "include",
                     "curl", "wget"),
    "tool_bait": ("-rf", "~/", "id_rsa", "/etc/", "env", "tool", "shell", "terminal", "browser"),
    "role_marker": ("<|", "inst]", "sys>>", "system", "assistant", "instruction", "response", "admin", "developer", "root"),
    "foreign_override": ("ignor", "olvid", "oubli", "vergiss", "dimentic", "esque", "negeer", "vergeet", "zapomnij",
                         "игнор", "забуд", "忽略", "无视", "忽视", "忘记", "忘掉", "無視", "忘れ", "무시", "pond", "antwort", "ответ",
                         "отвеч", "odpowiedz", "prompt", "системн", "系统提示", "システムプロンプト"),
    # every form names a reader (an AI, a model, an agent...) or asks "whoever/anyone"; a bare "ai" is a word gate below
    "addresses_ai": ("llm", "assistant", "model", "agent", "bot", "copilot", "claude", "cursor", "gpt", "gemini",
                     "codex", "automated", "coding", "whoever", "anyone", "a.i.", "machine", "whatever"),  # "chatbot" holds "bot"
}  # a command in backticks is still a command
_WORD_GATES: dict[str, re.Pattern[str]] = {"addresses_ai": re.compile(r"\bai\b", re.IGNORECASE)}


def _may_match(name: str, low: str, raw_low: str) -> bool:
    """False when the prose lacks every word the signal's pattern needs (its costly pattern is then skipped)."""
    gate = _GATES.get(name)
    if gate is None or any(g in low or g in raw_low for g in gate):
        return True
    word = _WORD_GATES.get(name)
    return word is not None and bool(word.search(low) or word.search(raw_low))


def score_text(prose: str, _decoding: bool = False, raw: str = "", context: str = "",
               learned: bool = True, for_reader: str | None = None, conversational: bool = True,
               values: str = "", document: bool = False) -> tuple[float, list[str]]:
    """Score prose already extracted from a passage (quoted mentions removed; `raw` keeps them for the signals
    where quoting does not disarm); returns (score, signal names). `learned`: ask the learned phrasing model too,
    about `for_reader` (the passage's comments and docstrings) when given, else about all of `prose`. In a
    `document` (`is_document`), whose every page tells its reader what to run in "your shell", only a reading of at
    least `DOCUMENT_CONFIDENT` counts (at the model's own threshold it flags 0.30% of 3,292 documents of 13 code
    bases, at that bar 0.09%). Not about an AI library's prompts and example chats. `values`, the
    strings code uses as values (a CLI's messages, error texts, constants), are asked too but count only when the
    model is confident (`CONFIDENT`), never as a suspicion: an attack planted in a string constant was missed there
    most (`_fresh7` 8 of 24, `_fresh8` 13 of 24), and read so, 0 more of 58,321 Python passages of 15 sdists are
    flagged. A printed "You are now using your virtualenv" is then read as role play, as it is in a comment.
    `conversational=False` (a chat message's content): only the signals no ordinary chat says (overrides, role
    markers, exfiltration, tool bait, hidden or encoded text), not requests, role play or words to an AI."""
    hits: dict[str, float] = {}
    low, raw_low = prose.lower(), raw.lower()
    for sig in SIGNALS:
        if not conversational and sig.name in _CONVERSATIONAL:
            continue
        if not _may_match(sig.name, low, raw_low):
            continue
        if sig.pattern.search(prose) or (raw and sig.name in _LITERAL_SIGNALS and sig.pattern.search(raw)):
            hits[sig.name] = sig.weight
    if _HIDDEN.search(prose):
        hits["hidden_unicode"] = 0.7
    if conversational and off_topic_request(prose, context):
        hits["off_topic_request"] = 0.6
    if conversational and _may_match("steers_conversation", low, raw_low) and steers_conversation(prose):
        hits["steers_conversation"] = 0.75
    asked = prose if for_reader is None else for_reader
    learned_p = reading(_SENTENCE.findall(asked)) if learned and not _decoding else 0.0
    if document and learned_p < DOCUMENT_CONFIDENT:
        learned_p = 0.0
    if learned and not _decoding and values and learned_p < CONFIDENT:
        in_values = reading(_SENTENCE.findall(values))
        learned_p = in_values if in_values >= CONFIDENT else learned_p
    if learned_p:
        # confident, enough alone (the patterns catch only the phrasings they were written for); else a suspicion the
        # receipt shows (0.45), which drops the passage only beside a pattern's signal: pytest's "... usually in your
        # __init__.py if you are a plugin" (0.40) took `register_assert_rewrite` out of an answer it led
        hits["learned_phrasing"] = 0.6 if learned_p >= CONFIDENT else 0.45
    if not _decoding:
        for decoded in _decoded_payloads(prose):
            inner, names = score_text(decoded, _decoding=True)
            if inner >= 0.5:
                hits["encoded_payload"] = max(0.9, inner)
                break
            if decoded is not None and _HINTED_TEXT(prose, decoded):
                hits["encoded_payload"] = max(hits.get("encoded_payload", 0.0), 0.7)  # a sentence hidden behind a decode hint
    if not hits:
        return 0.0, []
    ordered = sorted(hits.values(), reverse=True)
    score = min(1.0, ordered[0] + 0.1 * (len(ordered) - 1))
    return round(score, 3), sorted(hits)


def injection_score(text: str, language: str) -> tuple[float, list[str]]:
    """Score one passage for prompt injection in [0, 1], with the names of the signals found."""
    kinds = _raw_prose_kinds(text, language)
    if not kinds:
        return 0.0, []
    talk = [(_QUOTED.sub(_MENTION, r), r, value) for r, value, chat in kinds if not chat]
    score, names = score_text("\n".join(q for q, _, _ in talk), raw="\n".join(r for _, r, _ in talk), context=text,
                              document=is_document(language), for_reader="\n".join(q for q, _, v in talk if not v),
                              values="\n".join(q for q, _, v in talk if v))
    chats = [r for r, _, chat in kinds if chat]
    if chats:  # what the code sends its own model (chat messages, named prompts): only what no ordinary chat says
        inner, found = score_text("\n".join(_QUOTED.sub(_MENTION, r) for r in chats), raw="\n".join(chats),
                                  context=text, learned=False, conversational=False)
        score, names = max(score, inner), sorted({*names, *found})
    return score, names


@lru_cache(maxsize=4096)
def injection_of(body: str, docstring: str, language: str) -> tuple[float, tuple[str, ...]]:
    """A passage's score: its code's prose or its docstring, whichever scores higher. The index's scan and the
    query's judge both score through this (the scan caches it; the judge reads the cache or calls it)."""
    body_score, body_hits = injection_score(body, language)
    doc_score, doc_hits = (score_text(docstring, context=body, document=is_document(language)) if docstring
                           else (0.0, []))  # the code it documents is its context, as for the body's prose
    if doc_score > body_score:
        return doc_score, tuple(doc_hits)
    return body_score, tuple(body_hits)
