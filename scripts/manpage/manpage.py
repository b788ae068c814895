#!/usr/bin/env python3
"""The two ends of man/nearby.1's generation around swift-argument-parser's generate-manual tool.

  manpage.py dump NEARBY [ARG...]
      Runs NEARBY ARG... (generate-manual passes --experimental-dump-help) and prints its JSON with
      every text made safe for the tool: generate-manual 1.8.2 silently drops each non-ASCII
      character ("1–15" becomes "115") and escapes a leading "." or "'" only at the very start of a
      text. So non-ASCII characters become @U+XXXX@ and line-leading "." / "'" get @ZW@ in front;
      `finish` turns those into mdoc escapes.

  manpage.py finish RAW.1 SECTIONS.mdoc EVENTS.md EXIT-CODES.md
      Prints the finished page: placeholders resolved; help texts laid out as mdoc wants them (one
      sentence per line, lines of at most 80 bytes, .Pp for blank lines, indented lines such as the
      examples as literal displays); the generator's generic EXIT STATUS replaced by the table of
      docs/exit-codes.md; the sections of SECTIONS.mdoc added, with the event kinds of docs/events.md.
"""
import json
import re
import subprocess
import sys

WIDTH = 80
NAMED = {0x2014: r"\(em", 0x2013: r"\(en", 0x2018: r"\(oq", 0x2019: r"\(cq", 0x201C: r"\(lq", 0x201D: r"\(rq"}
PLACEHOLDER = re.compile(r"@U\+([0-9A-F]{4,6})@")
ZERO_WIDTH = "@ZW@"


# ---------------------------------------------------------------- dump


def make_safe(text):
    text = re.sub(r"(?m)^(?=[.'])", ZERO_WIDTH, text)
    return "".join(c if ord(c) < 128 else "@U+%04X@" % ord(c) for c in text)


def safe(value):
    if isinstance(value, str):
        return make_safe(value)
    if isinstance(value, list):
        return [safe(v) for v in value]
    if isinstance(value, dict):
        return {k: safe(v) for k, v in value.items()}
    return value


def dump(argv):
    result = subprocess.run(argv, stdout=subprocess.PIPE, check=False)
    if result.returncode != 0:
        return result.returncode
    json.dump(safe(json.loads(result.stdout)), sys.stdout, indent=1, sort_keys=True)
    return 0


# ---------------------------------------------------------------- finish


def unplaceholder(line):
    line = line.replace(ZERO_WIDTH, r"\&")
    return PLACEHOLDER.sub(lambda m: NAMED.get(int(m.group(1), 16), r"\[u%s]" % m.group(1)), line)


def protect(line):
    """A text line must not start with a control character or a blank."""
    return r"\&" + line if line[:1] in (".", "'", " ") else line


ABBREVIATIONS = re.compile(r"(?:\b(?:e\.g|i\.e|etc|vs|cf)|\b[A-Za-z])$")
END_OF_SENTENCE = re.compile(r"(?<=\S)([.!?][)\"'\]]*) +(?=[A-Z])")


def sentences(line):
    """One sentence per line: mandoc warns about a new sentence in mid-line ("new sentence, new
    line"), and only a line end gets the wider space after a full stop."""
    out, start = [], 0
    for match in END_OF_SENTENCE.finditer(line):
        if ABBREVIATIONS.search(line[start:match.start()]):
            continue
        out.append(line[start:match.end(1)])
        start = match.end()
    out.append(line[start:])
    return out


def wrap(line):
    words, lines, current = line.split(" "), [], ""
    for word in words:
        if not word:
            continue
        if current and len((current + " " + word).encode()) > WIDTH:
            lines.append(current)
            current = word
        else:
            current = current + " " + word if current else word
    if current:
        lines.append(current)
    return [protect(l) for l in lines]


def text_block(lines):
    """Help text between macros: paragraphs, and indented runs (examples) as literal displays."""
    out, literal = [], []

    def flush_literal():
        if literal:
            indent = min(len(l) - len(l.lstrip(" ")) for l in literal)
            out.append(".Bd -literal -offset indent")
            out.extend(r"\&" + l[indent:] if l[indent:indent + 1] in (".", "'") else l[indent:] for l in literal)
            out.append(".Ed")
            literal.clear()

    for line in lines:
        bare = line[2:] if line.startswith(r"\&") else line
        if bare.startswith(" ") and bare.strip():
            literal.append(bare)
            continue
        flush_literal()
        if not line.strip():
            out.append(".Pp")
        else:
            for sentence in sentences(line):
                out.extend(wrap(sentence))
    flush_literal()
    return out


def tidy(lines):
    """Drops paragraph breaks mandoc would skip: doubled, or next to a list, display or section edge."""
    out = []
    for line in lines:
        if line == ".Pp" and (not out or out[-1] in (".Pp",) or out[-1].startswith((".Sh", ".Bl", ".It"))):
            continue
        if line.startswith((".It", ".El", ".Sh", ".Bd", ".Bl")) and out and out[-1] == ".Pp":
            out.pop()
        out.append(line)
    return out


def code_spans(text):
    """Markdown text with `code` spans and [links](…) as mdoc lines (code as .Ql)."""
    text = re.sub(r"\[[^\]]+\]\(([\w-]+\.md)\)", r"docs/\1", text)
    text = re.sub(r"\[([^\]]+)\]\([^)]+\)", r"\1", text)
    parts = text.split("`")
    lines = []
    for index, part in enumerate(parts):
        if index % 2 == 0:
            if index > 0:
                # Punctuation right after a code span belongs on its macro line.
                punct = re.match(r"[.,;:)?!]+", part)
                if punct:
                    lines[-1] += " " + " ".join(punct.group(0))
                    part = part[punct.end():]
                elif part[:1] not in ("", " "):
                    lines[-1] += " Ns"
            opening = ""
            if index + 1 < len(parts):
                # So does an opening parenthesis right before one.
                match = re.search(r"[(\[]+$", part)
                if match:
                    opening = " ".join(match.group(0)) + " "
                    part = part[:match.start()]
            part = part.strip()
            if part:
                lines.extend(l for s in sentences(part.replace("\\", r"\e")) for l in wrap(s))
            if index + 1 < len(parts):
                lines.append(".Ql " + opening)
        else:
            lines[-1] += macro_argument(part)
    return lines


def macro_argument(text):
    text = text.replace("\\", r"\e").replace('"', r"\(dq")
    return '"%s"' % text if " " in text or not text else text


def event_kinds(markdown):
    kinds = re.findall(r"(?m)^#{2,3} `([a-z-]+)` \u2014 (.+)$", markdown)
    lines = [".Bl -tag -width %s -compact" % max((k for k, _ in kinds), key=len, default="Ds")]
    for kind, what in kinds:
        lines.append(".It Cm " + kind)
        lines.extend(code_spans(make_safe(what)))
    lines.append(".El")
    return lines


def exit_statuses(markdown):
    lines = [".Bl -tag -width Ds"]
    for status, meaning in re.findall(r"(?m)^\| (\d+) \| (.+) \|$", markdown):
        lines.append(".It Sy " + status)
        lines.extend(code_spans(make_safe(meaning)))
    lines.append(".El")
    prose = markdown.split("\n\n")
    after = [p for p in prose if p.strip() and not p.startswith(("#", "|"))]
    for paragraph in after:
        lines.append(".Pp")
        lines.extend(code_spans(make_safe(" ".join(paragraph.split()))))
    return lines


def finish(raw_path, sections_path, events_path, exit_codes_path):
    with open(raw_path, encoding="utf-8") as f:
        raw = f.read().rstrip("\n").split("\n")
    with open(sections_path, encoding="utf-8") as f:
        sections = f.read().rstrip("\n")
    with open(events_path, encoding="utf-8") as f:
        events = f.read()
    with open(exit_codes_path, encoding="utf-8") as f:
        exit_codes = f.read()

    # The generator's EXIT STATUS (".Ex -std") gives way to the documented table.
    exit_at = raw.index('.Sh "EXIT STATUS"')
    body, tail = raw[:exit_at], raw[exit_at:]
    tail = [l for l in tail[1:] if l != ".Ex -std"]

    out, text = [], []
    for line in body:
        if line.startswith(".Nd "):
            # A one-line description is not a sentence: mandoc frowns on its trailing period.
            line = re.sub(r'\.("?)$', r"\1", line)
        if line.startswith(".") and not line.startswith(r"\&"):
            out.extend(text_block(text))
            text = []
            out.append(line)
        else:
            text.append(line)
    out.extend(text_block(text))

    added = []
    for line in sections.split("\n"):
        if line == "@EVENT_KINDS@":
            added.extend(event_kinds(events))
        elif line == "@EXIT_STATUS@":
            added.append('.Sh "EXIT STATUS"')
            added.extend(exit_statuses(exit_codes))
        else:
            added.append(line)
    page = tidy(out + added + tail)
    sys.stdout.write("\n".join(unplaceholder(l) for l in page) + "\n")
    return 0


def main(argv):
    if len(argv) >= 3 and argv[1] == "dump":
        return dump(argv[2:])
    if len(argv) == 6 and argv[1] == "finish":
        return finish(*argv[2:])
    sys.stderr.write(__doc__)
    return 64


if __name__ == "__main__":
    sys.exit(main(sys.argv))
