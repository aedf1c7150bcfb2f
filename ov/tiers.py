"""Context tiers: abstract (L0), overview (L1), front matter; pure.

L0 `abstract` is a summary of about 256 characters taken from what the author wrote as
one: front-matter `description`/`summary`, a module docstring, a leading doc comment, a
document's first real paragraph; failing those, the first non-empty lines. It is never
empty for a file with any non-whitespace text. L1 `overview` is the file's outline:
a markdown heading tree with each heading's first sentence, code classes and functions
with their signatures and first doc line, or the first line of each paragraph; at most
about 4,000 characters, cut at a line boundary. L2 is the text itself.

All of it is regexes over lines (plus `ast` for Python outlines), deterministic, and
cheap enough to run on every file at index time. A Jupyter notebook's tiers are read from
its cells as markdown (`notebook_text`), not from its JSON. File kinds and `-t` type names
live in `ov.kinds`.
"""

from __future__ import annotations

import ast
import functools
import json
import os
import re

from ov.chunk import RST_ADORN_RE
from ov.kinds import is_notebook, kind_of

ABSTRACT_CHARS = 256
OVERVIEW_CHARS = 4000
ELLIPSIS = "…"
# `ast.parse` runs at ~3 MB/s; past this size the regex outline keeps indexing fast.
AST_MAX_CHARS = 256 * 1024

# --- front matter ---------------------------------------------------------------------
_KEY_RE = re.compile(r"^([A-Za-z_][\w.-]*)\s*:(?:\s+(.*))?$")


def _scalar(v: str) -> str:
    v = v.strip()
    if len(v) >= 2 and v[0] == v[-1] and v[0] in "\"'":
        return v[1:-1]
    if " #" in v:  # a YAML comment after a plain value
        v = v.split(" #", 1)[0].rstrip()
    return v


def _flow_list(v: str) -> list[str]:
    inner = v.strip()[1:-1]
    return [_scalar(x) for x in inner.split(",") if x.strip()]


def front_matter_block(text: str) -> tuple[list[str], int] | None:
    """The lines between the leading '---' and its closing line, and the text offset after it.
    A UTF-8 byte order mark before it is passed over (Windows editors write one: a note's
    summary was its raw `--- title: ... ---`)."""
    bom = 1 if text.startswith("\ufeff") else 0
    if not text.startswith("---", bom):
        return None
    lines = text[bom:].split("\n")
    if lines[0].rstrip() != "---":
        return None
    offset = bom + len(lines[0]) + 1
    for j in range(1, len(lines)):
        if lines[j].rstrip() in ("---", "..."):
            return [ln.rstrip("\r") for ln in lines[1:j]], offset + len(lines[j]) + 1
        offset += len(lines[j]) + 1
    return None


def front_matter(text: str) -> dict:
    """Top-level keys of a leading `---` front-matter block, parsed without YAML.

    Values: plain or quoted scalars; `[a, b]` and `- item` lists; a nested `k: v` block
    as a dict; `|` and `>` block scalars as text. `tags` comes back as found (a dict,
    a list such as ["k=v", ...] or a string) for the caller to validate. {} when absent.
    """
    block = front_matter_block(text)
    if block is None:
        return {}
    lines = block[0]
    out: dict = {}
    i = 0
    while i < len(lines):
        m = _KEY_RE.match(lines[i])
        i += 1
        if not m:
            continue
        key, raw = m.group(1), (m.group(2) or "").strip()
        nested = []
        while i < len(lines) and (not lines[i].strip() or lines[i][:1] in (" ", "\t", "-")):
            nested.append(lines[i])
            i += 1
        if raw.startswith("[") and raw.endswith("]"):
            out[key] = _flow_list(raw)
        elif raw in ("|", ">", "|-", ">-", "|+", ">+"):
            body = [ln.strip() for ln in nested]
            out[key] = ("\n" if raw[0] == "|" else " ").join(b for b in body if b).strip()
        elif raw:
            out[key] = _scalar(raw)
        else:
            items = [ln.strip() for ln in nested if ln.strip() and not ln.strip().startswith("#")]
            if items and all(it.startswith("-") for it in items):
                out[key] = [_scalar(it[1:]) for it in items]
            elif items:
                mapping = {}
                for it in items:
                    km = _KEY_RE.match(it)
                    if km:
                        mapping[km.group(1)] = _scalar(km.group(2) or "")
                out[key] = mapping
            else:
                out[key] = ""
    return out


# --- helpers --------------------------------------------------------------------------
def clip(s: str, limit: int = ABSTRACT_CHARS) -> str:
    """Whitespace collapsed; longer than `limit`, cut at a word boundary with "…"."""
    s = " ".join(s.split())
    if len(s) <= limit:
        return s
    cut = s.rfind(" ", 0, limit)
    if cut < limit // 2:
        cut = limit - 1
    return s[:cut].rstrip(" ,;:") + ELLIPSIS


def _cap_lines(lines: list[str], limit: int = OVERVIEW_CHARS) -> str:
    out: list[str] = []
    size = 0
    for ln in lines:
        if size + len(ln) + 1 > limit:
            break
        out.append(ln)
        size += len(ln) + 1
    return "\n".join(out)


_LINK_RE = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_REFLINK_RE = re.compile(r"\[([^\]]+)\]\[[^\]]*\]")
_EMPH_RE = re.compile(r"(\*\*|__|`)")
_HTML_TAG_RE = re.compile(r"<[^>]+>")


def _inline(s: str) -> str:
    """Markdown inline syntax reduced to its text."""
    s = _LINK_RE.sub(lambda m: m.group(1), s)
    s = _REFLINK_RE.sub(lambda m: m.group(1), s)
    s = _HTML_TAG_RE.sub("", s)
    return _EMPH_RE.sub("", s)


_SENTENCE_END = re.compile(r"(?<=[.!?。！？])(?:\s|$)")


def _first_sentence(s: str, limit: int = 200) -> str:
    s = " ".join(s.split())
    m = _SENTENCE_END.search(s)
    if m:
        s = s[:m.start()]
    return clip(s, limit)


# --- markdown -------------------------------------------------------------------------
_ATX_RE = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_FENCE_RE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_SETEXT_RE = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_RULE_RE = re.compile(r"^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$")
_BADGE_LINE_RE = re.compile(r"^(?:\s*\[?!\[[^\]]*\]\([^)]*\)\]?(?:\([^)]*\))?\s*)+$")
_LIST_ITEM_RE = re.compile(r"^\s*(?:[-*+]|\d{1,9}[.)])\s+(?:\[[ xX]\]\s+)?")
_HTML_LINE_RE = re.compile(r"^\s*</?[A-Za-z][^>]*>\s*$|^\s*<(?:img|br|hr|p|div|a|h\d|picture|source)\b", re.I)


def _markdown_blocks(text: str) -> list[tuple[str, int, str]]:
    """("heading", level, text) and ("para", 0, joined text) in order; code and noise skipped."""
    fm = front_matter_block(text)
    body = text[fm[1]:] if fm else text
    lines = [ln.rstrip("\r") for ln in body.split("\n")]
    blocks: list[tuple[str, int, str]] = []
    para: list[str] = []
    fence: str | None = None
    in_comment = False

    def flush() -> None:
        if para:
            joined = _inline(" ".join(p.strip() for p in para)).strip()
            if joined:
                blocks.append(("para", 0, joined))
            para.clear()

    for ln in lines:
        if fence is not None:
            m = _FENCE_RE.match(ln)
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = None
            continue
        if in_comment:
            if "-->" in ln:
                in_comment = False
            continue
        s = ln.strip()
        if s.startswith("<!--"):
            flush()
            in_comment = "-->" not in s
            continue
        m = _FENCE_RE.match(ln)
        if m:
            flush()
            fence = m.group(1)
            continue
        m = _ATX_RE.match(ln)
        if m:
            flush()
            blocks.append(("heading", len(m.group(1)), _inline(m.group(2) or "").strip()))
            continue
        if _SETEXT_RE.match(ln) and para:
            title = _inline(" ".join(p.strip() for p in para)).strip()
            para.clear()
            blocks.append(("heading", 1 if s[0] == "=" else 2, title))
            continue
        if not s or _RULE_RE.match(ln) or _BADGE_LINE_RE.match(s) or _HTML_LINE_RE.match(s):
            flush()
            continue
        m = _LIST_ITEM_RE.match(ln)
        if m:  # each list item stands alone, without its marker
            flush()
            ln = ln[m.end():]
            if _TOC_ENTRY_RE.match(ln):  # a table of contents' entry: a link within the page
                continue
        para.append(ln)
    flush()
    return blocks


# a table of contents' label standing as a paragraph (`**Table of Contents**`): an Ansible
# role's README read "zabbix_server — Table of Contents" as its abstract
_TOC_RE = re.compile(r"^(?:table of contents|contents|toc)\s*:?$", re.I)
_TOC_ENTRY_RE = re.compile(r"^\s*\[[^\]]*\]\(#[^)]*\)\s*$")


def _markdown_abstract(text: str) -> str:
    """The first paragraph, after the title it falls under (the front matter's `title`, else
    the first heading before it): a note's title is its subject, and its first paragraph
    alone often is not (`# Fluffy pancakes` / "Makes about 12 pancakes.")."""
    named = front_matter(text).get("title") if text.lstrip("\ufeff").startswith("---") else None
    title = _inline(named).strip() if isinstance(named, str) else ""
    headings = []
    for kind, _, s in _markdown_blocks(text):
        if kind == "heading":
            headings.append(s)
            title = title or s
        if kind == "para" and re.search(r"\w", s) and not _TOC_RE.match(s):
            return f"{title} — {s}" if title and not s.lower().startswith(title.lower()) else s
    # headings alone (a template): the title and what it is divided into, not the raw
    # front matter the first lines would give
    rest = [h for h in headings if h != title]
    return f"{title} — {', '.join(rest)}" if title and rest else title


def _markdown_overview(text: str) -> str:
    return _blocks_overview(_markdown_blocks(text))


def _blocks_overview(blocks: list[tuple[str, int, str]]) -> str:
    """Headings as `#`s by level, each with its first paragraph's first sentence."""
    out: list[str] = []
    for i, (kind, level, s) in enumerate(blocks):
        if kind != "heading":
            continue
        line = "  " * (level - 1) + "#" * level + " " + s
        paras = [b[2] for b in blocks[i + 1:i + 3] if b[0] == "para"]
        if paras and _TOC_RE.match(paras[0]) and i + 2 < len(blocks) and blocks[i + 1][0] == "para":
            paras = paras[1:]  # past a table of contents' label (its entries are no paragraphs)
        if i + 1 < len(blocks) and blocks[i + 1][0] == "para" and paras:
            line += " — " + _first_sentence(paras[0])
        out.append(line)
    return _cap_lines(out) if out else ""


# --- plain text -----------------------------------------------------------------------
def _paragraph_first_lines(text: str, limit: int = 160, wordy: bool = False) -> list[str]:
    """Each paragraph's first line; with `wordy`, its first line holding a word (code with
    no definition: a comment's `/*` or `/**` line says nothing, the JDK's package-info.java
    files read `/*`, `/**` as their outline), and below a `#` or `;` comment heading the
    paragraph its first other line too (a Makefile's `VERSION = 2.4.0` had been left out)."""
    out = []
    head = True  # the next line holding something heads its paragraph
    after_comment = False  # the paragraph's head was a comment: its first other line counts too
    for ln in text.split("\n"):
        s = ln.strip()
        if s and head and (not wordy or _WORDY_RE.search(s)):
            out.append(clip(s, limit))
            head = False
            # (a `#` or `;` comment: a Makefile's, a config's; a C-style block's lines run on)
            after_comment = wordy and s.startswith(("#", ";")) and not _PREPROCESSOR_RE.match(s)
        elif s and after_comment and not _COMMENT_PREFIX_RE.match(s):
            out.append(clip(s, limit))  # a Makefile's `VERSION = 2.4.0` below its comment
            after_comment = False
        elif not s:
            head = True
            after_comment = False
    return out


def _first_lines(text: str, n: int = 3) -> str:
    return " ".join([ln.strip() for ln in text.split("\n") if ln.strip()][:n])


# --- code: abstracts ------------------------------------------------------------------
_PY_DOC_RE = re.compile(
    r"\A(?:\ufeff)?(?:[ \t]*(?:#[^\n]*)?\r?\n)*[ \t]*[rRuU]?(\"\"\"|'''|\"|')(.*?)\1", re.S)
# (the second header of the JDK's java.util.concurrent, 99 of java.util's 369 files: "This
# file is available under and governed by the GNU General Public License version 2 only
# ... released to the public domain")
_LICENSE_RE = re.compile(r"copyright|licen[cs]ed|spdx-license|all rights reserved|"
                         r"permission is hereby granted|\(c\)|public license|public domain|"
                         r"(?:apache|mit|bsd|mozilla) license|under the terms of|software licen[cs]e", re.I)
# a C preprocessor line starts with `#` as a shell or Python comment does: it is code
_PREPROCESSOR_RE = re.compile(r"#\s*(?:include|define|undef|if|ifdef|ifndef|elif|else|endif|pragma|import)\b")
# (and the marks of Haskell's `-- |` / `{-|`, LDoc's `---`, Lua's `--[[`, R's roxygen `#'`,
# OCaml's `(**`: they had read "| Money in minor units", "' Merchant cohort retention")
_COMMENT_PREFIX_RE = re.compile(r"^\s*(?:///?!?|#'|#!?|--\[=*\[|-{2,3}(?:\s?[|^])?|;+|%|\(\*\*?|\{-\|?|\*(?!/)|"
                                r"/\*\*?|\*/)\s?")
# a block comment's opening and its end (`_leading_comments`)
_BLOCK_COMMENTS = (("/*", "*/"), ("(*", "*)"), ("{-", "-}"), ("--[[", "]]"), ("--[=[", "]=]"))
# ... and the end that `_comment_text` takes off a block opened so (only so: a C comment
# ending `table[index[i]]` is no Lua block)
_BLOCK_ENDS = {o: re.compile(r"\s*(?:--)?" + re.escape(c) + r"\s*$") for o, c in _BLOCK_COMMENTS if o != "/*"}
# a block comment of the language of `ext` (`_regex_outline`, `defines`): C's and its kin's
# by default, and those of the languages that write theirs otherwise
_LANG_BLOCKS = {"ocaml": ("(*", "*)"), "haskell": ("{-", "-}"), "lua": ("--[[", "]]")}


# tool directives written as comments (`//go:build`, `// +build`, `// eslint-disable`...):
# not the author's words about the code; 24 % of the Go stdlib's files read "go:build
# asan" or "go:linkname main_main main.main" as their abstract
_DIRECTIVE_RE = re.compile(r"(?:go:\w|\+build\b|line \S+:\d|nolint\b|NOLINT|eslint[- ]|@ts-|"
                           r"prettier-ignore|istanbul ignore|jshint |noqa\b|pylint:|clang-format |"
                           # Ruby's magic comments, RuboCop's and Sorbet's (69 % of a Ruby tree's
                           # files had `frozen_string_literal: true` as their abstract)
                           r"frozen_string_literal:|(?:-\*-\s*)?(?:en)?coding[:=]|warn_indent:|"
                           r"shareable_constant_value:|rubocop:|typed: |:(?:stop|start|no)doc:)")


_WORDY_RE = re.compile(r"[^\W_]")


# Javadoc's (and JSDoc's, PHPDoc's) inline tags and the HTML its comments are written in:
# `{@code null}` reads `null`, `{@link Map#get(Object) get}` reads `get`, `<p>`/`<pre>` say
# nothing (the JDK's module-info.java read "<dl class="notes"> <dt>Providers:</dt> ...")
_INLINE_TAG_RE = re.compile(r"\{@(code|literal|link|linkplain|value|index|systemProperty)\s+((?:[^{}]|\{[^{}]*\})*)\}")
_INHERIT_DOC_RE = re.compile(r"\{@inherit[dD]oc\}")
_DOC_HTML_RE = re.compile(r"</?(?:p|b|i|em|strong|code|pre|tt|ul|ol|li|dl|dt|dd|a|br|blockquote|h[1-6]|table|tr|td|"
                          r"th|thead|tbody|div|span|sup|sub|small|cite|var|kbd|samp|hr)(?:\s[^<>]*)?/?>", re.IGNORECASE)


_LINK_REF_RE = re.compile(r"\s*([^\s(]*(?:\([^)]*\))?)\s*(.*)", re.DOTALL)


def _inline_tag(m: re.Match) -> str:
    """`{@code a + b}` -> `a + b`; `{@link #add(int, Object) add}` -> `add`, without a label
    its reference (`Map.get(Object)`); `{@index jrt file system}` -> its term."""
    kind, body = m.group(1), m.group(2).strip()
    if kind in ("link", "linkplain"):
        ref, label = _LINK_REF_RE.match(body).groups()
        return label.strip() or ref.replace("#", ".").removeprefix(".")
    if kind == "index":
        return body.split('"')[1] if body.startswith('"') and body.count('"') >= 2 else body.split(" ", 1)[0]
    return body


def _comment_text(lines: list[str]) -> str:
    out = []
    first = lines[0].lstrip() if lines else ""
    end = next((rx for mark, rx in _BLOCK_ENDS.items() if first.startswith(mark)), None)
    for ln in lines:
        s = _COMMENT_PREFIX_RE.sub("", ln, count=1).replace("*/", "")
        s = (end.sub("", s) if end is not None else s).strip()
        if _DIRECTIVE_RE.match(s) or (s and not _WORDY_RE.search(s)):
            continue  # (and a rule of slashes or stars: Boost's `////////...`)
        if s.startswith("@") and out:  # JSDoc/Javadoc tags end the description
            break
        out.append(s)
    text = " ".join(s for s in out if s)
    if "{@" in text or "<" in text:
        text = _DOC_HTML_RE.sub("", _INLINE_TAG_RE.sub(_inline_tag, _INHERIT_DOC_RE.sub("", text)))
        text = re.sub(r"\s{2,}", " ", text).strip()
    return text


def _leading_comments(text: str, limit_lines: int = 400) -> list[list[str]]:
    """The comment blocks at the top of a file, before its first line of code."""
    lines = text.split("\n")[:limit_lines]
    blocks: list[list[str]] = []
    cur: list[str] = []
    close = ""  # the end of the block comment the line is in
    pragma = False  # inside a Haskell pragma of several lines
    for i, ln in enumerate(lines):
        s = ln.strip()
        if close:
            cur.append(ln)
            if close in s:
                close = ""
                blocks.append(cur)
                cur = []
            continue
        if i == 0 and s.startswith("#!"):
            continue
        if pragma or s.startswith("{-#"):  # Haskell's `{-# LANGUAGE ... #-}`: no comment, no code
            pragma = "#-}" not in s
            continue
        if not s:
            if cur:
                blocks.append(cur)
                cur = []
            continue
        opened = next(((o, c) for o, c in _BLOCK_COMMENTS if s.startswith(o)), None) if s[0] in "/({-" else None
        if opened is not None:
            if cur:
                blocks.append(cur)
            cur = [ln]
            if opened[1] in s[len(opened[0]):]:
                blocks.append(cur)
                cur = []
            else:
                close = opened[1]
            continue
        if s.startswith(("//", "#", "--")) and not _PREPROCESSOR_RE.match(s):
            cur.append(ln)
            continue
        break
    if cur:
        blocks.append(cur)
    return blocks


def _rst_title(para: str) -> bool:
    """Whether a paragraph is a title as rst writes it, a line underlined (and perhaps
    overlined) with one punctuation mark (ov.chunk's adornment): 16 of 667 abstracts of a
    tree of Python packages were `requests.sessions ~~~~~~~~~~~~~`."""
    lines = para.strip().split("\n")
    return (len(lines) in (2, 3) and RST_ADORN_RE.match(lines[-1]) is not None
            and (len(lines) == 2 or RST_ADORN_RE.match(lines[0]) is not None))


# files whose first string literal, before any code, says what the file is
_DOCSTRING_EXTS = frozenset({".jl", ".graphql", ".graphqls", ".gql"})
# an Elixir module's `@moduledoc """..."""` (or `~S"""`, or one string); `@moduledoc false` says nothing
_MODULEDOC_RE = re.compile(r'@moduledoc\s+(?:~[sS])?(?:"""(.*?)"""|"((?:[^"\\\n]|\\.)*)")', re.S)


def _code_abstract(text: str, path: str) -> str:
    ext = os.path.splitext(path)[1].lower()
    if ext in (".py", ".pyi", ".pyw"):
        m = _PY_DOC_RE.match(text)
        if m and m.group(2).strip():  # its summary paragraph, past an rst title (`requests.sessions\n~~~~`)
            paras = re.split(r"\n\s*\n", m.group(2).strip())
            return next((p for p in paras if not _rst_title(p)), paras[0])
    if ext in _DOCSTRING_EXTS and (m := _PY_DOC_RE.match(text)) and m.group(2).strip():
        # Julia's, GraphQL's: a docstring first; its first paragraph of prose (Julia's opens
        # with the signature indented as code: `    Risk`)
        paras = [p for p in re.split(r"\n[ \t]*\n", m.group(2).strip("\n")) if p.strip()]
        return next((p.strip() for p in paras if not all(ln.startswith(("    ", "\t")) for ln in p.split("\n")
                                                           if ln.strip())), paras[0].strip())
    m = _MODULEDOC_RE.search(text[:20000]) if ext in (".ex", ".exs") else None
    if m and (doc := (m.group(1) or m.group(2) or "").strip()):
        return re.split(r"\n\s*\n", doc)[0]
    for block in _leading_comments(text):
        body = _comment_text(block)
        if body and not _LICENSE_RE.search(body) and not body.startswith(("-*-", "vim:")) \
                and re.search(r"[A-Za-z]{2}", body) and not _GALAXY_STUB_RE.match(body):
            return body
    lines = text.split("\n")
    if ext == ".go":
        body = _go_file_comment(lines)
        if body:
            return body
    # A doc comment above the first definition (Go's "// Package x", JSDoc, rustdoc). Not
    # in Python, whose files say what they are in a docstring: a comment there speaks for
    # the definition below it (typer's params.py read "Overload for Option created with
    # custom type 'parser'").
    for i, ln in enumerate(lines[:400] if ext not in (".py", ".pyi", ".pyw") else ()):
        if _defn(ln, ext) is not None:
            if (ext in _C_EXTS and ln.startswith("namespace")) or (ext == ".rb" and ln.lstrip().startswith("module ")):
                # a namespace's comment is seldom the file's; Ruby documents the class or
                # module inside its gem's (`module ActiveSupport` then `# A typical module
                # looks like this:` above `module Concern`)
                doc = _doc_above(lines, i, ext)
                if doc and not _LICENSE_RE.search(doc):
                    return doc
                continue
            doc = _doc_above(lines, i, ext)
            if doc:
                return doc
            break
    # No words of the author's: what the file defines says more than its first lines,
    # which in code are mostly imports ("from __future__ import annotations import ...").
    names = _top_level_names(lines, ext)
    if names:
        return "Defines " + ", ".join(names)
    if ext in _YAML_EXTS and (said := manifest_text(lines) or _task_names(lines)):
        return said
    return _first_code_lines(lines)


# `ansible-galaxy init`'s comment atop each file of a new role (`# tasks file for web`): 11
# files of an ops tree had it as their abstract
_GALAXY_STUB_RE = re.compile(r"^(?:tasks|handlers|defaults|vars|meta|tests) file for \S+$")
_TASK_NAME_RE = re.compile(r"^- name\s*:\s*(.+?)\s*$")


def _task_names(lines: list[str], most: int = 8) -> str:
    """"Tasks: Install nginx; Start nginx" for a YAML list whose items are named at the top
    level (an Ansible tasks or handlers file, a playbook's plays), else ""."""
    names = [_scalar(m.group(1)) for ln in lines[:2000] if (m := _TASK_NAME_RE.match(ln))]
    if not names:
        return ""
    return "Tasks: " + "; ".join(names[:most]) + ("; ..." if len(names) > most else "")


def manifest_text(lines: list[str]) -> str:
    """"Kubernetes Deployment web (namespace shop), Service web" for a manifest (a YAML
    file's lines, `_manifest_objects`), else ""."""
    objs = _manifest_objects(lines)
    return "Kubernetes " + ", ".join(objs) if objs else ""


_YAML_EXTS = frozenset({".yaml", ".yml"})


def is_yaml(path: str) -> bool:
    return os.path.splitext(path)[1].lower() in _YAML_EXTS
_YAML_TOP_RE = re.compile(r"^(apiVersion|kind|metadata)\s*:\s*(.*?)\s*$")
_YAML_META_RE = re.compile(r"^[ \t]+(name|namespace)\s*:\s*(.*?)\s*$")


def _manifest_objects(lines: list[str], most: int = 8) -> list[str]:
    """The objects a Kubernetes manifest (or a Helm chart's template of one) declares, one
    per YAML document holding a top-level `apiVersion` and `kind`: "Deployment web
    (namespace shop)". Its first lines (`apiVersion: apps/v1 kind: Deployment metadata:`)
    were the abstract of every such file, the same for all a tree's Deployments."""
    out: list[str] = []
    doc: dict[str, str] = {}
    in_meta = False
    child = -1  # the indent of `metadata`'s keys (its first child's): a label's `name` is deeper

    def close() -> None:
        if doc.get("apiVersion") is not None and doc.get("kind"):
            name = " ".join(x for x in (doc["kind"], doc.get("name", "")) if x)
            out.append(name + (f" (namespace {doc['namespace']})" if doc.get("namespace") else ""))

    for ln in lines[:2000]:
        if ln.startswith("---"):
            close()
            doc, in_meta = {}, False
            continue
        if (m := _YAML_TOP_RE.match(ln)) is not None:
            in_meta, child = m.group(1) == "metadata", -1
            if not in_meta:
                doc.setdefault(m.group(1), _scalar(m.group(2)))
        elif in_meta and ln[:1] in " \t" and ln.strip() and not ln.lstrip().startswith("#"):
            indent = len(ln) - len(ln.lstrip())
            child = indent if child < 0 else child
            if indent == child and (m := _YAML_META_RE.match(ln)) is not None:
                doc.setdefault(m.group(1), _scalar(m.group(2)))
        elif ln[:1] not in ("", " ", "\t", "#"):
            in_meta = False
    close()
    return out[:most] + ([f"{len(out) - most} more"] if len(out) > most else [])


def _go_file_comment(lines: list[str], limit_lines: int = 400) -> str:
    """Go's comment about the file: a `//` block after the package clause that stands alone
    (a blank line below it, so it documents no declaration), before the first function:
    runtime/map.go's "This file contains the implementation of Go's map type", proc.go's
    "Goroutine scheduler ...". Its abstract was a function's doc."""
    block: list[str] = []
    after_package = False
    for ln in lines[:limit_lines]:
        if ln.startswith("//"):
            block.append(ln)
            continue
        if not ln.strip() and block and after_package:
            body = _comment_text(block)
            if len(body.split()) >= 4 and not _LICENSE_RE.search(body):
                return body
        block = []
        if ln.startswith("package "):
            after_package = True
        elif ln.startswith("func "):
            break
    return ""


_NAME_AFTER_KW_RE = re.compile(r"\b(class|struct|interface|enum|trait|type|mod|module|record|union|"
                               r"namespace|object|protocol|defmodule|typealias|extension|actor|mixin)\s+([\w$.:]+)")
# each name is tried from its first character only, or after a leading `::` (the
# look-behinds): tried from every character of a long run of letters with no `(`, a 20 kB
# line took 27 s to index
_NAME_BEFORE_PAREN_RE = re.compile(r"(?<![\w$~])(?<![\w$~]:)(?<![\w$~]::)([A-Za-z_$~][\w$:~]*)\s*(?:<[^>()]*>)?\s*\(")
# a `def` and its name, with or without parentheses after it (Ruby writes `def params` and
# `def self.safe_load yaml, permitted_classes: []`: 37 % of a Ruby tree's `def` lines)
_DEF_NAME_RE = re.compile(r"^(?:(?:public|private|protected|async|override|final)\s+)*def\s+(?:self\.)?"
                          r"([A-Za-z_]\w*[?!=]?|[-+*/%<>=!~^&|\[\]@`]+)")
_NAME_BOUND_RE = re.compile(r"\b(?:const|let|var|val)\s+([\w$]+)")
_NOT_NAMES = frozenset("if for while switch catch return func function fn def sub proc async await "
                       "new typeof sizeof".split())


# a function or class bound by assignment is known by what it is bound to (the last
# member of a dotted name): `Layer.prototype.match = function (path)` defines match()
_NAME_ASSIGNED_RE = re.compile(r"^(?:(?:export\s+)?(?:const|let|var)\s+)?(?:[\w$]+\.)*([\w$]+)\s*=\s*"
                               r"(?:async\s+)?(function\b|class\b|\(|[\w$]+\s*=>)")


# C and C++: `enum class`, and the macros and attributes a class's name may follow
# (`class BOOST_SYMBOL_VISIBLE illegal_backtracking`, `class __declspec(dllexport) W`):
# Boost's headers read as defining "class BOOST_SYMBOL_VISIBLE" 58 times
_C_NAME_AFTER_KW_RE = re.compile(
    r"\b(enum\s+(?:class|struct)|class|struct|union|enum|namespace)\s+"
    r"(?:(?:[A-Z][A-Z0-9_]+|__\w+(?:\((?:[^()]|\([^()]*\))*\))?|alignas\([^)]*\)|\[\[[^\]]*\]\])\s+(?!final\b))*"
    r"([A-Za-z_]\w*(?:::\w+)*)\b(?!\s*\()")  # (not a function returning `struct VEC3`)


def _drop_template(sig: str) -> str:
    """A C++ signature without its `template<...>` head: `template<class T> class Foo` read
    as defining "class T", and `template<typename D> class MatrixBase` as no definition."""
    if not sig.startswith("template"):
        return sig
    i = sig.find("<")
    if i < 0 or sig[len("template"):i].strip():
        return sig
    depth = 0
    for j in range(i, len(sig)):
        depth += {"<": 1, ">": -1}.get(sig[j], 0)
        if depth == 0:
            return sig[j + 1:].lstrip()
    return sig


# The name a definition of these languages gives (`_defined_name`): `n` the name, `k` (when
# the pattern has it) the kind said before it (`table merchants`); without `k`, `name()`.
_LANG_NAMES = {
    "sql": [re.compile(r"\s*create\s+(?:or\s+replace\s+)?(?:\w+\s+)*?(?P<k>table|view|index|function|procedure|"
                       r"trigger|type|schema|sequence|domain)\s+(?:concurrently\s+)?(?:if\s+not\s+exists\s+)?"
                       r"(?:only\s+)?"
                       r"(?:[\w\"`]+\.)*[\"`]?(?P<n>\w+)", re.IGNORECASE)],
    "proto": [re.compile(r"\s*rpc\s+(?P<n>\w+)"), re.compile(r"\s*(?P<k>message|service|enum|extend)\s+(?P<n>[\w.]+)")],
    "graphql": [re.compile(r"\s*(?:extend\s+)?(?P<k>type|input|interface|enum|union|scalar|directive)\s+@?(?P<n>\w+)")],
    "haskell": [re.compile(r"(?P<k>data|newtype|type|class)\s+(?:family\s+)?(?:\([^)]*\)\s*=>\s*|\w+\s*=>\s*)?"
                           r"(?P<n>[A-Z][\w']*)"),
                re.compile(r"(?P<n>[a-z_][\w']*)\s*::")],
    "ocaml": [re.compile(r"(?:let|and)\s+(?:rec\s+)?(?P<n>[a-z_][\w']*)"),
              re.compile(r"\s*(?:val|external)\s+(?P<n>[a-z_][\w']*)"),
              re.compile(r"\s*(?P<k>type|exception|module|class)\s+(?:type\s+|rec\s+)?(?:\([^)]*\)\s*|'\w+\s+)?"
                         r"(?P<n>[\w']+)")],
    "elixir": [re.compile(r"\s*def(?P<k>module|protocol|impl)\s+(?P<n>[\w.]+)"),
               re.compile(r"\s*def(?:p|macrop?|guardp?|delegate)?\s+(?P<n>[\w?!]+)")],
    "r": [re.compile(r"\s*(?P<n>[\w.]+)\s*(?:<<?-|=)\s*function")],
    "julia": [re.compile(r"\s*(?:function|macro)\s+(?:[\w.]+\.)?(?P<n>[\w!]+)"),
              re.compile(r"\s*(?P<k>module|baremodule|struct|mutable\s+struct|abstract\s+type|primitive\s+type)\s+"
                         r"(?P<n>\w+)"),
              re.compile(r"(?:[\w.]+\.)?(?P<n>[\w!]+)(?:\{[^}]*\})?\(")],
    "lua": [re.compile(r"\s*(?:local\s+)?function\s+(?:[\w.:]+[.:])?(?P<n>\w+)"),
            re.compile(r"\s*(?:local\s+)?(?:[\w.:]+[.:])?(?P<n>\w+)\s*=\s*function")],
    "hcl": [re.compile(r'(?P<k>resource|data)\s+"[^"]*"\s+"(?P<n>[^"]+)"'),
            re.compile(r'(?P<k>module|variable|output|provider)\s+"(?P<n>[^"]+)"')],
    "zig": [re.compile(r"\s*(?:pub\s+)?(?:export\s+|extern\s+|inline\s+)*fn\s+(?P<n>\w+)"),
            re.compile(r"\s*(?:pub\s+)?const\s+(?P<n>\w+)\s*=\s*(?P<k>struct|enum|union|opaque)")],
}


def _lang_name(sig: str, lang: str) -> str | None:
    """`_defined_name` in a language of `_LANG_NAMES`; None in any other."""
    rules = _LANG_NAMES.get(lang)
    if rules is None:
        return None
    for rx in rules:
        m = rx.match(sig)
        if m:
            kind, name = m.groupdict().get("k"), m.group("n")
            return f"{' '.join(kind.lower().split())} {name}" if kind else f"{name}()"
    return ""


def _defined_name(sig: str, ext: str = "") -> str:
    """The name a definition's signature line defines, as the file's reader says it:
    `class Store`, `open_store()`; "" when none is found."""
    if (own := _lang_name(sig, _EXT_LANG.get(ext, ""))) is not None:
        return own
    m = _NAME_ASSIGNED_RE.match(sig)
    if m and m.group(1) not in ("exports", "prototype"):
        return f"class {m.group(1)}" if m.group(2) == "class" else f"{m.group(1)}()"
    if ext in _C_EXTS:
        sig = _drop_template(sig)
        m = _C_NAME_AFTER_KW_RE.search(sig)
        if m and "(" not in sig[:m.start()]:
            return f"{m.group(1)} {m.group(2)}"
    m = _NAME_AFTER_KW_RE.search(sig)
    if m and "(" not in sig[:m.start()]:  # (Swift's and Kotlin's `struct Promise: Decodable`)
        return f"{m.group(1)} {m.group(2).rstrip(':')}"
    if (m := _DEF_NAME_RE.match(sig)) is not None:  # Ruby's `def params`, `def self.safe_load yaml`
        return f"{m.group(1)}()"
    for m in _NAME_BEFORE_PAREN_RE.finditer(sig):
        if m.group(1) not in _NOT_NAMES:
            return m.group(1).rsplit("::", 1)[-1] + "()"
    m = _NAME_BOUND_RE.search(sig)
    return f"{m.group(1)}()" if m else ""


def _top_level_names(lines: list[str], ext: str, most: int = 24) -> list[str]:
    """The names defined at a file's top level (unindented definitions), in order, the
    public ones first: click's core.py read "Defines _complete_visible_commands(),
    _check_nested_chain(), ..." before its Context and Command."""
    public: list[str] = []
    private: list[str] = []
    seen: set[str] = set()
    for ln in lines:
        if not ln[:1].strip() or ln.startswith(("}", ")")):
            continue  # indented, blank or a closing brace
        sig = _defn(ln, ext)
        if sig is None:
            continue
        name = _defined_name(sig, ext)
        if name and name not in seen:
            seen.add(name)
            # a namespace says less than what it holds (745 of 4,901 Boost and Eigen headers
            # read "Defines namespace boost, namespace asio, ..."): last, as private names
            (private if name.rsplit(" ", 1)[-1].startswith("_") or name.startswith("namespace ")
             else public).append(name)
            if len(public) >= most:
                break  # a generated file of 30,000 functions is read no further
    return (public + private)[:most]


_IMPORT_LINE_RE = re.compile(r"^\s*(?:import|from\s+\S+\s+import|#\s*include|using|package|require|"
                             r"use|extern\s+crate|library|@file:)\b")


def _first_code_lines(lines: list[str]) -> str:
    """The first lines that are neither imports, a shebang nor comments (the comments said
    nothing of the file: a licence, a build constraint), else the first comment lines; ""
    when there are none."""
    kept = [ln.strip() for i, ln in enumerate(lines[:400])
            if ln.strip() and not _IMPORT_LINE_RE.match(ln) and not (i == 0 and ln.startswith("#!"))]
    code = [ln for ln in kept if not _COMMENT_PREFIX_RE.match(ln) or _PREPROCESSOR_RE.match(ln)]
    # (comments only: no code, and no import, which `kept` leaves out)
    if not code and not any(_IMPORT_LINE_RE.match(ln) for ln in lines[:400]) \
            and _LICENSE_RE.search(" ".join(kept[:12])):
        # a file holding nothing but its licence header says so, in the header's words
        # without its comment marks (it read `/* * Licensed under ...`)
        return "Only a licence header: " + _comment_text(kept[:12])
    return " ".join((code or kept)[:3])


# --- code: overviews ------------------------------------------------------------------
# languages whose doc comment (`/**`) may stand a blank line above what it documents: 693 of
# the JDK's 3,324 files had their class's Javadoc so, and read "Defines class X"
_DOC_GAP_LANGS = frozenset({"java", "kotlin", "scala", "dart", "php", "swift"})


_MODIFIERS_LINE_RE = re.compile(r"^\s*(?:(?:public|protected|private|internal|abstract|final|static|sealed|"
                                r"non-sealed|open|strictfp|synchronized|native|default|override|data)\s*)+$")


def _doc_above(lines: list[str], i: int, ext: str = "") -> str:
    """The first line of the doc comment right above line `i` (decorators skipped). In C
    and C++ a `#` line is the preprocessor's: Boost's basic_stream.hpp read "if !", its
    `#if ! BOOST_BEAST_DOXYGEN` above `namespace boost`."""
    k = i - 1
    # decorators and attributes, a C++ template's head on a line of its own (not a one-line
    # template class, whose doc is its own), and a line of modifiers alone (the JDK's
    # `public final` above `class Character`, in 53 files, which read "Defines class X")
    gap = _EXT_LANG.get(ext) in _DOC_GAP_LANGS
    while k >= 0 and (lines[k].strip().startswith(("@", "#[")) or (
            ext in _C_EXTS and lines[k].lstrip().startswith("template") and not _drop_template(lines[k].strip()))
            or (gap and _MODIFIERS_LINE_RE.match(lines[k]))):
        k -= 1
    block: list[str] = []
    marks = ("//", "/*", "*", "--") if ext in _C_EXTS else ("//", "/*", "*", "#", "--")
    end = k
    while end >= 0 and not lines[end].strip() and k - end < 2 and (ext in _C_EXTS or _EXT_LANG.get(ext) in _DOC_GAP_LANGS):
        end -= 1  # one blank line may stand between a doc comment (`/**`) and what it documents
    closing = lines[end].rstrip()[-2:] if end >= 0 else ""
    if closing == "*)" and lines[end].lstrip().startswith("(**"):
        return _doc_text([lines[end]], ext)  # OCaml's doc comment on one line
    opens = "(*" if closing == "*)" else "/*"
    if closing in ("*/", "*)") and opens not in lines[end]:
        # a doc comment (`/**`, `/*!`, OCaml's `(**`; not a `/*****` banner) is read whole,
        # up to its opening: the lines of an example in it (Eigen's `\code` blocks) have no
        # `*` before them, and its end alone was read. Not a licence, nor code commented out
        top = next((j for j in range(end - 1, max(-1, end - 200), -1) if opens in lines[j]), None)
        head = lines[top].lstrip() if top is not None else ""
        if head.startswith(("/**", "/*!", "(**")) and not head.startswith(("/***", "(***")):
            doc = _doc_text(lines[top:end + 1], ext)
            return "" if _LICENSE_RE.search(doc) else doc
        if end != k:
            return ""
    while k >= 0:
        s = lines[k].strip()
        if s.startswith(marks) and not s.startswith(("#[", "#include", "#define")):
            block.append(lines[k])
            if s.startswith("/*"):
                break
            k -= 1
        else:
            break
    if not block:
        return ""
    return _doc_text(block[::-1], ext)


def _doc_text(block: list[str], ext: str) -> str:
    text = _comment_text(block)
    return _first_sentence((_DOXYGEN_RE.sub("", text) if ext in _C_EXTS else text).strip(), 160)


# Doxygen's commands in C and C++ that name or file what they document (`\ingroup
# LU_Module \class FullPivLU \brief LU decomposition...`): the words after them are the doc
_DOXYGEN_RE = re.compile(r"(?<![\w.])[\\@](?:(?:ingroup|class|struct|union|file|defgroup|addtogroup|namespace|"
                         r"headerfile|nosubgrouping)\b[ \t]*[\w:<>.]*|brief\b|details\b)\s*")


# from the first space of a run only: one that fails there fails inside the run too, and
# tried from each space of a long run the search was quadratic
_SIG_TAIL_RE = re.compile(r"(?<!\s)\s*(?:\{.*|:\s*$|=>\s*\{?\s*$|;\s*$)")
_CTRL = r"(?:if|for|while|switch|catch|return|else|do|case|new|throw|sizeof|elif|with|await)\b"

_JS_PATTERNS = [
    re.compile(r"^\s*(?:export\s+)?(?:default\s+)?(?:declare\s+)?(?:async\s+)?function\s*\*?\s*[\w$]+\s*"
               r"(?:<[^>]*>)?\s*\("),
    re.compile(r"^\s*(?:export\s+)?(?:default\s+)?(?:declare\s+)?(?:abstract\s+)?class\s+[\w$]+"),
    re.compile(r"^\s*(?:export\s+)?(?:declare\s+)?interface\s+[\w$]+"),
    re.compile(r"^\s*(?:export\s+)?(?:declare\s+)?type\s+[\w$]+\s*(?:<[^>]*>)?\s*="),
    re.compile(r"^\s*(?:export\s+)?(?:declare\s+)?(?:const\s+)?enum\s+[\w$]+"),
    re.compile(r"^\s*(?:export\s+)?(?:const|let|var)\s+[\w$]+\s*(?::[^=]+)?=\s*(?:async\s+)?"
               r"(?:\([^)]*\)|[\w$]+)\s*(?::\s*[^=]+)?=>"),
    # CommonJS and ES5, most of npm: `Layer.prototype.match = function match(path) {`,
    # `app.use = function (fn) {`, `var parse = function (str) {`, `module.exports = class
    # Router {`, `exports.json = (body) => {`
    re.compile(r"^\s*(?:(?:export\s+)?(?:const|let|var)\s+)?[\w$]+(?:\.[\w$]+)*\s*=\s*(?:async\s+)?"
               r"(?:function\b|class\b)"),
    re.compile(r"^\s*[\w$]+(?:\.[\w$]+)+\s*=\s*(?:async\s+)?(?:\([^)]*\)|[\w$]+)\s*=>"),
]
_JS_METHOD_RE = re.compile(
    r"^\s+(?:(?:public|private|protected|static|async|readonly|override|abstract|get|set)\s+)*"
    r"(?!" + _CTRL + r")[\w$#]+\s*(?:<[^>]*>)?\s*\([^)]*\)\s*(?::\s*[^{;]+)?\s*\{\s*$")
_GO_PATTERNS = [
    re.compile(r"^func\s+(?:\([^)]*\)\s*)?\w+"),
    re.compile(r"^type\s+\w+(?:\[[^\]]*\])?\s+(?:struct|interface)\b"),
    re.compile(r"^type\s+\w+\s+\w"),
]
_RUST_PATTERNS = [
    re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:const\s+)?(?:async\s+)?(?:unsafe\s+)?"
               r"(?:extern\s+\"[^\"]*\"\s+)?fn\s+\w+"),
    re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:struct|enum|union|trait|type)\s+\w+"),
    re.compile(r"^\s*(?:unsafe\s+)?impl\b"),
    re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+\w+\s*\{"),
]
_JAVA_PATTERNS = [
    re.compile(r"^(?:open\s+)?module\s+[\w.]+\s*\{"),  # module-info.java
    re.compile(r"^\s*(?:(?:public|private|protected|abstract|final|static|sealed|non-sealed|"
               r"strictfp|partial|internal)\s+)*(?:class|interface|enum|record|@interface)\s+\w+"),
    re.compile(r"^\s+(?:(?:public|private|protected|static|final|abstract|synchronized|native|"
               r"default|override|virtual|async|internal)\s+)+(?:<[^>]+>\s+)?"
               r"(?:[\w<>\[\],.?]+(?:\s*\[\])*\s+)?\w+\s*\([^;]*$"),
]
# Java and its kin (C#, Groovy, Dart) write a method as a type, its name and its parameters,
# with or without modifiers (a package-private `void helper(int x) {`), and an interface's
# or an abstract class's method as its declaration alone (`int size();`, `void run();`):
# the only definition it has. No statement reads `Type name(...)`: a control word before a
# call (`else if (`, `return f(`, `throw new X(`) is not a type.
_TYPED_METHOD_RE = re.compile(
    r"^(?=[^(]*\()\s*(?=[A-Za-z_@<])(?:@\w+(?:\([^)]*\))?\s+)*(?:(?:public|private|protected|static|final|abstract|"
    r"synchronized|native|default|override|virtual|async|internal|sealed|extern|unsafe|new|external|factory)\s+)*"
    r"(?:<[^<>]+(?:<[^<>]*>[^<>]*)*>\s+)?"
    r"(?!(?:" + _CTRL[3:-3] + r"|yield|assert|goto|lock|using|foreach|fixed|checked|unchecked|await|"
    r"var|val|let|const|import|package|throws|println|print|"
    r"where|select|from|orderby|group|join|into|on|equals|by|ascending|descending)\b)"  # (C#'s LINQ)
    r"[A-Za-z_][\w.]*(?:<[^()]*>)?(?:\[\])*\??\s+(?!(?:" + _CTRL[3:-3] + r"|instanceof)\b)[A-Za-z_]\w*\s*"
    r"\((?:[^;]*$|[^;{}=]*\)\s*(?:throws\s+[\w.,\s<>]+)?;\s*$)")
_KOTLIN_PATTERNS = [
    re.compile(r"^\s*(?:@[\w.:]+(?:\([^)]*\))?\s+)*(?:(?:public|private|protected|internal|open|abstract|final|"
               r"sealed|data|inline|value|enum|annotation|override|suspend|operator|infix|tailrec|external|"
               r"inner|companion|actual|expect|const|fun)\s+)*"
               r"(?:class|interface|object|typealias)\s+[A-Za-z_`]|"
               r"^\s*(?:(?:public|private|protected|internal)\s+)?constructor\s*\("),
    re.compile(r"^\s*(?:@[\w.:]+(?:\([^)]*\))?\s+)*(?:(?:public|private|protected|internal|open|abstract|final|"
               r"inline|override|suspend|operator|infix|tailrec|external|actual|expect)\s+)*"
               r"fun\s+(?:<[^>]*>\s*)?[\w`.<>?,\s]*?[\w`]+\s*\("),
]
_SWIFT_PATTERNS = [
    re.compile(r"^\s*(?:@\w+(?:\([^)]*\))?\s+)*(?:(?:public|private|fileprivate|internal|open|final|static|class|"
               r"override|mutating|nonmutating|convenience|required|indirect|dynamic|nonisolated|"
               r"(?:private|fileprivate|internal|public)\(set\))\s+)*"
               r"(?:func\s+[^\s(<]+|(?:class|struct|enum|protocol|extension|actor|typealias)\s+[A-Za-z_`]|"
               r"init[?!]?\s*[(<]|subscript\s*[(<])"),
]
_SCALA_PATTERNS = [
    re.compile(r"^\s*(?:@\w+(?:\([^)]*\))?\s+)*(?:(?:private|protected)(?:\[\w+\])?\s+|(?:final|sealed|abstract|"
               r"implicit|override|case|lazy|inline|opaque|transparent|open|infix)\s+)*"
               r"(?:def|class|object|trait|enum|type|given|extension)\b\s*[\w`(\[]"),
]
_DART_PATTERNS = [
    re.compile(r"^\s*(?:(?:abstract|sealed|base|interface|final|mixin)\s+)*"
               r"(?:class|mixin|extension|enum|typedef)\s+[A-Za-z_]"),
    _TYPED_METHOD_RE,
]
_PHP_PATTERNS = [
    re.compile(r"^\s*(?:(?:public|private|protected|static|final|abstract|readonly)\s+)*"
               r"(?:function\s+&?[A-Za-z_]|(?:class|interface|trait|enum)\s+[A-Za-z_])"),
]
_C_PATTERNS = [
    # (a body on the line may end in `;`: `enum class format_t { json, cbor };`)
    re.compile(r"^(?:typedef\s+)?(?:struct|class|union|enum)\s+\w+(?:[^;]*$|[^;{]*\{)"),
    re.compile(r"^(?!" + _CTRL + r"|#|typedef\b|return\b)[A-Za-z_][\w\s\*&:<>,~]*?[\w~>\*&]\s*"
               r"\b[\w:~]+\s*\([^;]*$"),
    re.compile(r"^(?:namespace)\s+\w+"),
]
# a C function whose body is on its line: `inline int twice(int x) { return 2 * x; }`
# (tried only on lines holding a `{`)
_C_BODY_RE = re.compile(r"^(?!" + _CTRL + r"|#|typedef\b|return\b)[A-Za-z_][\w\s\*&:<>,~]*?[\w~>\*&]\s*"
                        r"\b[\w:~]+\s*\([^;{}]*\)[\w\s]*\{.*\}\s*;?\s*$")
_GENERIC_PATTERNS = [
    re.compile(r"^\s*(?:export\s+|public\s+|private\s+|protected\s+|local\s+)*(?:def|class|function|func|fn|"
               r"sub|proc|module|defmodule|defp?|interface|trait|struct)\s+[\w.:$!?]+"),
    # Ruby's operators: `def ==(other)`, `def <=>(other)`, `def [](key)`, `def self.[](*args)`
    re.compile(r"^\s*(?:(?:public|private|protected)\s+)?def\s+(?:self\.)?[-+*/%<>=!~^&|\[\]@`]+"),
]

# Languages a review of a polyglot repository found unread: a definition that follows a
# comment was left out of the outline, and no identifier they define was a definer's.
_SQL_PATTERNS = [
    re.compile(r"^\s*create\s+(?:or\s+replace\s+)?(?:(?:global\s+|local\s+)?temp(?:orary)?\s+|unique\s+|"
               r"materialized\s+|unlogged\s+)*(?:table|view|index|function|procedure|trigger|type|schema|"
               r"sequence|domain|extension)\b", re.IGNORECASE),
    re.compile(r"^\s*alter\s+table\b", re.IGNORECASE),
]
_PROTO_PATTERNS = [re.compile(r"^\s*(?:message|service|enum|rpc|extend)\s+[A-Za-z_]")]
_GRAPHQL_PATTERNS = [re.compile(r"^\s*(?:extend\s+)?(?:type|input|interface|enum|union|scalar|schema|directive)\b")]
_HASKELL_PATTERNS = [
    re.compile(r"^(?:data|newtype|type(?:\s+family)?|class|instance)\s+"),
    re.compile(r"^[a-z_][\w']*\s*::"),  # a top-level type signature
    re.compile(r"^module\s+[A-Z]"),
]
_OCAML_PATTERNS = [
    re.compile(r"^(?:let|and)\s+(?:rec\s+)?(?!_\b)[a-z_][\w']*"),  # (`let _ = ...` runs code, names nothing)
    re.compile(r"^\s*(?:type|exception|module|class|val|external)\s+(?:type\s+|rec\s+)?[\w'(]"),
]
_ELIXIR_PATTERNS = [re.compile(r"^\s*(?:defmodule|defprotocol|defimpl|defstruct|defexception|defdelegate|"
                               r"defmacrop?|defguardp?|defp?)\b")]
_R_PATTERNS = [re.compile(r"^\s*[\w.]+\s*(?:<<?-|=)\s*function\b")]
_JULIA_PATTERNS = [
    re.compile(r"^\s*(?:function|macro|module|baremodule|(?:mutable\s+)?struct|abstract\s+type|primitive\s+type)\s+"),
    re.compile(r"^[\w.!]+(?:\{[^}]*\})?\([^)]*\)\s*=[^=]"),  # `f(x) = 2x`
]
_LUA_PATTERNS = [
    re.compile(r"^\s*(?:local\s+)?function\s+[\w.:]+"),
    re.compile(r"^\s*(?:local\s+)?[\w.:]+\s*=\s*function\b"),
]
_HCL_PATTERNS = [re.compile(r"^(?:resource|data|module|variable|output|provider|locals|terraform)\b")]
_ZIG_PATTERNS = [re.compile(r"^\s*(?:pub\s+)?(?:export\s+|extern\s+|inline\s+)*(?:fn\s+\w|const\s+\w+\s*=\s*"
                            r"(?:struct|enum|union|opaque)\b)")]

_EXT_LANG = {
    ".js": "js", ".jsx": "js", ".mjs": "js", ".cjs": "js", ".ts": "js", ".tsx": "js",
    ".mts": "js", ".cts": "js", ".vue": "js", ".svelte": "js",
    ".go": "go", ".rs": "rust",
    ".java": "java", ".cs": "java", ".groovy": "java", ".kt": "kotlin", ".kts": "kotlin",
    ".scala": "scala", ".swift": "swift", ".dart": "dart",
    ".php": "php", ".phtml": "php", ".php3": "php", ".php4": "php", ".php5": "php",
    ".c": "c", ".h": "c", ".cc": "c", ".cpp": "c", ".cxx": "c", ".c++": "c", ".hh": "c",
    ".hpp": "c", ".hxx": "c", ".h++": "c", ".m": "c", ".mm": "c", ".cu": "c", ".ino": "c",
    ".ipp": "c", ".tpp": "c", ".inl": "c", ".ixx": "c", ".cppm": "c",  # C++'s inline and module files
    ".sql": "sql", ".psql": "sql", ".proto": "proto", ".graphql": "graphql", ".graphqls": "graphql", ".gql": "graphql",
    ".hs": "haskell", ".ml": "ocaml", ".mli": "ocaml", ".ex": "elixir", ".exs": "elixir", ".r": "r",
    ".jl": "julia", ".lua": "lua", ".tf": "hcl", ".hcl": "hcl", ".tfvars": "hcl", ".zig": "zig",
}
# C and its kin (C++, Objective-C, CUDA): a `#` line is the preprocessor's, names follow macros
_C_EXTS = frozenset(e for e, lang in _EXT_LANG.items() if lang == "c")
_LANG_PATTERNS = {"js": _JS_PATTERNS, "go": _GO_PATTERNS, "rust": _RUST_PATTERNS,
                  "java": [*_JAVA_PATTERNS, _TYPED_METHOD_RE], "c": _C_PATTERNS, "kotlin": _KOTLIN_PATTERNS,
                  "swift": _SWIFT_PATTERNS, "scala": _SCALA_PATTERNS, "dart": _DART_PATTERNS, "php": _PHP_PATTERNS,
                  "sql": _SQL_PATTERNS, "proto": _PROTO_PATTERNS, "graphql": _GRAPHQL_PATTERNS,
                  "haskell": _HASKELL_PATTERNS, "ocaml": _OCAML_PATTERNS, "elixir": _ELIXIR_PATTERNS,
                  "r": _R_PATTERNS, "julia": _JULIA_PATTERNS, "lua": _LUA_PATTERNS, "hcl": _HCL_PATTERNS,
                  "zig": _ZIG_PATTERNS}


# Languages whose every pattern is anchored at column 0, by what their first character
# must be (C: a letter or `_`; Go: `func` or `type`).
_COLUMN_0 = {"c": lambda ch: ch == "_" or ("A" <= ch <= "Z") or ("a" <= ch <= "z"),
             "go": lambda ch: ch in ("f", "t")}


# What ends a signature where `_SIG_TAIL_RE` would read it wrong: `{` opens an Elixir map and
# `do` its body; SQL opens its columns with `(`; OCaml's and Julia's `=` begins the body.
_TAILS = {"elixir": re.compile(r"\s*(?:,\s*do:.*|\s+do\s*)$"),
          "sql": re.compile(r"\s*(?:\(.*|\bas\b.*|;)$", re.IGNORECASE),
          "ocaml": re.compile(r"\s+=(?![=>]).*$|\s+(?:struct|sig|object)\s*$"),
          "julia": re.compile(r"(?<=\))\s*=(?!=).*$"), "haskell": re.compile(r"\s+where\s*$")}


SIG_MAX_CHARS = 1000


def _defn(line: str, ext: str) -> str | None:
    """The signature on `line` when it starts a definition in the language of `ext`."""
    lang = _EXT_LANG.get(ext)
    line = line[:SIG_MAX_CHARS]  # a signature is short: what follows says nothing more
    if ext in (".py", ".pyi", ".pyw"):
        m = re.match(r"^\s*(?:async\s+def|def|class)\s+\w+", line)
        return line.strip().rstrip(":") if m else None
    if lang in _COLUMN_0 and not _COLUMN_0[lang](line[:1]):
        return None  # an indented line (most of a C file): no pattern of the language can match
    pats = _LANG_PATTERNS.get(lang, _GENERIC_PATTERNS) if lang else _GENERIC_PATTERNS
    # a C++ template's head is read past: Eigen's `template<typename Derived> class
    # MatrixBase` was no definition, so 18 of 26 core headers' outlines missed their class
    probe = _drop_template(line) if lang == "c" and line.startswith("template") else line
    for p in pats:
        if p.match(line) or (probe is not line and p.match(probe)):
            if lang in _TAILS:
                return _TAILS[lang].sub("", line.strip()) or line.strip()
            sig = _SIG_TAIL_RE.sub("", line.strip()) or line.strip()
            return _before_expression_body(sig) if lang in ("kotlin", "scala") else sig
    if lang == "js" and _JS_METHOD_RE.match(line):
        return _SIG_TAIL_RE.sub("", line.strip())
    if lang == "c" and "{" in line and _C_BODY_RE.match(probe):
        return _SIG_TAIL_RE.sub("", line.strip()) or line.strip()
    return None


def _before_expression_body(sig: str) -> str:
    """A Kotlin or Scala signature without the body a single expression gives it: `def
    add(a: Int, b: Int): Int = a + b` -> `def add(a: Int, b: Int): Int`. The `=` is the
    first outside brackets (a parameter's default value is inside them)."""
    depth = 0
    for i, ch in enumerate(sig):
        if ch in "([<":
            depth += 1
        elif ch in ")]>" and depth and sig[i - 1:i + 1] != "->":  # (a function type's arrow)
            depth -= 1
        elif ch == "=" and depth == 0 and sig[i + 1:i + 2] not in ("=", ">") and sig[i - 1:i] not in ("!", "=", "<", ">"):
            return sig[:i].rstrip() or sig
    return sig


def defines(text: str, path: str, name: str) -> int | None:
    """The offset of the line of `text` that defines `name` (a function, method, class or
    type by the outline's own rules, `_defn`; or a name bound at the top level: `var`,
    `const`, `let`, `#define`, a module constant), or None. Case-sensitive and whole-word:
    `ov search` ranks a file defining the identifier asked for above those that only use it
    (ov.engine `_definers`)."""
    ext = os.path.splitext(path)[1].lower()
    word = re.compile(r"(?<![\w$]){}(?![\w$])".format(re.escape(name)))
    bound = re.compile(r"^(?:(?:export\s+)?(?:var|const|let|val)\s+{n}\b|#\s*define\s+{n}\b|{n}\s*(?::[^=\n]*)?=(?![=>]))"
                       .format(n=re.escape(name)))
    seen = -1
    for m in word.finditer(text):
        start = text.rfind("\n", 0, m.start()) + 1
        if start == seen:
            continue
        seen = start
        end = text.find("\n", m.end())
        line = text[start:end if end >= 0 else len(text)].rstrip("\r")
        if (lang := _EXT_LANG.get(ext)) in _LANG_BLOCKS and _in_block_comment(text, start, lang):
            continue
        if bound.match(line) or _defines_by_language(text, start, line, ext, name):
            return start
        sig = _defn(line, ext)
        if sig is not None and name in _names_defined(sig, ext):
            return start
    return None


def _in_block_comment(text: str, at: int, lang: str) -> bool:
    """Whether offset `at` of `text` lies inside a block comment of `lang` (`_LANG_BLOCKS`):
    commented-out code (`{- data Legacy ... -}`) had made a Haskell file a definer."""
    opens, ends = _LANG_BLOCKS[lang]
    return text.rfind(opens, 0, at) > text.rfind(ends, 0, at)


# a Go block whose indented names are definitions: `var (`, `const (`, `type (`, and a
# struct's fields or an interface's methods (`Server.ReadTimeout`, `Handler.ServeHTTP`)
_GO_BLOCK_RE = re.compile(r"^(?:(?:var|const|type)\s*\(|type\s+\w+(?:\[[^\]]*\])?\s+(?:struct|interface)\s*\{)\s*$")


def _defines_by_language(text: str, start: int, line: str, ext: str, name: str) -> bool:
    """What `_defn`'s outline does not read as a definition: a Go name in a `var (`,
    `const (` or `type (` block (`time.Second`, `http.StatusOK`), a struct's field or an
    interface's method (`Server.ReadTimeout`, `Handler.ServeHTTP`), or a generic function
    (`func Map[T any](`), a name a CommonJS module exports (`exports.static = ...`,
    `module.exports.json = ...`), and a C function whose name starts its line (the kernel's
    `unsigned long\ncopy_from_user(...)`)."""
    if ext == ".go":
        if re.match(r"^func\s+(?:\([^)]*\)\s*)?%s\s*\[" % re.escape(name), line):
            return True
        if re.match(r"^\t%s\b(?:\s*=|\s+(?:struct|interface)\b|\s+[^\s=]+(?:\s*=|\s*(?://.*|`.*)?$)|\s*(?://.*)?$|\()"
                    % re.escape(name), line):
            top = start
            while top > 0:  # the nearest line above at the left margin opens the block
                top = text.rfind("\n", 0, top - 1) + 1
                if text[top:top + 1] not in ("\t", " ", "\n", "/", ""):
                    return bool(_GO_BLOCK_RE.match(text[top:text.find("\n", top)]))
            # the passage begins inside the block (net/http's Server struct spans passages):
            # `\tName Type` is a field (no statement of a body reads so); an assignment
            # (`\ttimeout = 30 * time.Second`) or a call, `\tName(...)`, may be a body's
            return re.match(r"^\t%s\s+[^\s=(:][^=(]*$" % re.escape(name), line.split("//", 1)[0].rstrip()) is not None
        return False
    if _EXT_LANG.get(ext) == "js":  # CommonJS's exports: `exports.static = require('serve-static');`
        return re.match(r"^\s*(?:module\.)?exports\.%s\s*=(?!=)" % re.escape(name), line) is not None
    return ext in _C_EXTS and re.match(r"^%s\s*\([^;]*$" % re.escape(name), line) is not None


_FIRST_CALL_RE = re.compile(r"^[^(=]*?(?<![\w$])([\w$]+)\s*(?:<[^>()]*>)?\s*\(")


def _called_first(sig: str) -> str:
    """The name before a signature's first `(`: a C function's, which `_defined_name`
    reads as its return type's (`static struct page *alloc_pages(...)`: struct page)."""
    m = _FIRST_CALL_RE.match(sig)
    return m.group(1) if m else ""


_CALLED_RE = re.compile(r"(?<![\w$])([A-Za-z_]\w*)\s*\($")


def _names_defined(sig: str, ext: str) -> tuple[str, ...]:
    """The names a definition's signature line may define (`defines`): the outline's, and
    the name before the first `(`; in C a function's is `_c_function`'s alone."""
    named = _defined_name(sig, ext)
    if ext in _C_EXTS:
        own = _c_function(sig)  # (`struct page *alloc_pages(...)` reads as `struct page` too)
        return (own,) if named.endswith("()") or not named else (_bare_name(named), own)
    return _bare_name(named), _called_first(sig)


def _c_function(sig: str) -> str:
    """The function a C signature defines: of the names before a `(` outside every
    parenthesis, the last not spelt as the kernel's attribute macros are (`__alloc_size(1)`
    before the return type, `__releases(x)` after the parameters), else the last. The name
    before the first `(` (`_called_first`) was `__alloc_size` in `static __always_inline
    __alloc_size(1) void *kmalloc_node(size_t size, ...)`."""
    depth, names = 0, []
    for i, ch in enumerate(sig):
        if ch == "(":
            if depth == 0:
                m = _CALLED_RE.search(sig[max(0, i - 120):i + 1])
                if m is not None:
                    names.append(m.group(1))
            depth += 1
        elif ch == ")":
            depth = max(0, depth - 1)
    own = [n for n in names if not n.startswith("__")]
    return (own or names or [""])[-1]


def _bare_name(defined: str) -> str:
    """`class Store` -> Store, `open_store()` -> open_store, `Reader::read()` -> read."""
    last = defined.removesuffix("()").rsplit(" ", 1)[-1]
    return re.split(r"::|\.", last)[-1]


# The lines of a column-0 language (`_COLUMN_0`) the outline must read: those that may
# start a definition (found by the newline before them, which the regex engine skips to
# at C speed), and those that may open or close a block comment. In the kernel's fs/ they
# are 16 % of the C lines.
_COLUMN_0_STARTS = {"c": re.compile(r"\n[A-Za-z_]"), "go": re.compile(r"\n[ft]")}


def _outline_lines(text: str, n: int, ext: str):
    """The indexes of the lines `_regex_outline` must read: in a column-0 language, only
    the lines that can change what it finds (any other line is inside or outside a block
    comment as the one before it, and starts no definition); else all `n`."""
    rx = _COLUMN_0_STARTS.get(_EXT_LANG.get(ext, ""))
    if rx is None:
        return range(n)
    text = "\n" + text  # offsets below are those of the line's first character
    where = [m.start() + 1 for m in rx.finditer(text)]
    for mark in ("/*", "*/"):
        k = text.find(mark)
        while k >= 0:
            where.append(k)
            k = text.find(mark, k + 2)
    out, line, pos = [], -1, 0
    for at in sorted(where):
        line += text.count("\n", pos, at)
        pos = at
        if not out or out[-1] != line:
            out.append(line)
    return out


# A C function whose return type stands on the line above its name (GNU and BSD style:
# `int\nfoo_bar(int x)\n{`): the name line starts at the margin with `name(` and no `;`,
# the line above holds only the type's words and stars.
_C_NAME_LINE_RE = re.compile(r"^[A-Za-z_]\w*\s*\([^;]*$")
_C_TYPE_LINE_RE = re.compile(r"^(?!(?:return|else|goto|case|do|if|while|for|switch|sizeof)\b)"
                             r"[A-Za-z_][\w]*(?:[ \t\*]+[A-Za-z_]\w*)*[ \t\*]*$")


def _c_split_defn(above: str, line: str, ext: str) -> str | None:
    """The signature of a C function split after its return type (above), else None."""
    if not _C_NAME_LINE_RE.match(line) or not _C_TYPE_LINE_RE.match(above.rstrip("\r")):
        return None
    return _defn(f"{above.strip()} {line}", ext)


def _regex_outline(text: str, ext: str) -> list[str]:
    lines = text.split("\n")
    if "\r" in text:
        lines = [ln.rstrip("\r") for ln in lines]
    out: list[str] = []
    base: int | None = None
    in_block_comment = False
    opens, ends = _LANG_BLOCKS.get(_EXT_LANG.get(ext, ""), ("/*", "*/"))
    last = -1  # the line of the last entry
    for i in _outline_lines(text, len(lines), ext):
        ln = lines[i]
        s = ln.strip()
        if in_block_comment:
            in_block_comment = ends not in s
            continue
        if s.startswith(opens) and ends not in s[len(opens):]:
            in_block_comment = True
            continue
        if not s or s.startswith(("//", "*", "#" if ext not in (".py",) else "\0")):
            continue
        sig = _defn(ln, ext)
        if sig is None and ext in _C_EXTS and i > 0:
            sig = _c_split_defn(lines[i - 1], ln, ext)
            if sig is not None and out and last == i - 1:  # the type line alone read as one
                out.pop()
        if sig is None:
            continue
        indent = len(ln) - len(ln.lstrip(" \t"))
        if base is None:
            base = indent
        depth = 1 if indent > base else 0
        entry = "  " * depth + sig
        doc = _doc_above(lines, i, ext)
        if not doc and ext in (".py", ".pyi", ".pyw"):
            doc = _py_doc_below(lines, i)
        if doc:
            entry += " — " + doc
        out.append(entry)
        last = i
    return out


def _py_doc_below(lines: list[str], i: int) -> str:
    for ln in lines[i + 1:i + 4]:
        m = re.match(r'^\s*[rRuU]?("""|\'\'\'|"|\')(.*)', ln)
        if m:
            return _first_sentence(m.group(2).split(m.group(1))[0], 160)
        if ln.strip() and not ln.rstrip().endswith((",", "(", ")", ":")):
            break
    return ""


def _py_signature(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> str:
    if isinstance(node, ast.ClassDef):
        bases = [ast.unparse(b) for b in node.bases] + [ast.unparse(k) for k in node.keywords]
        return f"class {node.name}" + (f"({', '.join(bases)})" if bases else "")
    prefix = "async def" if isinstance(node, ast.AsyncFunctionDef) else "def"
    sig = f"{prefix} {node.name}({ast.unparse(node.args)})"
    if node.returns is not None:
        sig += f" -> {ast.unparse(node.returns)}"
    return sig


def _py_outline(text: str) -> list[str] | None:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    out: list[str] = []

    def visit(body: list[ast.stmt], depth: int) -> None:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                entry = "  " * depth + _py_signature(node)
                doc = ast.get_docstring(node, clean=True)
                if doc:
                    entry += " — " + _first_sentence(doc.strip().split("\n\n")[0], 160)
                out.append(entry)
                if isinstance(node, ast.ClassDef) and depth == 0:
                    visit(node.body, depth + 1)

    visit(tree.body, 0)
    return out


# --- Jupyter notebooks ----------------------------------------------------------------
@functools.lru_cache(maxsize=2)
def notebook_text(text: str) -> str | None:
    """A notebook's cells as markdown: its markdown cells as they are, its code cells in
    fences, no outputs and no metadata. None when `text` is not a notebook's JSON. A
    notebook's tiers come from this: its raw JSON opened every abstract with
    `{ "cells": [ { "cell_type": "markdown", …`. Remembered for the last texts: the
    abstract, the outline and the title each ask for it, and a notebook's JSON can be
    megabytes of outputs."""
    try:
        cells = json.loads(text).get("cells")
    except (ValueError, AttributeError, RecursionError):  # (a cloned tree's file may nest 1,500 deep)
        return None
    if not isinstance(cells, list):
        return None
    out = []
    for cell in cells:
        if not isinstance(cell, dict):
            continue
        src = cell.get("source")
        src = "".join(x for x in src if isinstance(x, str)) if isinstance(src, list) else (
            src if isinstance(src, str) else "")
        if not src.strip():
            continue
        out.append(src.strip("\n") if cell.get("cell_type") == "markdown" else f"```\n{src.strip(chr(10))}\n```")
    return "\n\n".join(out) + "\n"


def _as_notebook(text: str, path: str) -> tuple[str, str, bool]:
    """(text, path, fenced) that the tiers read: a notebook's cells as a markdown document
    (its code cells fenced, `notebook_text`); any other file as it is."""
    if is_notebook(path) and (view := notebook_text(text)) is not None and view.strip():
        return view, os.path.splitext(path)[0] + ".md", True
    return text, path, False


# --- the tiers ------------------------------------------------------------------------
def abstract(text: str, path: str) -> str:
    """L0: about 256 characters that say what the file is; "" only for a blank text."""
    if not text.strip():
        return ""
    text, path, fences = _as_notebook(text, path)
    kind = kind_of(path)
    found = ""
    if kind in ("markdown", "rst", "text") or text.lstrip("\ufeff").startswith("---"):
        fm = front_matter(text)
        for key in ("description", "summary", "abstract"):
            if isinstance(fm.get(key), str) and fm[key].strip():
                found = fm[key]
                break
    if not found and kind == "markdown":
        found = _markdown_abstract(text)
    if not found and kind == "rst":
        found = _rst_abstract(text)
    if not found and kind == "code":
        found = _code_abstract(text, path)
    if not found and kind == "text":
        fm = front_matter_block(text)
        body = text[fm[1]:] if fm else text
        paras = [p for p in re.split(r"\n\s*\n", body) if p.strip()]
        found = paras[0] if paras else ""
    if not found or not found.strip():
        found = _first_lines(unfenced(text) if fences else text)
    return clip(found, ABSTRACT_CHARS)


def overview(text: str, path: str) -> str:
    """L1: the file's outline, at most about 4,000 characters cut at a line boundary."""
    if not text.strip():
        return ""
    text, path, fences = _as_notebook(text, path)
    kind = kind_of(path)
    ext = os.path.splitext(path)[1].lower()
    lines: list[str] | None = None
    if kind in ("markdown", "rst"):
        out = _markdown_overview(text) if kind == "markdown" else _rst_overview(text)
        if out:
            return out
    elif kind == "code":
        if ext in (".py", ".pyi", ".pyw") and len(text) <= AST_MAX_CHARS:
            lines = _py_outline(text)
        if lines is None:
            lines = _regex_outline(text, ext)
        if lines:
            return _cap_lines(lines)
    if ext == ".json" and (keys := _json_keys(text)):
        return _cap_lines(keys)
    if ext in _YAML_EXTS and (keys := _yaml_outline(text)):
        return _cap_lines(keys)
    return _cap_lines(_paragraph_first_lines(unfenced(text) if fences else text, wordy=kind == "code" and ext != ".json"))


_JSON_KEY_RE = re.compile(r'^([ \t]*(?:\{[ \t]*)?)"(?:[^"\\]|\\.)*"\s*:')  # (`{ "a": 1,` opens the object)


def _json_keys(text: str) -> list[str]:
    """A JSON file's outline: the lines of its top-level keys as written (`"name":
    "express",`, `"dependencies": {`, an opened value's bracket and a comma aside), when it
    is written a key a line; else [] (one line, or an array of records: the paragraphs'
    rule). Its first line, `{`, had been the whole overview of every JSON file (a review of
    a JS tree)."""
    if not text.lstrip().startswith("{") or "\n" not in text.strip():
        return []
    found = [(len(m.group(1)), ln) for ln in text.split("\n") if (m := _JSON_KEY_RE.match(ln))]
    if not found:
        return []
    top = min(depth for depth, _ in found)
    return [clip(ln.strip().removeprefix("{").strip().rstrip(",").removesuffix("{").removesuffix("[").rstrip(), 160)
            for depth, ln in found if depth == top]


_YAML_ITEM_NAME_RE = re.compile(r"^\s*-\s+name\s*:")


def _yaml_outline(text: str) -> list[str]:
    """A YAML file's outline: its top-level lines (keys, list items, comments), a
    manifest's `metadata` name, and every list item's `- name:` at any depth (an Ansible
    play's tasks, a manifest's containers). Each paragraph's first line had dropped an
    Ansible file's first task below a comment, and a manifest without blank lines read
    `apiVersion: apps/v1` alone."""
    out = []
    meta = False
    for ln in text.split("\n"):
        s = ln.strip()
        if not s or s in ("---", "..."):
            continue
        if ln[0] not in " \t":
            meta = s.startswith("metadata:")
            out.append(clip(s, 160))
        elif _YAML_ITEM_NAME_RE.match(ln) or (meta and _YAML_META_RE.match(ln) and len(ln) - len(ln.lstrip()) <= 4):
            out.append(clip(ln.rstrip(), 160))
    return out


def unfenced(text: str) -> str:
    """A notebook's cells (`notebook_text`) without the fence lines around its code."""
    return "\n".join(ln for ln in text.split("\n") if not ln.startswith("```"))


_RST_UNDER_RE = re.compile(r"^([=\-~^\"'`#*+:.])\1{2,}\s*$")
_RST_FIELD_RE = re.compile(r"^:[^:\s][^:]*:(?:\s|$)")  # `:Author: ...` (docinfo, field lists)
_RST_ROLE_RE = re.compile(r":[\w.+-]+:`([^`<]*?)\s*(?:<[^`>]*>)?`")  # :ref:`text <label>`
_RST_REF_RE = re.compile(r"`([^`<]+?)\s*(?:<[^`>]*>)?`__?")  # `text <url>`_
_RST_LITERAL_RE = re.compile(r"``([^`]+)``")
_RST_STRONG_RE = re.compile(r"\*\*([^*]+)\*\*|(?<![\w*])\*([^*\s][^*]*)\*")


def _rst_inline(s: str) -> str:
    """reStructuredText inline markup reduced to its text."""
    s = _RST_ROLE_RE.sub(lambda m: m.group(1), s)
    s = _RST_LITERAL_RE.sub(lambda m: m.group(1), s)
    s = _RST_REF_RE.sub(lambda m: m.group(1), s)
    s = _RST_STRONG_RE.sub(lambda m: m.group(1) or m.group(2), s)
    return s.replace("\\ ", "")


def _rst_blocks(text: str) -> list[tuple[str, int, str]]:
    """("heading", level, title) and ("para", 0, joined text) in order, as
    `_markdown_blocks` reads markdown. Left out: explicit markup (`.. _label:`,
    `.. SPDX-License-Identifier: ...`, `.. include::`, any directive or comment, with
    its indented body), field lists (`:Author:`), adornment lines and indented blocks
    (literal blocks, quotes). A heading's level is its adornment's order of first use
    (an overlined style apart from the same underline alone), as docutils reads it; 61 %
    of the kernel's .rst abstracts had been a licence comment or a label."""
    lines = [ln.rstrip("\r") for ln in text.split("\n")]
    styles: list[tuple[str, bool]] = []
    blocks: list[tuple[str, int, str]] = []
    para: list[str] = []
    markup = False  # inside an explicit markup block (its indented body follows)

    def flush() -> None:
        if para:
            joined = _rst_inline(" ".join(para)).strip()
            if re.search(r"\w", joined):
                blocks.append(("para", 0, joined))
            para.clear()

    n = len(lines)
    i = 0
    while i < n:
        ln = lines[i]
        s = ln.strip()
        if not s:
            flush()
            i += 1
            continue
        indented = ln[:1].isspace()
        if markup and indented:
            i += 1
            continue
        markup = False
        if ln.startswith(".."):
            flush()
            markup = True
            i += 1
            continue
        over = _RST_UNDER_RE.match(ln)
        if over and i + 2 < n and lines[i + 2].strip() == s and lines[i + 1].strip():
            flush()  # an overlined title
            style = (over.group(1), True)
            title = lines[i + 1].strip()
            i += 3
        elif not para and not indented and i + 1 < n and _RST_UNDER_RE.match(lines[i + 1]) \
                and len(lines[i + 1].strip()) >= min(3, len(s)):
            style = (lines[i + 1].strip()[0], False)
            title = s
            i += 2
        else:
            if over or indented or (not para and _RST_FIELD_RE.match(s)):
                flush()
            else:
                para.append(s)
            i += 1
            continue
        if style not in styles:
            styles.append(style)
        blocks.append(("heading", styles.index(style) + 1, _rst_inline(title).strip()))
    flush()
    return blocks


def _rst_abstract(text: str) -> str:
    """The first paragraph, after the title it falls under (`_markdown_abstract`'s rule)."""
    title = ""
    for kind, _, s in _rst_blocks(text):
        if kind == "heading" and not title:
            title = s
        if kind == "para":
            return f"{title} — {s}" if title and not s.lower().startswith(title.lower()) else s
    return title


def _rst_overview(text: str) -> str:
    """reStructuredText headings, each with its first sentence (`_rst_blocks`)."""
    return _blocks_overview(_rst_blocks(text))


_NAME_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


def folder_tiers(children: list[tuple[str, str]]) -> tuple[str, str]:
    """(abstract, overview) of a folder from its children's (name, abstract) pairs.

    The abstract is a README's abstract when the folder has one, else a list of its
    children's names; the overview lists every child with its abstract.
    """
    if not children:
        return "", ""
    # a name is one field of a line: a newline in it would add a line of its own choosing
    children = [(_NAME_CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", n), a) for n, a in children]
    readme = next((a for n, a in children
                   if re.match(r"readme(\.\w+)?/?$", n, re.I) and a.strip()), "")
    names = [n for n, _ in children]
    if readme:
        abs_ = clip(readme)
    else:
        abs_ = clip(f"{len(names)} {'entry' if len(names) == 1 else 'entries'}: "
                    + ", ".join(names))
    lines = [f"{n} — {clip(a, 200)}" if a.strip() else n for n, a in children]
    return abs_, _cap_lines(lines)
