"""Context tiers: golden L0/L1 per language, front matter, folders, categories, types."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ov.errors import OvError
from ov import kinds
from ov.kinds import category, file_type, type_globs
from ov import tiers
from ov.tiers import (ABSTRACT_CHARS, OVERVIEW_CHARS, abstract,
                      folder_tiers, front_matter, overview)

MD = """---
title: Widget guide
tags: [team=docs, lang=en]
---
<!-- generated: do not edit -->
# Widgets

[![CI](https://ci.example/badge.svg)](https://ci.example)

Widgets turn **raw input** into [clean output](https://example.com). They run offline.

## Install

Run `pip install widgets`. Then import it.

## Usage

### From Python
Call `widgets.make()` with a path!

```python
# not a heading
widgets.make("x")
```

Setext section
--------------
Body of the setext section.
"""
PY = '''#!/usr/bin/env python3
"""Shape utilities: areas and perimeters of simple shapes.

More detail that the abstract leaves out.
"""

import math


class Shape:
    """A shape with an area."""

    def area(self) -> float:
        """Area in square units."""
        raise NotImplementedError

    def _hidden(self):
        pass


class Circle(Shape):
    def __init__(self, r: float = 1.0) -> None:
        self.r = r


async def fetch(url: str, *, timeout: int = 5) -> bytes:
    """Fetch a URL. Returns the body."""


def main(argv=None):
    pass
'''
GO = '''// Copyright 2024 The Authors. All rights reserved.
// Use of this source code is governed by a BSD-style license.

// Package store keeps key-value pairs in memory.
package store

import "sync"

// Store is a concurrent map.
type Store struct {
	mu sync.Mutex
	m  map[string]string
}

// Getter reads values.
type Getter interface {
	Get(key string) (string, bool)
}

// New returns an empty Store.
func New() *Store {
	return &Store{m: map[string]string{}}
}

// Get returns the value of key.
func (s *Store) Get(key string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.m[key]
	return v, ok
}
'''
TS = '''/**
 * Event bus for the UI layer.
 * @module bus
 */
import { Emitter } from "./emitter";

export interface Event {
  name: string;
}

export type Handler = (e: Event) => void;

/** Publishes events to subscribers. */
export class Bus extends Emitter {
  private handlers: Handler[] = [];

  /** Adds a handler. */
  subscribe(h: Handler): () => void {
    this.handlers.push(h);
    return () => {};
  }

  async publish(e: Event): Promise<number> {
    return this.handlers.length;
  }
}

export const makeBus = (name: string): Bus => {
  return new Bus();
};

export default function createDefault(): Bus {
  return makeBus("default");
}
'''
RS = '''//! Geometry primitives.

use std::fmt;

/// A point in 2D space.
#[derive(Debug, Clone)]
pub struct Point {
    pub x: f64,
    pub y: f64,
}

pub enum Shape {
    Circle(f64),
}

/// Things that have an area.
pub trait Area {
    fn area(&self) -> f64;
}

impl Area for Shape {
    fn area(&self) -> f64 {
        0.0
    }
}

pub(crate) async fn load(path: &str) -> Result<Point, String> {
    todo!()
}
'''
JAVA = '''/*
 * Copyright (c) 2024 Example Corp. Licensed under the Apache License.
 */
package com.example;

/**
 * Counts words in text.
 */
public class WordCounter implements Counter {
    private final int limit;

    /** Creates a counter with a limit. */
    public WordCounter(int limit) {
        this.limit = limit;
    }

    @Override
    public int count(String text) {
        if (text == null) {
            return 0;
        }
        return text.split(" ").length;
    }
}

interface Counter {
    int count(String text);
}
'''
C = '''/* ring.c — a fixed-size ring buffer. */
#include <stdlib.h>

struct ring {
    int *buf;
    size_t head;
};

typedef struct node {
    int v;
} node_t;

/* Allocates a ring of n slots. */
struct ring *ring_new(size_t n)
{
    struct ring *r = malloc(sizeof *r);
    if (r == NULL)
        return NULL;
    return r;
}

static int ring_push(struct ring *r, int v) {
    return 0;
}

int main(void) {
    return ring_push(ring_new(4), 1);
}
'''


GOLDEN = {
    "guide.md": (
        MD,
        "Widget guide — Widgets turn raw input into clean output. They run offline.",
        "# Widgets — Widgets turn raw input into clean output.\n"
        "  ## Install — Run pip install widgets.\n"
        "  ## Usage\n"
        "    ### From Python — Call widgets.make() with a path!\n"
        "  ## Setext section — Body of the setext section.",
    ),
    "shapes.py": (
        PY,
        "Shape utilities: areas and perimeters of simple shapes.",
        "class Shape — A shape with an area.\n"
        "  def area(self) -> float — Area in square units.\n"
        "  def _hidden(self)\n"
        "class Circle(Shape)\n"
        "  def __init__(self, r: float=1.0) -> None\n"
        "async def fetch(url: str, *, timeout: int=5) -> bytes — Fetch a URL.\n"
        "def main(argv=None)",
    ),
    "store.go": (
        GO,
        "Package store keeps key-value pairs in memory.",
        "type Store struct — Store is a concurrent map.\n"
        "type Getter interface — Getter reads values.\n"
        "func New() *Store — New returns an empty Store.\n"
        "func (s *Store) Get(key string) (string, bool) — Get returns the value of key.",
    ),
    "bus.ts": (
        TS,
        "Event bus for the UI layer.",
        "export interface Event\n"
        "export type Handler = (e: Event) => void\n"
        "export class Bus extends Emitter — Publishes events to subscribers.\n"
        "  subscribe(h: Handler): () => void — Adds a handler.\n"
        "  async publish(e: Event): Promise<number>\n"
        "export const makeBus = (name: string): Bus\n"
        "export default function createDefault(): Bus",
    ),
    "geo.rs": (
        RS,
        "Geometry primitives.",
        "pub struct Point — A point in 2D space.\n"
        "pub enum Shape\n"
        "pub trait Area — Things that have an area.\n"
        "  fn area(&self) -> f64\n"
        "impl Area for Shape\n"
        "  fn area(&self) -> f64\n"
        "pub(crate) async fn load(path: &str) -> Result<Point, String>",
    ),
    "WordCounter.java": (
        JAVA,
        "Counts words in text.",
        "public class WordCounter implements Counter — Counts words in text.\n"
        "  public WordCounter(int limit) — Creates a counter with a limit.\n"
        "  public int count(String text)\n"
        "interface Counter\n"
        "  int count(String text)",
    ),
    "ring.c": (
        C,
        "ring.c — a fixed-size ring buffer.",
        "struct ring\n"
        "typedef struct node\n"
        "struct ring *ring_new(size_t n) — Allocates a ring of n slots.\n"
        "static int ring_push(struct ring *r, int v)\n"
        "int main(void)",
    ),
}


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_golden_tiers(name):
    text, l0, l1 = GOLDEN[name]
    assert abstract(text, name) == l0
    assert overview(text, name) == l1
    # Deterministic.
    assert overview(text, name) == l1 and abstract(text, name) == l0


def test_python_outline_falls_back_to_regexes_when_it_does_not_parse():
    text = 'def good(a, b):\n    """Adds."""\n    return a +\n\nclass K:\n    def m(self):\n        pass\n'
    assert overview(text, "broken.py") == "def good(a, b) — Adds.\nclass K\n  def m(self)"


def test_front_matter_description_wins_for_the_abstract():
    text = "---\ntitle: T\ndescription: \"A short summary.\"\n---\n# T\n\nFirst paragraph.\n"
    assert abstract(text, "a.md") == "A short summary."
    text2 = "---\nsummary: Sum up.\n---\nBody.\n"
    assert abstract(text2, "notes.txt") == "Sum up."


@pytest.mark.parametrize("bom", ["", "\ufeff"])
def test_a_note_of_headings_alone_is_summed_up_by_its_title_and_headings(bom):
    """A meeting template (front matter and headings, no paragraph) had the raw
    `--- title: Meeting template ---` as its summary; a byte order mark before the front
    matter hid it from every reader of it (a notes tree's review)."""
    text = bom + "---\ntitle: Meeting template\ntags: [kind=template]\n---\n# Meeting template\n\n## Attendees\n\n## Decisions\n"
    assert abstract(text, "Meeting template.md") == "Meeting template — Attendees, Decisions"
    assert front_matter(text) == {"title": "Meeting template", "tags": ["kind=template"]}
    assert "---" not in overview(text, "Meeting template.md") and "title:" not in overview(text, "Meeting template.md")


@pytest.mark.parametrize("path, text, l0, l1", [
    # a licence in a doc comment a blank line above is no doc (and never the abstract)
    ("main.c", "/** Copyright (c) 2021 Acme Corp. All rights reserved.\n * SPDX-License-Identifier: MIT\n */\n\n"
               "int main(int argc, char **argv)\n{\n}\n", "Defines main()", "int main(int argc, char **argv)"),
    # code commented out, and a comment after code, right above a function: no doc
    ("p.c", "int y;\n/* int old_parse(char *s) {\n   return atoi(s);\n} */\nint parse(const char *s)\n{\n}\n",
     None, "int parse(const char *s)"),
    ("q.c", "int x = 1; /* a counter\n that counts */\nint parse(const char *s)\n{\n}\n", None, "int parse(const char *s)"),
    # Doxygen's commands are C's: an address in a JS comment stays whole
    ("m.js", "/**\n * Mail results to ops@file.example.org nightly.\n */\nfunction mail() {\n}\n",
     "Mail results to ops@file.example.org nightly.", "function mail() — Mail results to ops@file.example.org nightly."),
    # Boost's licence is a licence, and an `.ipp` file is C++
    ("graph.hpp", "// Copyright 2002 Someone\n\n// Distributed under the Boost Software License, Version 1.0.\n"
                  "// (See accompanying file LICENSE_1_0.txt)\n\nclass graph {\n};\n", "Defines class graph", None),
    ("impl/pool.ipp", "//\n// impl/pool.ipp\n// ~~~~~~~~~~~~~\n//\n// Copyright (c) 2003-2020 Someone\n//\n\n"
                      "namespace asio {\nvoid thread_pool::join()\n{\n}\n}\n", None, "namespace asio\nvoid thread_pool::join()"),
    # a one-line template class keeps its doc: the class after it does not take it
    ("e.hpp", "namespace q {\n/** Holds one widget. */\ntemplate<typename T> class WidgetZ { public: int get() const { return 1; } };\n"
              "class EXPORT_API GadgetZ : public WidgetZ<int> {};\n}\n", None,
     "namespace q\ntemplate<typename T> class WidgetZ — Holds one widget.\nclass EXPORT_API GadgetZ : public WidgetZ<int>"),
    # a function returning `struct VEC3` is no struct named after the function
    ("v.h", "struct VEC3 vec_add(struct VEC3 a, struct VEC3 b)\n{\n}\n", "Defines struct VEC3", None),
])
def test_a_c_doc_comment_is_a_doc_not_a_licence_code_or_an_address(path, text, l0, l1):
    if l0 is not None:
        assert abstract(text, path) == l0
    if l1 is not None:
        assert overview(text, path) == l1


def test_front_matter_forms():
    text = (
        "---\n"
        "title: 'Quoted: title'\n"
        "description: >\n  Folded text\n  on two lines.\n"
        "tags: [team=search, lang=py]\n"
        "aliases:\n  - one\n  - \"two\"\n"
        "empty:\n"
        "---\nbody\n"
    )
    fm = front_matter(text)
    assert fm["title"] == "Quoted: title"
    assert fm["description"] == "Folded text on two lines."
    assert fm["tags"] == ["team=search", "lang=py"]
    assert fm["aliases"] == ["one", "two"]
    assert fm["empty"] == ""
    mapping = front_matter("---\ntags:\n  team: search\n  tier: 'gold'\n---\n")
    assert mapping == {"tags": {"team": "search", "tier": "gold"}}
    assert front_matter("---\r\ntags: a=1 b=2\r\nsummary: s\r\n---\r\nx") == {
        "tags": "a=1 b=2", "summary": "s"}
    assert front_matter("no front matter\n---\n") == {}
    assert front_matter("---\nunterminated: yes\n") == {}


def test_markdown_abstract_skips_noise():
    text = (
        "<!--\nmulti-line comment\n-->\n"
        '<p align="center"><img src="logo.png"></p>\n\n'
        "# Project\n\n[![Build](https://b/x.svg)](https://b) ![cov](c.svg)\n\n"
        "```\ncode first\n```\n\n---\n\n"
        "The real first paragraph, with a [link](http://x) and `code`.\n"
    )
    assert abstract(text, "README.md") == "Project — The real first paragraph, with a link and code."


def test_abstract_is_clipped_at_a_word_boundary():
    long_para = " ".join(f"word{i}" for i in range(200))
    a = abstract(long_para, "a.md")
    assert len(a) <= ABSTRACT_CHARS
    assert a.endswith("…")
    assert long_para.startswith(a[:-1])
    assert long_para[len(a) - 1] == " "  # cut before a whole word


def test_a_second_licence_header_is_not_the_abstract():
    """The JDK's java.util.concurrent (99 of java.util's 369 files) has a second header
    after Oracle's copyright: "This file is available under and governed by the GNU General
    Public License ... released to the public domain". It was their abstract; the class's
    Javadoc is."""
    jdk = ("/*\n * Copyright (c) 2003, 2021, Oracle and/or its affiliates. All rights reserved.\n */\n\n"
           "/*\n * This file is available under and governed by the GNU General Public\n"
           " * License version 2 only, as published by the Free Software Foundation.\n"
           " * However, the following notice accompanied the original version of this\n * file:\n *\n"
           " * Written by Doug Lea with assistance from members of JCP JSR-166\n"
           " * Expert Group and released to the public domain, as explained at\n"
           " * http://creativecommons.org/publicdomain/zero/1.0/\n */\n\npackage java.util.concurrent;\n\n"
           "/**\n * A hash table supporting full concurrency of retrievals.\n */\n"
           "public class ConcurrentHashMap<K,V> {\n}\n")
    assert abstract(jdk, "ConcurrentHashMap.java") == "A hash table supporting full concurrency of retrievals."
    for header in ("/* Distributed under the Mozilla License 2.0. */", "// Released into the public domain.",
                   "/* Use is subject to the terms of the MIT License. */"):
        assert abstract(f"{header}\n\n/* Parses dates. */\nint parse(void);\n", "a.c") == "Parses dates.", header
    # a comment that only speaks of licences in passing is still the file's own words
    assert abstract("/* Reads a package's licence file and prints its name. */\nint main(void);\n",
                    "a.c") == "Reads a package's licence file and prints its name."


def test_abstract_fallbacks_are_never_empty():
    assert abstract("only code = 1\nmore = 2\n", "a.py") == "only code = 1 more = 2"
    assert abstract("# Heading only\n", "a.md") == "Heading only"  # the title, without its mark
    # a licence says nothing of the file: its code does, else the comment is all there is
    assert abstract("// Copyright 2020 X. All rights reserved.\nint x;\n", "a.c") == "int x;"
    assert abstract("// Copyright 2020 X. All rights reserved.\n#define X 1\n", "a.h") == "#define X 1"
    assert abstract("// Copyright 2020 X. All rights reserved.\n", "a.c") == \
        "Only a licence header: Copyright 2020 X. All rights reserved."
    assert abstract("   \n\t\n", "a.py") == ""
    assert overview("", "a.md") == ""


@settings(max_examples=200, deadline=None)
@given(text=st.text(max_size=300),
       name=st.sampled_from(["a.md", "a.py", "a.go", "a.ts", "a.rs", "a.c", "a.txt", "X"]))
def test_abstract_never_empty_for_non_blank_text(text, name):
    a = abstract(text, name)
    if text.strip():
        assert a.strip()
    assert len(a) <= ABSTRACT_CHARS
    assert len(overview(text, name)) <= OVERVIEW_CHARS


def test_overview_is_capped_at_a_line_boundary():
    text = "\n".join(f"def function_number_{i}(alpha, beta, gamma):\n    pass\n" for i in range(500))
    ov = overview(text, "big.py")
    assert len(ov) <= OVERVIEW_CHARS
    lines = ov.split("\n")
    assert lines[-1] == f"def function_number_{len(lines) - 1}(alpha, beta, gamma)"


def test_plain_text_overview_is_first_line_of_each_paragraph():
    text = "First para line one\nline two\n\nSecond para\nmore\n\n\nThird\n"
    assert overview(text, "notes.txt") == "First para line one\nSecond para\nThird"
    assert abstract(text, "notes.txt") == "First para line one line two"


def test_a_json_files_overview_is_its_top_level_keys():
    """`ov read package.json --level 1` printed `{`, its first paragraph's first line (a
    review of a JS tree): a JSON file written a key a line is outlined by its top-level keys."""
    text = ('{\n  "name": "express",\n  "version": "4.18.2",\n  "dependencies": {\n    "accepts": "~1.3.8",\n'
            '    "body-parser": "1.20.1"\n  },\n  "files": [\n    "LICENSE"\n  ]\n}\n')
    assert overview(text, "package.json") == '"name": "express"\n"version": "4.18.2"\n"dependencies":\n"files":'
    assert overview('{"name": "x", "v": 1}\n', "min.json") == '{"name": "x", "v": 1}'  # one line: as prose
    # a key on the line that opens the object; an array of records is no object's outline
    assert overview('{ "compilerOptions": {\n    "target": "es6"\n  },\n  "include": ["src"]\n}\n',
                    "tsconfig.json") == '"compilerOptions":\n"include": ["src"]'
    records = '[\n  {\n    "id": 0,\n    "name": "n0"\n  },\n  {\n    "id": 1,\n    "name": "n1"\n  }\n]\n'
    assert overview(records, "rows.json") == "["


def test_rst_overview():
    text = ("=====\nTitle\n=====\n\nIntro sentence. More.\n\nSection\n-------\n\nBody here.\n\n"
            "Sub\n~~~\nDeep.\n")
    assert overview(text, "doc.rst") == (
        "# Title — Intro sentence.\n  ## Section — Body here.\n    ### Sub — Deep.")


def test_folder_tiers():
    children = [("README.md", "The project does things."), ("src", "3 entries: a, b, c"),
                ("setup.py", "")]
    a, o = folder_tiers(children)
    assert a == "The project does things."
    assert o == "README.md — The project does things.\nsrc — 3 entries: a, b, c\nsetup.py"
    a2, _ = folder_tiers([("a.py", "A."), ("b.py", "B.")])
    assert a2 == "2 entries: a.py, b.py"
    assert folder_tiers([]) == ("", "")


@pytest.mark.parametrize("path,expected", [
    ("src/main.py", "py"), ("README.md", "md"), ("doc.rst", "rst"), ("a.js", "js"),
    ("a.mjs", "js"), ("a.ts", "ts"), ("a.tsx", "ts"), ("main.go", "go"), ("lib.rs", "rust"),
    ("x.c", "c"), ("x.h", "c"), ("x.cpp", "cpp"), ("X.java", "java"), ("a.json", "json"),
    ("a.yml", "yaml"), ("pyproject.toml", "toml"), ("notes.txt", "txt"), ("Makefile", "make"),
    ("Dockerfile", "docker"), ("LICENSE", "license"), ("run.sh", "sh"), ("a.unknownext", ""),
    ("noext", ""),
])
def test_file_type(path, expected):
    assert file_type(path) == expected


def test_file_type_is_the_first_type_a_glob_of_which_matches():
    """`file_type` asks one expression of all the globs (ov.kinds `_types_re`): its answer
    is the first type in `TYPES` one of whose globs `fnmatchcase` matches, on names made
    from every glob and on random names of glob characters, dots and newlines."""
    import random
    from fnmatch import fnmatchcase

    def first(name):
        return next((t for t, globs in kinds.TYPES.items() if any(fnmatchcase(name, g) for g in globs)), "")

    names = ["", ".", "a\nb.py", "x.py\n", "LICENSE-MIT", "Makefile.in", "GNUmakefile", "x.tf.json"]
    for globs in kinds.TYPES.values():
        for g in globs:
            names += [g.replace("*", "x"), g.replace("*", ""), g.replace("*", "a.b"), g.upper(), "x" + g + "y"]
    rnd = random.Random(5)
    names += ["".join(rnd.choice("aZ.-_*[]\nSsCcy") for _ in range(rnd.randint(1, 10))) for _ in range(3000)]
    for name in names:
        assert file_type(f"dir/{name}") == first(name), name


def test_type_globs():
    from fnmatch import fnmatchcase

    assert type_globs("rust") == ("*.rs",)
    assert "*.pyi" in type_globs("py")
    with pytest.raises(OvError) as e:
        type_globs("nope")
    assert e.value.code == "invalid_argument" and e.value.field == "type"
    # A file named by a type's first glob is selected by `-t` of that type in an index:
    # stored under it, or under a type `type_filter` reads with the names' globs.
    for name, globs in kinds.TYPES.items():
        sample = globs[0].replace("*", "x").replace("[Mm]", "M").replace("[Gg][Nn][Uu]", "GNU")
        if "[" not in sample:
            stored, names = kinds.type_filter([name])
            assert stored is None or file_type(sample) in stored, (name, sample)  # (None: any type)
            assert not names or any(fnmatchcase(sample, g) for g in names), (name, sample)


@pytest.mark.parametrize("path,expected", [
    ("a.py", "code"), ("src/a.ts", "code"), ("x.c", "code"), ("README", "docs"),
    ("docs/guide.md", "docs"), ("CHANGELOG.rst", "docs"), ("LICENSE", "docs"),
    ("notes.txt", "docs"), ("package.json", "config"), ("a.yaml", "config"),
    ("pyproject.toml", "config"), (".gitignore", "config"), (".env", "config"),
    ("Dockerfile", "config"), ("data.csv", "data"), ("rows.jsonl", "data"),
    ("img.png", "data"), ("weird.zzz", "other"), ("noext", "other"),
])
def test_category(path, expected):
    assert category(path) == expected


# ---- level 0 of code without a docstring: the names it defines -------------------------


@pytest.mark.parametrize("name, text, l0", [
    ("a.py", "from __future__ import annotations\nimport functools\nimport io\n\nLIMIT = 3\n\n"
             "class Store:\n    def close(self):\n        pass\n\n\ndef open_store(db):\n    pass\n\n\n"
             "async def fetch():\n    pass\n", "Defines class Store, open_store(), fetch()"),
    ("main.go", "package main\n\nimport \"fmt\"\n\ntype Store struct {\n}\n\n"
                "func (s *Store) Get(k string) string {\n}\n\nfunc main() {\n}\n",
     "Defines type Store, Get(), main()"),
    ("bus.ts", "import x from 'y';\n\nexport class Bus extends Emitter {\n  subscribe(h) {\n  }\n}\n"
               "export const makeBus = (name: string): Bus => {\n}\n"
               "export function createDefault(): Bus {\n}\n",
     "Defines class Bus, makeBus(), createDefault()"),
    ("geo.rs", "use std::io;\n\npub struct Point {\n}\nimpl Area for Shape {\n}\n"
               "pub fn load(p: &str) -> Point {\n}\n", "Defines struct Point, load()"),
    ("ring.c", "#include <stdio.h>\n\nstruct ring {\n};\nstatic int ring_push(struct ring *r, int v) {\n}\n"
               "int main(void) {\n}\n", "Defines struct ring, ring_push(), main()"),
    # C++ (Eigen, Boost): a template class on one line, a class after an export macro; a
    # namespace says less than what it holds, and a `#if` is no comment
    ("FullPivLU.h", "#ifndef EIGEN_LU_H\n#define EIGEN_LU_H\n\nnamespace Eigen {\n\n"
                    "template<typename _MatrixType> struct traits;\n"
                    "template<typename _MatrixType> class FullPivLU\n  : public SolverBase<FullPivLU<_MatrixType> >\n"
                    "{\n};\n\nclass BOOST_SYMBOL_VISIBLE illegal_backtracking : public std::exception\n{\n};\n"
                    "enum class format_t { json, cbor };\n}\n",
     "Defines class FullPivLU, class illegal_backtracking, enum class format_t, namespace Eigen"),
    ("basic_stream.hpp", "#include <chrono>\n\n#if ! BOOST_BEAST_DOXYGEN\nnamespace boost {\n}\n#endif\n"
                         "\nnamespace beast {\nclass basic_stream\n{\n};\n}\n",
     "Defines class basic_stream, namespace boost, namespace beast"),
    # CommonJS and ES5 (express, qs, koa-router...): functions bound by assignment, known
    # by the name bound; a `.d.ts` file's `export declare function` (zod: 110 of them)
    ("application.js", "/*!\n * express\n * MIT Licensed\n */\n\n'use strict';\n\n"
                       "var app = exports = module.exports = {};\n\n/**\n * Initialize the server.\n */\n\n"
                       "app.init = function init() {\n};\n\napp.use = function (fn) {\n};\n\n"
                       "Layer.prototype.match = function match(path) {\n};\n"
                       "exports.json = (body) => body;\nvar parse = function parseKeys(a) {\n};\n"
                       "module.exports = class Router {\n}\nif (a == function () {}) {\n}\n",
     "Defines init(), use(), match(), json(), parse(), class Router"),
    ("api.d.ts", "import * as core from './core';\nexport declare function string(params?: string): ZodString;\n"
                 "export declare function email(params?: string): ZodEmail;\n",
     "Defines string(), email()"),
    # nothing defined: the first lines that are not imports
    ("run.py", "import os\nimport sys\n\nprint(os.getcwd())\n", "print(os.getcwd())"),
])
def test_code_abstract_names_what_the_file_defines(name, text, l0):
    assert abstract(text, name) == l0


def test_a_docstring_or_leading_comment_still_wins_over_the_names():
    assert abstract('"""Open and query the index."""\nimport os\n\ndef f():\n    pass\n', "a.py") \
        == "Open and query the index."
    assert abstract("// Ring buffers.\n\nint f(void) {\n}\n", "a.c") == "Ring buffers."


def test_the_names_are_clipped_like_any_abstract():
    text = "".join(f"def function_with_a_long_name_{i}():\n    pass\n\n" for i in range(40))
    a = abstract(text, "many.py")
    assert a.startswith("Defines function_with_a_long_name_0(), ") and len(a) <= ABSTRACT_CHARS


def test_a_code_abstract_names_public_definitions_first_and_python_comments_stay_with_their_def():
    """click's core.py read "Defines _complete_visible_commands(), _check_nested_chain(),
    ..." before its Context and Command, and typer's params.py took the comment above an
    overload ("Overload for Option created with custom type 'parser'") as the file's."""
    text = "import os\n\n\ndef _helper():\n    pass\n\n\ndef _other():\n    pass\n\n\nclass Context:\n    pass\n\n\n" \
           "def run():\n    pass\n"
    assert abstract(text, "core.py") == "Defines class Context, run(), _helper(), _other()"
    overload = "from typing import overload\n\n\n# Overload for Option created with custom type 'parser'\n" \
               "@overload\ndef Option(default, parser):\n    ...\n\n\ndef Argument():\n    pass\n"
    assert abstract(overload, "params.py") == "Defines Option(), Argument()"
    go = "package store\n\n// Package store keeps the rows.\nfunc Open() {}\n"
    assert abstract(go, "store.go") != "Defines Open()"  # elsewhere the comment above still speaks


GO_LICENSE = "// Copyright 2014 The Go Authors. All rights reserved.\n// license that can be found in the LICENSE file.\n\n"


def test_go_abstracts_skip_directives_and_read_the_file_comment():
    """The Go stdlib (review of a Go tree): 24 % of files read a `//go:build` or
    `//go:linkname` line as their abstract, and runtime/map.go's "This file contains the
    implementation of Go's map type", a comment standing alone after `package`, lost to a
    function's doc."""
    build = GO_LICENSE + "//go:build asan\n\npackage runtime\n\n// Public address sanitizer API.\nfunc ASanRead() {}\n"
    assert abstract(build, "asan.go") == "Public address sanitizer API."
    mapgo = (GO_LICENSE + "package runtime\n\n// This file contains the implementation of Go's map type.\n//\n"
             "// A map is just a hash table.\n\nimport (\n\t\"unsafe\"\n)\n\n"
             "// isEmpty reports whether the given tophash array entry represents an empty bucket entry.\n"
             "func isEmpty(x uint8) bool {\n\treturn x <= 1\n}\n")
    assert abstract(mapgo, "map.go").startswith("This file contains the implementation of Go's map type.")
    attached = GO_LICENSE + "package runtime\n\n// set using the linker\nvar modinfo string\n\nfunc main() {}\n"
    assert "set using the linker" not in abstract(attached, "main.go")  # a declaration's own comment
    linkname = "package p\n\n//go:linkname main_main main.main\nfunc main_main()\n"
    assert "go:linkname" not in abstract(linkname, "proc.go")
    js = "// eslint-disable-next-line no-console\n// Logs the build's progress.\nexport function log() {}\n"
    assert abstract(js, "log.js") == "Logs the build's progress."


def test_a_notes_abstract_carries_its_title():
    """A note's title is its subject, its first paragraph alone often is not: `ov read
    pancakes.md -L 0` said "Makes about 12 pancakes." (review of a notes folder)."""
    assert abstract("# Fluffy pancakes\n\nMakes about 12 pancakes.\n", "pancakes.md") \
        == "Fluffy pancakes — Makes about 12 pancakes."
    fm = "---\ntitle: Weekly sync\n---\n# 21 October\n\nWe move the billing service.\n"
    assert abstract(fm, "sync.md") == "Weekly sync — We move the billing service."
    # a paragraph that starts with its title says it once
    assert abstract("# Dune\n\nDune is a novel by Frank Herbert.\n", "dune.md") == "Dune is a novel by Frank Herbert."


def test_a_generated_file_of_many_definitions_names_the_first_public_ones():
    """A generated file of thousands of functions: the names read stop at the cap of public
    ones (a list lookup per name made a 30,000-function file take seconds)."""
    text = "".join(f"def _p{i}():\n    pass\n" for i in range(5)) + "".join(f"def f{i}():\n    pass\n" for i in range(30_000))
    a = abstract(text, "gen.py")
    assert a.startswith("Defines f0(), f1(), f2()") and "_p0" not in a, a


def test_a_commonjs_outline_lists_the_functions_bound_by_assignment():
    """express's layer.js outlined as `function Layer(...)` and `function decode_param(...)`:
    its whole API, `Layer.prototype.handle_request`, `match`..., was missing."""
    from ov.tiers import overview

    text = ("'use strict';\n\nfunction Layer(path, options, fn) {\n}\n\n/**\n * Handle the request.\n */\n\n"
            "Layer.prototype.handle_request = function handle(req, res, next) {\n};\n\n"
            "/**\n * Check if this route matches `path`.\n */\nLayer.prototype.match = function match(path) {\n};\n")
    got = overview(text, "layer.js")
    assert "Layer.prototype.handle_request = function handle(req, res, next)" in got, got
    assert "Layer.prototype.match = function match(path) — Check if this route matches `path`." in got, got


def test_rst_abstract_skips_comments_labels_and_fields():
    """61 % of the kernel's .rst abstracts had been `.. SPDX-License-Identifier: GPL-2.0`
    or a `.. _label:` line; the title and first paragraph say what a document is."""
    text = (".. SPDX-License-Identifier: GPL-2.0\n\n.. _process_howto:\n\n"
            "HOWTO do Linux kernel development\n---------------------------------\n\n"
            ":Author: Someone\n\n.. note::\n\n   A note's body.\n\n"
            "This is the be-all, end-all document on this topic. See :ref:`the rules <rules>`\n"
            "and ``make help`` or `the site <https://kernel.org>`_.\n")
    assert abstract(text, "howto.rst") == ("HOWTO do Linux kernel development — This is the be-all, end-all "
                                           "document on this topic. See the rules and make help or the site.")
    over = ("========\nOverline\n========\n\n.. _a:\n\nSection\n=======\n\n.. include:: x.rst\n\nBody.\n")
    assert overview(over, "d.rst") == "# Overline\n  ## Section — Body."
    assert abstract(".. only a comment\n", "c.rst") == ".. only a comment"


_C_LINES = ["static int probe(struct dev *d)", "{", "\treturn 0;", "}", "/* a comment", "int hidden(void)",
            " */", "/* one line */", "int after(void) /* tail", "*/", "", "// int not_this(void)",
            "#define X 1", "struct page *alloc(int n)", "func Serve(l net.Listener) error {",
            "type Server struct {", "   /* indented", "int in_comment(void)", "*/ int closed(void)",
            "\tfunc inner() {", "typedef struct x x_t;", "void *p = a /* mid */ ;"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_C_LINES), max_size=40), st.booleans(), st.sampled_from([".c", ".go", ".h"]))
def test_the_outline_reads_only_the_lines_that_can_change_it(lines, crlf, ext):
    """C and Go outlines read only the lines that may start a definition or open or close
    a block comment (`_outline_lines`); what they find is what reading every line finds."""
    import ov.tiers as tiers

    text = ("\r\n" if crlf else "\n").join(lines)
    fast = tiers._regex_outline(text, ext)
    every = tiers._outline_lines
    try:
        tiers._outline_lines = lambda text, n, ext: range(n)
        assert fast == tiers._regex_outline(text, ext)
    finally:
        tiers._outline_lines = every


def test_a_file_of_only_a_licence_header_says_so():
    """Its abstract was the header with its comment marks (`/* * Licensed under ...`),
    against "licence headers are never the abstract"; a header above code still yields
    to what the code defines."""
    js = '/*\n * Licensed under the Apache License, Version 2.0 (the "License");\n * you may not use this file.\n */\n'
    assert abstract(js, "c.js") == ('Only a licence header: Licensed under the Apache License, '
                                          'Version 2.0 (the "License"); you may not use this file.')
    sh = "#!/bin/sh\n# Copyright 2020 Example Corp.\n#\n# Licensed under the MIT licence.\n"
    assert abstract(sh, "run.sh") == ("Only a licence header: Copyright 2020 Example Corp. "
                                            "Licensed under the MIT licence.")
    code = "# Copyright 2020 Example Corp.\n\ndef walk_tree(root):\n    return root\n"
    assert abstract(code, "w.py") == "Defines walk_tree()"
    assert not abstract("// A tiny helper for dates.\n", "d.js").startswith("Only")


def test_a_c_function_with_its_type_on_the_line_above_is_in_the_outline():
    """GNU and BSD style put the return type on a line of its own; such functions were
    left out of the outline (6,587 of them in the kernel's fs/, most of xfs and nfsd)."""
    c = ("int\nfoo_bar(int x)\n{\n    return x;\n}\n\nstatic void baz_qux(void) {}\n\n"
         "STATIC int\nxfs_walk(\n\tstruct xfs_mount *mp)\n{\n}\n\nreturn\nnot_a_def(x)\n"
         "EXPORT_SYMBOL(foo_bar);\n")
    assert overview(c, "gnu.c").split("\n") == ["int foo_bar(int x)", "static void baz_qux(void)",
                                               "STATIC int xfs_walk("]
    # a type line that reads as a definition alone is one entry with its function, not two
    assert overview("struct s *\nmk(\n\tint n)\n{\n}\n", "a.c") == "struct s * mk("
    assert overview("enum state\nnext_state(enum state s)\n{\n}\n", "a.c") == "enum state next_state(enum state s)"


def test_a_python_module_abstract_passes_its_rst_title():
    """16 of 667 abstracts of a tree of Python packages were `requests.sessions ~~~~~~`: the
    docstring's rst title, not its first sentence."""
    from ov.tiers import abstract

    doc = '"""\nrequests.sessions\n~~~~~~~~~~~~~~~~~\n\nThis module provides a Session object to manage and persist settings.\n"""\n'
    assert abstract(doc + "import os\n", "requests/sessions.py").startswith("This module provides a Session object")
    over = '"""\n=====\nTitle\n=====\n\nWhat it does.\n"""\n'
    assert abstract(over, "m.py") == "What it does."
    assert abstract('"""Only a line."""\n', "m.py") == "Only a line."
    assert abstract('"""\nTitle\n-----\n"""\n', "m.py").startswith("Title")  # nothing else to say


# Each language's definitions as its code writes them (a review of the JDK's sources found a
# package-private method and an interface's abstract ones missing from the outline; Kotlin,
# Swift, Scala, Dart and PHP had been read by Java's or no language's rules), and lines of
# their bodies that are none.
@pytest.mark.parametrize("ext, line, name", [
    (".java", "    void helper(int x) {", "helper()"),
    (".java", "    int size();", "size()"),
    (".java", "    abstract V compute(K key) throws Exception;", "compute()"),
    (".java", "    Map<String, List<Integer>> build(int n) {", "build()"),
    (".java", "    public <T> T[] toArray(T[] a) {", "toArray()"),
    (".java", "    @Override public int hashCode() {", "hashCode()"),
    (".java", "record Point(int x, int y) {", "record Point"),
    (".java", "        } else if (x) {", None),
    (".java", "        else if (x == 1) {", None),
    (".java", "        return foo(x);", None),
    (".java", "        throw new IllegalStateException(\"x\");", None),
    (".java", "        String s = foo(x);", None),
    (".java", "        foo(bar, baz);", None),
    (".java", "        list.forEach(x -> {", None),
    (".java", "        if (a instanceof Foo(int x)) {", None),
    (".java", "        assert check(x);", None),
    (".java", "        int[] arr = make(3);", None),
    (".cs", "    public async Task<int> RunAsync()", "RunAsync()"),
    (".cs", "        using (var x = Open()) {", None),
    (".cs", "        yield return Foo(x);", None),
    (".kt", "fun main(args: Array<String>) {", "main()"),
    (".kt", "    override fun toString(): String {", "toString()"),
    (".kt", "data class User(val name: String)", "class User"),
    (".kt", "object Registry {", "object Registry"),
    (".kt", "suspend fun load(): Int {", "load()"),
    (".kt", "fun String.shout() = uppercase()", "shout()"),
    (".kt", "    val x = foo(1)", None),
    (".kt", "    companion object {", None),
    (".swift", "func greet(name: String) -> String {", "greet()"),
    (".swift", "struct Point {", "struct Point"),
    (".swift", "extension Array {", "extension Array"),
    (".swift", "protocol Shape {", "protocol Shape"),
    (".swift", "    init(x: Int) {", "init()"),
    (".swift", "    let y = foo(x)", None),
    (".scala", "def add(a: Int, b: Int): Int = a + b", "add()"),
    (".scala", "case class Point(x: Int)", "class Point"),
    (".scala", "trait Animal {", "trait Animal"),
    (".scala", "  private[this] def helper(): Unit = {", "helper()"),
    (".scala", "    case Some(x) => foo(x)", None),
    (".dart", "void main() {", "main()"),
    (".dart", "  Future<void> run() async {", "run()"),
    (".dart", "mixin Walker {", "mixin Walker"),
    (".dart", "    print(x);", None),
    (".php", "    public static function createFromGlobals(): static", "createFromGlobals()"),
    (".php", "final class Request", "class Request"),
    (".php", "abstract class Controller", "class Controller"),
    (".php", "trait Macroable", "trait Macroable"),
    (".php", "    private function &getRef()", "getRef()"),
    (".php", "        $x = foo($y);", None),
    # (a review of this rule: Swift's and Kotlin's supertypes after `:`, Kotlin's secondary
    # constructors and Swift's subscripts, C#'s LINQ and Groovy's println are no definition)
    (".swift", "public struct Promise: Decodable {", "struct Promise"),
    (".kt", "class Foo: Bar() {", "class Foo"),
    (".kt", "    constructor(x: Int) : this() {", "constructor()"),
    (".swift", "    subscript(index: Int) -> T {", "subscript()"),
    (".cs", "            where IsValid(x)", None),
    (".cs", "            select Map(x);", None),
    (".groovy", "    println format(x)", None),
])
def test_definitions_as_each_language_writes_them(ext, line, name):
    sig = tiers._defn(line, ext)
    assert (sig is not None and tiers._defined_name(sig, ext)) == (name or False), sig


def test_a_kotlin_or_scala_signature_is_shown_without_its_expression_body():
    assert tiers._defn("def add(a: Int, b: Int = 2): Int = a + b", ".scala") == "def add(a: Int, b: Int = 2): Int"
    assert tiers._defn("fun <T> List<T>.second(): T = this[1]", ".kt") == "fun <T> List<T>.second(): T"
    assert tiers._defn("class A(val x: Int = 1) {", ".kt") == "class A(val x: Int = 1)"
    assert tiers._defn("fun f(cb: (Int) -> Int = ::id): Int = cb(1)", ".kt") == "fun f(cb: (Int) -> Int = ::id): Int"


def test_an_identifier_is_found_where_kotlin_swift_and_php_define_it():
    kt = "package a\n\nimport b.C\n\nclass Repo {\n    fun load(id: Int): User {\n        return cache.load(id)\n    }\n}\n"
    assert kt[tiers.defines(kt, "Repo.kt", "load"):].startswith("    fun load(")
    php = "<?php\nnamespace App;\n\nuse Foo\\Bar;\n\nfinal class Request\n{\n    public static function createFromGlobals(): static\n"
    assert php[tiers.defines(php, "Request.php", "createFromGlobals"):].startswith("    public static function")
    assert php[tiers.defines(php, "Request.php", "Request"):].startswith("final class Request")


def test_ruby_defines_a_name_without_parentheses_and_an_operator():
    """37 % of a Ruby tree's `def` lines have no parentheses (`def params`, `def
    self.safe_load yaml, ...`): they defined nothing, so `Rack::Request#params` found
    comments first."""
    rb = "module Rack\n  class Request\n    # The params.\n    def params\n      @params\n    end\n\n    def ==(other)\n    end\n  end\nend\n"
    assert rb[tiers.defines(rb, "request.rb", "params"):].startswith("    def params")
    psych = "module Psych\n  def self.safe_load yaml, permitted_classes: []\n  end\nend\n"
    assert psych[tiers.defines(psych, "psych.rb", "safe_load"):].startswith("  def self.safe_load")
    assert tiers._defn("    def ==(other)", ".rb") is not None
    assert "  def params — The params." in overview(rb, "request.rb").split("\n")


def test_a_ruby_files_magic_comment_is_not_its_abstract_and_its_gem_module_is_read_past():
    """`# frozen_string_literal: true` was the abstract of 69 % of a Ruby tree's files; the
    doc of ActiveSupport::Concern sits above `module Concern`, inside `module ActiveSupport`."""
    rb = ("# frozen_string_literal: true\n\nmodule ActiveSupport\n  # A typical module looks like this.\n"
          "  module Concern\n    def append_features(base)\n    end\n  end\nend\n")
    assert abstract(rb, "concern.rb") == "A typical module looks like this."
    bare = "# frozen_string_literal: true\n# encoding: utf-8\n\nmodule Foo\n  class Bar\n  end\nend\n"
    assert "frozen" not in abstract(bare, "bar.rb") and "encoding" not in abstract(bare, "bar.rb")


def test_javadoc_a_blank_line_above_the_class_and_its_markup():
    """693 of the JDK's 3,324 files have a blank line between the class's Javadoc and the
    class, and read "Defines class X"; `{@code}`, `{@link}` and HTML were left raw."""
    java = ("package java.util;\n\nimport java.io.Serializable;\n\n/**\n * Hash table based implementation of the "
            "{@code Map} interface, <i>see</i> {@link java.util.Map#get(Object) get}.\n *\n * <p>More.\n */\n\n"
            "public class HashMap<K,V> extends AbstractMap<K,V> {\n}\n")
    assert abstract(java, "HashMap.java") == "Hash table based implementation of the Map interface, see get."
    tags = ("/**\n * Adds {@code a + b > c} to {@code Map<String, List<Integer>>} by {@link #add(int, Object)} "
            "or {@link Map#get(Object) get}.\n */\npublic class A {\n}\n")
    assert abstract(tags, "A.java") == "Adds a + b > c to Map<String, List<Integer>> by add(int, Object) or get."
    # a header's name is no HTML (`<a.h>`, `<b.h>`)
    assert abstract("/* Wraps <a.h> and <b.h> for <p>Linux</p>. */\nint x;\n", "w.c") == "Wraps <a.h> and <b.h> for Linux."
    php = "<?php\n\nclass A\n{\n    /**\n     * {@inheritdoc}\n     */\n    public function run() {}\n}\n"
    assert "inheritdoc" not in abstract(php, "A.php")


def test_a_code_file_with_no_definition_is_outlined_by_lines_that_say_something():
    """The JDK's package-info.java files were outlined as `/*`, `/**`: each paragraph's first
    line, a comment's opener. module-info.java's `module java.base {` is a definition."""
    info = ("/*\n * Copyright (c) 2003. All rights reserved.\n */\n\n/**\n * Interfaces and classes providing a "
            "framework for locking.\n */\npackage java.util.concurrent.locks;\n")
    assert overview(info, "package-info.java").split("\n") == [
        "* Copyright (c) 2003. All rights reserved.", "* Interfaces and classes providing a framework for locking."]
    mod = "/**\n * Defines the foundational APIs.\n */\nmodule java.base {\n    exports java.io;\n}\n"
    assert overview(mod, "module-info.java").startswith("module java.base — Defines the foundational APIs.")


def test_a_javadoc_above_a_line_of_modifiers_is_the_class_doc():
    """The JDK writes `public final` on a line of its own above `class Character` (63
    files): their abstracts read "Defines class X" (30 of them) for want of the Javadoc
    above the modifiers; 9 do now, those with no Javadoc."""
    from ov.tiers import abstract

    text = ("package java.lang;\n\n/**\n * The {@code Character} class wraps a value of the primitive\n"
            " * type {@code char} in an object.\n */\npublic final\nclass Character implements Comparable<Character> {\n"
            "    private final char value;\n}\n")
    assert abstract(text, "java/lang/Character.java").startswith("The Character class wraps a value")
    plain = "package p;\n\npublic final\nclass Bare {\n}\n"
    assert abstract(plain, "p/Bare.java") == "Defines class Bare"


def test_a_kubernetes_manifest_is_said_by_its_objects():
    """Every manifest's abstract was its first lines, `apiVersion: apps/v1 kind: Deployment
    metadata:` (a tree's 8 Deployments alike), and its outline `apiVersion: apps/v1` alone.
    Each YAML document with a top-level apiVersion and kind now names its object."""
    text = ("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: shop\n"
            "  labels:\n    app: web\nspec:\n  template:\n    spec:\n      containers:\n"
            "        - name: nginx\n          image: nginx:1.25\n---\napiVersion: v1\nkind: Service\n"
            "metadata:\n  name: web\nspec:\n  selector:\n    name: not-the-service\n")
    assert abstract(text, "k8s/web.yaml") == "Kubernetes Deployment web (namespace shop), Service web"
    assert overview(text, "k8s/web.yaml").split("\n") == [
        "apiVersion: apps/v1", "kind: Deployment", "metadata:", "name: web", "namespace: shop", "spec:",
        "- name: nginx", "apiVersion: v1", "kind: Service", "metadata:", "name: web", "spec:"]
    helm = 'apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ include "ops.fullname" . }}-db\n'
    assert abstract(helm, "templates/db.yaml") == 'Kubernetes Deployment {{ include "ops.fullname" . }}-db'
    # a label's or an annotation's `name` is not the object's (only `metadata`'s own keys)
    labelled = ("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  labels:\n    name: web-label\n"
                "  annotations:\n    namespace: other\n  name: web\n")
    assert abstract(labelled, "d.yaml") == "Kubernetes Deployment web"
    # a leading comment still speaks first; a YAML file that is no manifest keeps its lines
    assert abstract("# The web tier\n" + text, "web.yml") == "The web tier"
    assert abstract("name: app\nkind: tool\n", "x.yml") == "name: app kind: tool"


def test_an_ansible_file_outlines_every_task_and_a_makefile_its_settings():
    """A comment heading a paragraph had been the paragraph's only outline line: an Ansible
    file's first task and a Makefile's `VERSION = 2.4.0` were left out."""
    tasks = ("---\n# Install nginx and start it\n- name: Install nginx\n  apt:\n    name: nginx\n\n"
             "- name: Start nginx\n  service:\n    name: nginx\n")
    assert overview(tasks, "roles/web/tasks/main.yml").split("\n") == [
        "# Install nginx and start it", "- name: Install nginx", "- name: Start nginx"]
    play = "- hosts: web\n  tasks:\n    - name: Ping\n      ping:\n    - name: Reboot\n      reboot:\n"
    assert overview(play, "site.yml").split("\n") == ["- hosts: web", "- name: Ping", "- name: Reboot"]
    make = "# Build settings\nVERSION = 2.4.0\nNAME = app\n\n# Targets\nall: build\n"
    assert overview(make, "Makefile").split("\n") == ["# Build settings", "VERSION = 2.4.0", "# Targets", "all: build"]


def test_a_manifest_through_the_cli_read_and_found_by_its_kind(ov, tree):
    """The keyword rows' title was each manifest's first line, `apiVersion: apps/v1`; now
    it names the objects, so "kubernetes deployment" finds the Deployments by their words."""
    dep = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: shop-db\nspec:\n  replicas: 1\n"
    root = tree({"k8s/db.yaml": dep, "k8s/svc.yaml": dep.replace("apps/v1", "v1").replace("Deployment", "Service"),
                 "notes.md": "# Notes\n\nnothing about clusters\n"})
    assert ov("index", ".", "--no-embed", cwd=root).code == 0
    assert ov("read", "k8s/db.yaml", "--level", "0", cwd=root).out.strip() == "Kubernetes Deployment shop-db"
    r = ov("search", "kubernetes deployment", "--search-type", "keywords", "-o", "json", cwd=root)
    assert [h["path"] for h in r.json["result"]["hits"]][:1] == ["k8s/db.yaml"], r.out


def test_a_table_of_contents_and_a_roles_boilerplate_say_nothing():
    """An Ansible role's README read "zabbix_server — Table of Contents" (its bold label and
    its entries, links within the page, were its first paragraphs), and `ansible-galaxy
    init`'s `# tasks file for web` was the abstract of 11 files of an ops tree; a tasks
    file now says its tasks."""
    readme = ("# zabbix_server\n\n**Table of Contents**\n\n- [Requirements](#requirements)\n"
              "  - [Operating systems](#operating-systems)\n\nThis role installs Zabbix server.\n\n"
              "## Requirements\n\nA database.\n")
    assert abstract(readme, "roles/zabbix_server/README.md") == "zabbix_server — This role installs Zabbix server."
    assert overview(readme, "roles/zabbix_server/README.md").split("\n") == [
        "# zabbix_server — This role installs Zabbix server.", "  ## Requirements — A database."]
    tasks = "---\n# tasks file for web\n- name: Install nginx\n  apt:\n    name: nginx\n\n- name: \"Start nginx\"\n"
    assert abstract(tasks, "roles/web/tasks/main.yml") == "Tasks: Install nginx; Start nginx"
    # a comment of the author's still speaks first, and a link list that is not a
    # table of contents stays a paragraph
    assert abstract(tasks.replace("tasks file for web", "Web role tasks"), "main.yml") == "Web role tasks"
    assert abstract("# Links\n\n- [Docs](https://example.org)\n", "links.md") == "Links — Docs"


# A polyglot repository's first hour (a review): module docs in each language's own form
# were skipped or kept their marks ("| Money in minor units", "' Merchant cohort retention",
# "(** Reading ... *) type t = ..."), and a definition under a comment (`create table`,
# `service`, `let`) was left out of the outline, which then held the comment alone.
POLYGLOT = {
    "hs/Money.hs": ("-- | Money in minor units (cents), never floating point.\nmodule Money (Money, percentOf) where\n\n"
                    "type Money = Integer\n\n-- | @percentOf p m@ is p percent of m.\npercentOf :: Int -> Money -> Money\n"
                    "percentOf p m = (fromIntegral p * m) `div` 100\n",
                    "Money in minor units (cents), never floating point.",
                    ["module Money (Money, percentOf) — Money in minor units (cents), never floating point.",
                     "type Money = Integer", "percentOf :: Int -> Money -> Money — @percentOf p m@ is p percent of m."]),
    "ml/config.ml": ("(** Reading the fraud service's JSON config file. *)\n\ntype t = { block_score : int }\n\n"
                     "(** [parse_config_file path] reads the config file at [path]. *)\n"
                     "let parse_config_file path = { block_score = String.length path }\n",
                     "Reading the fraud service's JSON config file.",
                     ["type t", "let parse_config_file path — [parse_config_file path] reads the config file at [path]."]),
    "lua/rate_limit.lua": ("--[[\n  Token-bucket rate limiter for the edge proxy, keyed by merchant id.\n]]\nlocal _M = {}\n\n"
                           "--- Take one token from the merchant's bucket.\nfunction _M.take(merchant_id) return true end\n\n"
                           "return _M\n",
                           "Token-bucket rate limiter for the edge proxy, keyed by merchant id.",
                           ["function _M.take(merchant_id) return true end — Take one token from the merchant's bucket."]),
    "r/cohort.R": ("#' Merchant cohort retention.\n#'\n#' Groups merchants by the month of their first payment.\n"
                   "cohort_retention <- function(payments) {\n  payments\n}\n",
                   "Merchant cohort retention. Groups merchants by the month of their first payment.",
                   ["cohort_retention <- function(payments) — Merchant cohort retention."]),
    "lib/retry_policy.ex": ('defmodule Gateway.Payments.RetryPolicy do\n  @moduledoc """\n  Retry policy for failed card '
                            'charges.\n  """\n  def retryable?(_), do: false\n  def with_retries(fun) do\n    fun.()\n  end\nend\n',
                            "Retry policy for failed card charges.",
                            ["defmodule Gateway.Payments.RetryPolicy", "  def retryable?(_)", "  def with_retries(fun)"]),
    "proto/payments.proto": ('// The gRPC contract between the tills and the gateway.\nsyntax = "proto3";\n\n'
                             "// Charges and refunds card payments.\nservice PaymentService {\n"
                             "  rpc Charge(ChargeRequest) returns (ChargeReply);\n}\n"
                             "message ChargeRequest { int64 amount_minor = 1; }\n",
                             "The gRPC contract between the tills and the gateway.",
                             ["service PaymentService — Charges and refunds card payments.",
                              "  rpc Charge(ChargeRequest) returns (ChargeReply)", "message ChargeRequest"]),
    "gql/schema.graphql": ('"""\nThe back-office API.\n"""\n"A card payment taken by a till."\ntype Payment {\n  id: ID!\n}\n',
                           "The back-office API.", ["type Payment"]),
    "jl/Risk.jl": ('"""\n    Risk\n\nMonte Carlo estimates of exposure to merchant insolvency.\n"""\nmodule Risk\n'
                   "function simulate_losses(n::Int=10_000)\n    zeros(n)\nend\nvalue_at_risk(x) = maximum(x)\nend\n",
                   "Monte Carlo estimates of exposure to merchant insolvency.",
                   ["module Risk", "function simulate_losses(n::Int=10_000)", "value_at_risk(x)"]),
    "db/001_merchants.sql": ("-- Merchants: one row per business that takes payments.\ncreate table merchants (\n"
                             "    id uuid primary key\n);\ncreate index merchants_id_idx on merchants (id);\n",
                             "Merchants: one row per business that takes payments.",
                             ["create table merchants — Merchants: one row per business that takes payments.",
                              "create index merchants_id_idx on merchants"]),
    "infra/sqs.tf": ('# Queues between the gateway and the ledger.\nresource "aws_sqs_queue" "payment_events" {\n'
                     '  name = "payment-events"\n}\n\n# Charges whose retries ran out.\n'
                     'resource "aws_sqs_queue" "payment_retries" {\n  name = "payment-retries"\n}\n',
                     "Queues between the gateway and the ledger.",
                     ['resource "aws_sqs_queue" "payment_events" — Queues between the gateway and the ledger.',
                      'resource "aws_sqs_queue" "payment_retries" — Charges whose retries ran out.']),
    "src/hash.zig": ('const std = @import("std");\n\n/// Hashes a file in chunks.\npub fn hashFile(path: []const u8) !u64 {\n'
                     "    return 0;\n}\n",
                     "Hashes a file in chunks.", ["pub fn hashFile(path: []const u8) !u64 — Hashes a file in chunks."]),
}


@pytest.mark.parametrize("path", sorted(POLYGLOT))
def test_module_docs_and_outlines_in_each_languages_own_forms(path):
    text, want_abstract, want_outline = POLYGLOT[path]
    assert abstract(text, path) == want_abstract
    assert overview(text, path).split("\n") == want_outline


@pytest.mark.parametrize(("path", "name", "line"), [
    ("infra/sqs.tf", "payment_retries", 'resource "aws_sqs_queue" "payment_retries" {'),
    ("db/001_merchants.sql", "merchants", "create table merchants ("),
    ("proto/payments.proto", "PaymentService", "service PaymentService {"),
    ("proto/payments.proto", "Charge", "  rpc Charge(ChargeRequest) returns (ChargeReply);"),
    ("hs/Money.hs", "percentOf", "percentOf :: Int -> Money -> Money"),
    ("ml/config.ml", "parse_config_file", "let parse_config_file path = { block_score = String.length path }"),
    ("r/cohort.R", "cohort_retention", "cohort_retention <- function(payments) {"),
    ("lib/retry_policy.ex", "with_retries", "  def with_retries(fun) do"),
    ("jl/Risk.jl", "value_at_risk", "value_at_risk(x) = maximum(x)"),
    ("lua/rate_limit.lua", "take", "function _M.take(merchant_id) return true end"),
])
def test_an_identifier_is_defined_where_each_language_defines_it(path, name, line):
    """`ov search payment_retries` put the one file defining it ninth, under SQL files
    holding its words: no definition in these languages made a file a definer."""
    text = POLYGLOT[path][0]
    at = tiers.defines(text, path, name)
    assert at is not None and text[at:].split("\n", 1)[0] == line


@pytest.mark.parametrize(("path", "text", "want"), [
    # a comment ending as a Lua, OCaml or Haskell block ends is no such block elsewhere
    ("c.c", "/* Looks up table[index[i]] */\nint lookup(int i) { return 0; }\n", "Looks up table[index[i]]"),
    ("s.sh", "#!/bin/sh\n# Runs only when [[ -f config ]]\nset -e\n", "Runs only when [[ -f config ]]"),
    ("p.py", "# Caches results of f(*)\nimport os\n", "Caches results of f(*)"),
    ("j.js", "// Reads opts[keys[0]]\nexport function f() {}\n", "Reads opts[keys[0]]"),
    # Haskell's pragmas are no module doc
    ("Config.hs", "{-# LANGUAGE OverloadedStrings #-}\n{-# LANGUAGE\n    LambdaCase #-}\n-- | Loading the pricing "
                  "rules.\nmodule Pricing.Config (load) where\n", "Loading the pricing rules."),
])
def test_the_new_comment_forms_leave_other_languages_alone(path, text, want):
    """A review of this change: `_comment_text` had cut `]]`, `*)` and `-}` off the end of
    every language's comments (`table[index[i`), and `{-# LANGUAGE ... #-}` had become a
    Haskell file's abstract."""
    assert abstract(text, path) == want


@pytest.mark.parametrize(("path", "text", "name", "outline"), [
    ("W.hs", "module M where\ntotal :: Int\ntotal = 1\n{-\ndata Legacy = Legacy Int\n-}\n", "Legacy",
     "module M\ntotal :: Int"),
    ("a.lua", "local M = {}\nfunction M.take(id)\nend\n--[[\nfunction M.legacy_take(id)\nend\n]]\nreturn M\n",
     "legacy_take", "function M.take(id)"),
    ("a.ml", "let score x = x\n(*\nlet legacy_score x = x\n*)\nlet _ = score 1\n", "legacy_score", "let score x"),
])
def test_code_in_a_block_comment_defines_nothing(path, text, name, outline):
    assert tiers.defines(text, path, name) is None
    assert overview(text, path) == outline


def test_sql_names_an_index_made_concurrently():
    text = "CREATE INDEX CONCURRENTLY IF NOT EXISTS merchants_id ON merchants (id);\n"
    assert tiers.defines(text, "b.sql", "merchants_id") == 0
    assert abstract(text, "b.sql") == "Defines index merchants_id"
