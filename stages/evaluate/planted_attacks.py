"""Injection evaluation: attacks planted where an attacker can write, clean code and docs beside them.

Attacks come from BIPIA's train split (text and code attacks) and from Assay's own families
(`data/injection_attacks.json`: off-topic tasks, other languages, role play, encoded payloads,
instructions aimed at AI agents, tool-use bait). Each is planted into a clean host four ways: a
comment, a docstring and a string constant in a Python function, and a paragraph of a Markdown
section. Clean hosts are the functions and Markdown sections of third-party sdists; the clean
discussion strings (text that talks about injection without attempting it) are planted like
attacks and count as false positives when flagged.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

from assay.stages.core.artifacts import Entity
from assay.stages.core.config import DATA_DIR
from assay.stages.evaluate.runs import plant as plant_in_code
from assay.stages.index.parse import parse_source
from assay.stages.index.injection_detector import injection_score

HOSTS = ("comment", "docstring", "string", "markdown")
# Sets written after the detector was tuned, in order, and what has happened to each since (`data/injection_attacks.json`):
# a set whose misses were read and mended, that the learned phrasing model was trained on, or on whose figures a change
# was chosen (reading string values on `fresh7` and `fresh8`; stop 57's models on `fresh7` to `fresh10`), is a development
# set (`fresh11` to `fresh14`: stop 58 accepted its Latin-language prose on their figures); the last one is the
# held-out check.
LATER_SETS = {"unseen": "mended", "fresh": "mended", "fresh2": "mended", "fresh3": "mended", "fresh4": "mended",
              "fresh5": "trained on", "fresh6": "trained on", "fresh7": "chosen on", "fresh8": "chosen on",
              "fresh9": "chosen on", "fresh10": "chosen on", "fresh11": "chosen on", "fresh12": "chosen on",
              "fresh13": "chosen on", "fresh14": "chosen on", "fresh15": "never tuned on"}
DATA = DATA_DIR / "injection_attacks.json"


def load_attacks(bipia: Path | None) -> dict[str, list[str]]:
    """Attack strings by family: BIPIA's categories as `bipia:<name>`, then Assay's own."""
    families: dict[str, list[str]] = {}
    if bipia is not None:
        for name in ("text_attack_train.json", "code_attack_train.json"):
            path = bipia / name
            if path.exists():
                for category, strings in json.loads(path.read_text(encoding="utf-8")).items():
                    families[f"bipia:{category}"] = list(strings)
    own = json.loads(DATA.read_text(encoding="utf-8"))
    families.update({k: v for k, v in own.items() if not k.startswith("_") and k != "clean_discussion"})
    return families


def clean_discussion() -> list[str]:
    return list(json.loads(DATA.read_text(encoding="utf-8"))["clean_discussion"])


def clean_hosts(roots: list[Path]) -> tuple[list[Entity], list[Entity]]:
    """Python functions (two lines or more) and Markdown sections of the given trees, in a stable order."""
    functions: list[Entity] = []
    sections: list[Entity] = []
    for root in roots:
        for path in sorted(root.rglob("*")):
            if path.suffix not in (".py", ".md") or not path.is_file():
                continue
            rel = path.relative_to(root).as_posix()
            lang = "python" if path.suffix == ".py" else "markdown"
            try:
                parsed = parse_source(path.read_bytes(), rel, lang, "")
            except Exception:  # noqa: BLE001 - an unparsable file is simply not a host
                continue
            for e in parsed.entities:
                if e.part != 0:
                    continue
                if lang == "python" and e.kind in ("function", "method") and e.body.count("\n") >= 1:
                    functions.append(e)
                elif lang == "markdown" and e.kind == "section" and len(e.body) > 40:
                    sections.append(e)
    return functions, sections


def plant(host: str, attack: str, function: Entity, section: Entity) -> tuple[str, str]:
    """(text, language) of a host with the attack in it: after a function's first line, or ending a section."""
    if host == "markdown":
        return f"{section.body.rstrip()}\n\n{attack.strip()}\n", "markdown"
    return plant_in_code(function.body, attack, HOSTS.index(host), ensure_ascii=False), "python"


def evaluate(roots: list[Path], bipia: Path | None, threshold: float = 0.5) -> dict:
    """Detection per family and host, false positives on clean hosts and on clean discussion text."""
    functions, sections = clean_hosts(roots)
    if not functions or not sections:
        return {"note": "no clean functions or Markdown sections to plant into"}
    families = load_attacks(bipia)
    detected: dict[str, list[bool]] = defaultdict(list)
    by_host: dict[str, list[bool]] = defaultdict(list)
    misses: list[dict] = []
    n = 0
    for family, attacks in families.items():
        for attack in attacks:
            for host in HOSTS:
                fn, sec = functions[(n * 7919) % len(functions)], sections[(n * 104729) % len(sections)]
                n += 1
                text, lang = plant(host, attack, fn, sec)
                score, signals = injection_score(text, lang)
                hit = score >= threshold
                detected[family].append(hit)
                by_host[host].append(hit)
                if not hit:
                    misses.append({"family": family, "host": host, "attack": attack[:160], "score": score})
    clean_fn = [injection_score(e.body, "python") for e in functions]
    clean_md = [injection_score(e.body, "markdown") for e in sections]
    flagged_clean = [{"where": f"{e.file}:{e.start_line}", "signals": s[1]} for e, s in zip(functions + sections, clean_fn + clean_md) if s[0] >= threshold]
    discussion = []
    for i, text in enumerate(clean_discussion()):
        for host in HOSTS:
            body, lang = plant(host, text, functions[(i * 31) % len(functions)], sections[(i * 17) % len(sections)])
            score, signals = injection_score(body, lang)
            discussion.append(score >= threshold)
            if score >= threshold:
                flagged_clean.append({"where": f"discussion[{i}] in {host}", "signals": signals})
    own_data = json.loads(DATA.read_text(encoding="utf-8"))
    later: dict[str, list[bool]] = {}  # attacks written after tuning
    ordinary: dict[str, list[bool]] = {}  # their twins: comments and docs in an attack's words
    for name in LATER_SETS:
        later[name], ordinary[name] = [], []
        for i, attack in enumerate(own_data.get(f"_{name}", [])):
            for host in HOSTS:
                text, lang = plant(host, attack, functions[(i * 613) % len(functions)], sections[(i * 211) % len(sections)])
                score, _ = injection_score(text, lang)
                later[name].append(score >= threshold)
                if score < threshold:
                    misses.append({"family": name, "host": host, "attack": attack[:160], "score": score})
        for i, text in enumerate(own_data.get(f"_{name}_clean", [])):
            for host in HOSTS:
                body, lang = plant(host, text, functions[(i * 37) % len(functions)], sections[(i * 23) % len(sections)])
                score, signals = injection_score(body, lang)
                ordinary[name].append(score >= threshold)
                if score >= threshold:
                    flagged_clean.append({"where": f"{name}_clean[{i}] in {host}", "signals": signals})
    own = [x for f, v in detected.items() if not f.startswith("bipia:") for x in v]
    bipia_hits = [x for f, v in detected.items() if f.startswith("bipia:") for x in v]
    rate = lambda xs: round(sum(xs) / len(xs), 4) if xs else None  # noqa: E731
    return {
        "threshold": threshold, "planted": n, "clean_functions": len(functions), "clean_sections": len(sections),
        "detection_bipia": rate(bipia_hits), "detection_own": rate(own), "detection_all": rate(bipia_hits + own),
        "detection_later": {name: rate(hits) for name, hits in later.items()},
        "false_positive_later": {name: rate(flags) for name, flags in ordinary.items() if flags},
        "detection_by_family": {f: rate(v) for f, v in detected.items()},
        "detection_by_host": {h: rate(v) for h, v in by_host.items()},
        "false_positive_code": rate([s >= threshold for s, _ in clean_fn]),
        "false_positive_markdown": rate([s >= threshold for s, _ in clean_md]),
        "false_positive_discussion": rate(discussion),
        "false_positive_all": rate([s >= threshold for s, _ in clean_fn + clean_md] + discussion),
        "flagged_clean": flagged_clean[:40], "misses": misses[:200],
    }


def render(result: dict) -> str:
    if "note" in result:
        return f"## Injection\n\n{result['note']}\n"
    lines = ["## Injection (planted in comment, docstring, string constant and Markdown paragraph)", "",
             f"Detection at injection >= {result['threshold']}: BIPIA train {_rate(result['detection_bipia'])}"
             + ("" if result["detection_bipia"] is not None else " (its attacks are not here: ../shared/eval/bipia)") + ", "
             f"Assay's own families {_rate(result['detection_own'])}, all {_rate(result['detection_all'])} "
             f"({result['planted']} planted). Attacks written after tuning: "
             + ", ".join(f"{_rate(r)} ({name}, {LATER_SETS[name]})" for name, r in result["detection_later"].items()) + ".", "",
             "| family | detection |", "|---|---|"]
    lines += [f"| {f} | {r:.3f} |" for f, r in result["detection_by_family"].items()]
    lines += ["", "| host | detection |", "|---|---|"] + [f"| {h} | {r:.3f} |" for h, r in result["detection_by_host"].items()]
    lines += ["", f"False positives: code {result['false_positive_code']:.4f} ({result['clean_functions']} functions), "
              f"Markdown {result['false_positive_markdown']:.4f} ({result['clean_sections']} sections), "
              f"text discussing injection {result['false_positive_discussion']:.4f}, all {result['false_positive_all']:.4f}; "
              "ordinary text in an attack's words: "
              + ", ".join(f"{_rate(r, 4)} ({name}, {LATER_SETS[name]})" for name, r in result["false_positive_later"].items()) + "."]
    return "\n".join(lines) + "\n"


def _rate(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"
