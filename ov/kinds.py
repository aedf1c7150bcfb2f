"""What kind of file a path names: one answer for reading, tiers, chunking, ranking and
every `-t/--type` filter.

Three questions, each asked of the name alone (never the content):
- `kind_of`: "markdown", "rst", "code" or "text" — the rules chunking follows and the
  keyword weight hybrid fusion gives a file;
- `file_type`: the ripgrep-style `-t` type name a file is stored under (`TYPES`), with
  `type_globs`, `type_filter` and `type_names` for the filters built from those names;
- `category`: code, docs, config, data or other, as context mode reports it.

They used to live in `read`, `tiers` and the API; one module keeps the name tables and
their answers together, so a new extension is taught to every command at once. Pure.
"""

from __future__ import annotations

import fnmatch
import functools
import os
import re
from collections.abc import Callable, Sequence

from ov.errors import OvError

# --- kinds of files: the rules chunking follows, the schedule hybrid fusion uses --------
MARKDOWN_EXT = frozenset({".md", ".markdown", ".mdown", ".mkd", ".mdx", ".qmd", ".rmd"})
_RST_EXT = frozenset({".rst", ".rest"})
_CODE_EXT = frozenset(
    """.py .pyi .pyw .pyx .js .mjs .cjs .jsx .ts .mts .cts .tsx .go .rs .java .kt .kts .scala
    .sc .groovy .gradle .c .h .cc .cpp .cxx .c++ .hh .hpp .hxx .h++ .ipp .tpp .inl .ixx .cppm
    .ino .m .mm .cs .fs .fsx
    .vb .swift .rb .rbw .rake .gemspec .erb .rbs .ru .php .phtml .php3 .php4 .php5 .pl .pm .lua .sh .bash .zsh .fish .ksh .ps1 .psm1 .r .jl .dart
    .ex .exs .erl .hrl .hs .ml .mli .clj .cljs .el .lisp .scm .rkt .nim .zig .v .sv .vhd
    .vhdl .sql .proto .graphql .gql .tf .hcl .cmake .mk .make .vue .svelte .astro .sol
    .d .cu .cuh .f .f90 .f95 .pas .ada .adb .ads .asm .s .bat .cmd .awk .sed .tcl .elm .purs
    .json .jsonc .json5 .yaml .yml .toml .ini .cfg .conf .xml .html .htm .xhtml .css .scss
    .sass .less .properties .env .plist .csproj .vcxproj .nix .dhall .cue .jsonnet""".split()
)
_CODE_NAMES = frozenset(
    {"makefile", "gnumakefile", "dockerfile", "containerfile", "rakefile", "gemfile",
     "vagrantfile", "jenkinsfile", "justfile", "cmakelists.txt", "build", "workspace",
     "meson.build", "procfile", "brewfile", "podfile", "fastfile"}
)


def is_notebook(path: str) -> bool:
    """A Jupyter notebook (`.ipynb`): searched as its JSON, embedded and summarised from its
    cells (ov.chunk.notebook_sources, ov.tiers.notebook_text)."""
    return path.lower().endswith(".ipynb")


def kind_of(path: str) -> str:
    """"markdown", "rst", "code" or "text": the rules chunking follows for `path`."""
    name = os.path.basename(path).lower()
    ext = os.path.splitext(name)[1]
    if ext in MARKDOWN_EXT:
        return "markdown"
    if ext in _RST_EXT:
        return "rst"
    if ext in _CODE_EXT or name in _CODE_NAMES or name.startswith(("dockerfile.", "makefile.")):
        return "code"
    return "text"


# --- file types (ripgrep's default type names where they exist) -----------------------
TYPES: dict[str, tuple[str, ...]] = {
    "py": ("*.py", "*.pyi", "*.pyw"),
    "ada": ("*.adb", "*.ads"),
    "asm": ("*.asm", "*.s", "*.S"),
    "awk": ("*.awk",),
    "md": ("*.md", "*.markdown", "*.mdown", "*.mdwn", "*.mkd", "*.mkdn", "*.mdx"),
    "markdown": ("*.md", "*.markdown", "*.mdown", "*.mdwn", "*.mkd", "*.mkdn", "*.mdx"),
    "rst": ("*.rst",),
    "txt": ("*.txt",),
    "js": ("*.js", "*.jsx", "*.mjs", "*.cjs", "*.vue"),
    "ts": ("*.ts", "*.tsx", "*.cts", "*.mts"),
    "go": ("*.go",),
    "rust": ("*.rs",),
    "c": ("*.c", "*.h", "*.H", "*.cats", "*.c.in", "*.h.in", "*.H.in"),
    "cpp": ("*.C", "*.cc", "*.cpp", "*.cxx", "*.c++", "*.h", "*.H", "*.hh", "*.hpp", "*.hxx",
            "*.h++", "*.inl", "*.ipp", "*.C.in", "*.h.in", "*.H.in", "*.cc.in", "*.cpp.in", "*.cxx.in",
            "*.hh.in", "*.hpp.in", "*.hxx.in"),
    # rg's own `h`: headers alone (a `.h` file is stored as `c`, its first type above)
    "h": ("*.h", "*.hpp"),
    "java": ("*.java", "*.jsp", "*.jspx", "*.properties"),
    "kotlin": ("*.kt", "*.kts"),
    "scala": ("*.scala", "*.sbt"),
    "csharp": ("*.cs",),
    "swift": ("*.swift",),
    "ruby": ("*.rb", "*.rbw", "*.gemspec", "Gemfile", ".irbrc", "Rakefile", "config.ru"),
    "erb": ("*.erb",),
    "php": ("*.php", "*.php3", "*.php4", "*.php5", "*.phtml"),
    "lua": ("*.lua",),
    "perl": ("*.pl", "*.pm", "*.t", "*.PL", "*.perl", "*.plh", "*.plx"),
    "sh": ("*.sh", "*.bash", "*.zsh", "*.ksh", ".bashrc", ".bash_profile", ".zshrc",
           ".profile", "*.csh", "*.tcsh", "*.bashrc", "*.cshrc", "*.kshrc", ".bash_login", ".bash_logout",
           ".cshrc", ".kshrc", ".login", ".logout", ".tcshrc", ".zlogin", ".zlogout", ".zprofile", ".zshenv",
           "bash_login", "bash_logout", "bash_profile", "bashrc", "profile", "zlogin", "zlogout", "zprofile",
           "zshenv", "zshrc"),
    "zsh": ("*.zsh", ".zlogin", ".zlogout", ".zprofile", ".zshenv", ".zshrc", "zlogin", "zlogout",
            "zprofile", "zshenv", "zshrc"),
    "fish": ("*.fish",),
    "ps": ("*.ps1", "*.psm1", "*.psd1", "*.cdxml", "*.ps1xml"),
    "r": ("*.R", "*.r", "*.Rmd", "*.Rnw"),
    "julia": ("*.jl",),
    "dart": ("*.dart",),
    "elixir": ("*.ex", "*.eex", "*.exs", "*.heex"),
    "erlang": ("*.erl", "*.hrl"),
    "haskell": ("*.hs", "*.lhs", "*.c2hs", "*.cpphs", "*.hsc"),
    "ocaml": ("*.ml", "*.mli", "*.mll", "*.mly"),
    "clojure": ("*.clj", "*.cljc", "*.cljs", "*.cljx"),
    "elisp": ("*.el",),
    "lisp": ("*.el", "*.jl", "*.lisp", "*.lsp", "*.sc", "*.scm"),
    "zig": ("*.zig",),
    "nim": ("*.nim", "*.nimf", "*.nimble", "*.nims"),
    "sql": ("*.sql", "*.psql"),
    "protobuf": ("*.proto",),
    "svelte": ("*.svelte",),
    "vue": ("*.vue",),
    "html": ("*.htm", "*.html", "*.ejs"),
    "css": ("*.css", "*.scss", "*.sass", "*.less"),
    "less": ("*.less",),  # rg's names for a part of a type above: their files alone
    "sass": ("*.sass", "*.scss"),
    "xml": ("*.xml", "*.xml.dist", "*.dtd", "*.xsl", "*.xslt", "*.xsd", "*.xjb", "*.rng",
            "*.sch", "*.xhtml"),
    "json": ("*.json", "composer.lock", "*.sarif"),
    "jsonl": ("*.jsonl", "*.ndjson"),
    "yaml": ("*.yaml", "*.yml"),
    "toml": ("*.toml", "Cargo.lock"),
    "config": ("*.cfg", "*.conf", "*.config", "*.ini"),
    "csv": ("*.csv",),
    "tsv": ("*.tsv",),
    "make": ("[Gg][Nn][Uu]makefile", "[Mm]akefile", "[Gg][Nn][Uu]makefile.am",
             "[Gg][Nn][Uu]makefile.in", "[Mm]akefile.am", "[Mm]akefile.in", "*.mk", "*.mak"),
    "cmake": ("*.cmake", "CMakeLists.txt"),
    "docker": ("*Dockerfile*",),
    "terraform": ("*.tf", "*.tf.json", "*.tfvars"),
    "nix": ("*.nix",),
    "tex": ("*.tex", "*.ltx", "*.cls", "*.sty", "*.bib", "*.dtx", "*.ins"),
    "asciidoc": ("*.adoc", "*.asc", "*.asciidoc"),
    "org": ("*.org", "*.org_archive"),
    "diff": ("*.patch", "*.diff"),
    "log": ("*.log",),
    "jupyter": ("*.ipynb",),
    "license": ("COPYING", "COPYING[.-]*", "COPYRIGHT", "COPYRIGHT[.-]*", "EULA",
                "EULA[.-]*", "licen[cs]e", "licen[cs]e.*", "LICEN[CS]E", "LICEN[CS]E[.-]*",
                "*[.-]LICEN[CS]E*", "NOTICE", "NOTICE[.-]*", "PATENTS", "PATENTS[.-]*",
                "UNLICEN[CS]E", "UNLICEN[CS]E[.-]*", "AGPL-*[0-9]*", "APACHE-*[0-9]*", "BSD-*[0-9]*",
                "CC-BY-*", "GFDL-*[0-9]*", "GNU-*[0-9]*", "GPL-*[0-9]*", "LGPL-*[0-9]*", "MIT-*[0-9]*",
                "MPL-*[0-9]*", "OFL-*[0-9]*", "agpl[.-]*", "gpl[.-]*", "lgpl[.-]*"),
}

# The rest of ripgrep's default types (`rg --type-list` of ripgrep 13), with its globs, so
# that an `rg -t NAME` habit works in every ov command (`fut` as ripgrep spells it since:
# `*.fut`, where 13 had `.fut`). They come after the types above:
# a file one of those takes keeps its type (a `.cs` file is `csharp`, a `.min.js` file
# `js`; `-t cs` and `-t minified` still select them, see `type_filter`). An index written
# before these names existed stored their files with no type (""): see `ADDED_TYPES`.
_RG_MORE: dict[str, tuple[str, ...]] = {
    "agda": ("*.agda", "*.lagda"), "aidl": ("*.aidl",), "amake": ("*.bp", "*.mk"),
    "asp": ("*.ascx", "*.ascx.cs", "*.ascx.vb", "*.aspx", "*.aspx.cs", "*.aspx.vb"),
    "ats": ("*.ats", "*.dats", "*.hats", "*.sats"), "avro": ("*.avdl", "*.avpr", "*.avsc"),
    "bazel": ("*.BUILD", "*.bazel", "*.bazelrc", "*.bzl", "BUILD", "WORKSPACE"),
    "bitbake": ("*.bb", "*.bbappend", "*.bbclass", "*.conf", "*.inc"), "brotli": ("*.br",),
    "buildstream": ("*.bst",), "bzip2": ("*.bz2", "*.tbz2"), "cabal": ("*.cabal",), "cbor": ("*.cbor",),
    "ceylon": ("*.ceylon",), "coffeescript": ("*.coffee",), "coq": ("*.v",), "creole": ("*.creole",),
    "crystal": ("*.cr", "Projectfile"), "cs": ("*.cs",), "cshtml": ("*.cshtml",),
    "cython": ("*.pxd", "*.pxi", "*.pyx"), "d": ("*.d",), "dhall": ("*.dhall",),
    "dvc": ("*.dvc", "Dvcfile"), "ebuild": ("*.ebuild",), "edn": ("*.edn",), "elm": ("*.elm",),
    "fidl": ("*.fidl",), "flatbuffers": ("*.fbs",),
    "fortran": ("*.F", "*.F77", "*.F90", "*.F95", "*.f", "*.f77", "*.f90", "*.f95", "*.pfo"),
    "fsharp": ("*.fs", "*.fsi", "*.fsx"), "fut": ("*.fut",),
    "gap": ("*.g", "*.gap", "*.gd", "*.gi", "*.tst"), "gn": ("*.gn", "*.gni"), "gradle": ("*.gradle",),
    "groovy": ("*.gradle", "*.groovy"), "gzip": ("*.gz", "*.tgz"), "haml": ("*.haml",), "hbs": ("*.hbs",),
    "hs": ("*.hs", "*.lhs"), "idris": ("*.idr", "*.lidr"), "jinja": ("*.j2", "*.jinja", "*.jinja2"),
    "jl": ("*.jl",), "k": ("*.k",), "lock": ("*.lock", "package-lock.json"), "lz4": ("*.lz4",),
    "lzma": ("*.lzma",), "m4": ("*.ac", "*.m4"), "mako": ("*.mako", "*.mao"),
    "man": ("*.[0-9][cEFMmpSx]", "*.[0-9lnpx]"), "matlab": ("*.m",),
    "meson": ("meson.build", "meson_options.txt"), "minified": ("*.min.css", "*.min.html", "*.min.js"),
    "mint": ("*.mint",), "mk": ("mkfile",), "ml": ("*.ml",),
    "msbuild": ("*.csproj", "*.fsproj", "*.proj", "*.props", "*.targets", "*.vcxproj"),
    "objc": ("*.h", "*.m"), "objcpp": ("*.h", "*.mm"),
    "pascal": ("*.dpr", "*.inc", "*.lpr", "*.pas", "*.pp"), "pdf": ("*.pdf",), "po": ("*.po",),
    "pod": ("*.pod",), "postscript": ("*.eps", "*.ps"), "puppet": ("*.erb", "*.pp", "*.rb"),
    "purs": ("*.purs",), "qmake": ("*.prf", "*.pri", "*.pro"), "qml": ("*.qml",), "racket": ("*.rkt",),
    "rdoc": ("*.rdoc",), "readme": ("*README", "README*"), "red": ("*.r", "*.red", "*.reds"),
    "robot": ("*.robot",), "slim": ("*.skim", "*.slim", "*.slime"), "smarty": ("*.tpl",),
    "sml": ("*.sig", "*.sml"), "soy": ("*.soy",), "spark": ("*.spark",), "spec": ("*.spec",),
    "stylus": ("*.styl",), "sv": ("*.h", "*.sv", "*.svh", "*.v", "*.vg"), "svg": ("*.svg",),
    "swig": ("*.def", "*.i"),
    "systemd": ("*.automount", "*.conf", "*.device", "*.link", "*.mount", "*.path", "*.scope", "*.service",
                "*.slice", "*.socket", "*.swap", "*.target", "*.timer"),
    "taskpaper": ("*.taskpaper",), "tcl": ("*.tcl",), "textile": ("*.textile",), "tf": ("*.tf",),
    "thrift": ("*.thrift",), "twig": ("*.twig",), "typoscript": ("*.ts", "*.typoscript"),
    "vala": ("*.vala",), "vb": ("*.vb",), "vcl": ("*.vcl",), "verilog": ("*.sv", "*.svh", "*.v", "*.vh"),
    "vhdl": ("*.vhd", "*.vhdl"), "vim": ("*.vim",), "vimscript": ("*.vim",),
    "webidl": ("*.idl", "*.webidl", "*.widl"), "wiki": ("*.mediawiki", "*.wiki"), "xz": ("*.txz", "*.xz"),
    "yacc": ("*.y",), "yang": ("*.yang",), "z": ("*.Z",), "zstd": ("*.zst", "*.zstd"),
}
TYPES.update(_RG_MORE)
# Types an index written by an earlier ov stored no file under: it stored their files with
# no type, so a ranked search's `-t` reads every file by name for them (`type_filter`), and
# `-t gradle` finds a build script indexed before ov knew the name, without an `ov index`.
# Files of theirs an earlier type claims are stored under it (README.md as `md`, Cargo.lock
# as `toml`), which the name reads as well.
ADDED_TYPES = frozenset(_RG_MORE)


_EXTENSION = re.compile(r"(?:\.[A-Za-z0-9_+~-]{1,32}){1,3}")  # `.canvas`, `.d.ts`, `.min.js`


def type_globs(name: str) -> tuple[str, ...]:
    """The globs of a `-t/--type` name, or of an extension given with its dot (`.canvas`,
    as `type_names` gives one no type holds); anything else is an `invalid_argument`."""
    if name in TYPES:
        return TYPES[name]
    if _EXTENSION.fullmatch(name):
        return (f"*{name}",)
    raise _unknown_type(name, "or an extension such as .canvas", "type")


def _unknown_type(raw: str, more: str, field: str) -> OvError:
    """`invalid_argument` for a `-t`/`-T` name no type has: the closest names first (the
    known ones are many), then every known name (an `ov mcp` client reads no --type-list),
    and `more`."""
    import difflib  # noqa: PLC0415

    near = difflib.get_close_matches(raw.strip().lstrip("."), list(TYPES), n=3, cutoff=0.75)
    hint = f"did you mean {' or '.join(near)}? " if near else ""
    return OvError("invalid_argument", f"unknown file type {raw!r} ({hint}known: {', '.join(sorted(TYPES))}; "
                   f"{more})", field=field)


def file_type(path: str) -> str:
    """The first type in `TYPES` whose globs match the file name; "" when none does."""
    m = _types_re().fullmatch(os.path.basename(path))
    return _TYPE_NAMES[int(m.lastgroup[1:])] if m else ""


_TYPE_NAMES = tuple(TYPES)


@functools.cache
def _types_re() -> re.Pattern:
    """Every type's globs in one expression, a named group a type, in `TYPES`' order: the
    first alternative that matches the whole name is taken, as the first type one of whose
    globs matches. `file_type` and `category` ask it of every file an index run reads:
    190 `fnmatchcase` calls took 21 us a name of the kernel's, the expression 3.9 us (4.1 us
    with rg's types added: 433 globs)."""
    groups = ("|".join(fnmatch.translate(g).removesuffix("\\Z") for g in globs) for globs in TYPES.values())
    return re.compile("|".join(f"(?P<t{i}>{alts})" for i, alts in enumerate(groups)))


def _sample(glob: str) -> str:
    """A file name the glob matches: `*` as "x", a `[...]` class as its first character."""
    return re.sub(r"\[!?([^\]])[^\]]*\]", r"\1", glob).replace("*", "x").replace("?", "x")


def type_filter(names) -> tuple[tuple[str, ...] | None, tuple[str, ...]]:
    """What `-t NAME...` (names of `TYPES`, OR-ed) asks of an index: (the stored types,
    the name globs). An index stores one type a file, `file_type`'s first match, so
    `markdown` files are stored as `md`, `.h` files as `c` and `.vue` files as `js`. The
    stored types are those of the names' files; where one of them also holds files none of
    the names covers (`c` for `-t cpp`: its `.c` files), the globs come too, and a file
    must then match one of them by name; else the globs are (). A name of `ADDED_TYPES`, an
    extension one of them holds (`.gradle`), or a name with a glob whose files may end in
    any extension (`license`'s `COPYING[.-]*`) reads every file by its name: the stored
    types are None (any), as an index may hold such a file under any type that claims it
    first (COPYING.md as `md`), or with none (written before ov knew the name). The
    globs then select the files: a scan of the files' names, and for the vectors the
    passages of the files selected (slower than a stored type on a big tree).

    Both `ov grep -t` and the ranked searches read `TYPES`, so they accept the same names
    and select the same files."""
    wanted: set[str] = set()
    stored: dict[str, None] = {}
    exact, anywhere = True, False
    for name in names:
        globs = type_globs(name)
        wanted.update(globs)
        anywhere |= name in ADDED_TYPES
        for g in globs:
            # an extension no type holds: its files are stored with no type (""), among
            # every other such file, so its glob must select them
            exact &= name in TYPES
            sampled = file_type(_sample(g))
            stored.setdefault(sampled or (name if name in TYPES else ""), None)
            # a glob whose names may end in any extension (`README*`, `COPYING[.-]*`): an
            # earlier type may hold some of its files (LICENSE.md is `md`), the sample not
            anywhere |= sampled in ADDED_TYPES or any(c in g.lstrip("*") for c in "*?")
    if anywhere:
        return None, tuple(sorted(wanted))
    exact = exact and all(set(TYPES.get(t, ())) <= wanted for t in stored)
    return tuple(stored), (() if exact else tuple(sorted(wanted)))


_CATEGORY_BY_TYPE = {
    "md": "docs", "markdown": "docs", "rst": "docs", "txt": "docs", "tex": "docs",
    "asciidoc": "docs", "org": "docs", "license": "docs", "html": "docs",
    "json": "config", "yaml": "config", "toml": "config", "config": "config",
    "docker": "config", "make": "config", "cmake": "config", "terraform": "config",
    "nix": "config",
    "csv": "data", "tsv": "data", "jsonl": "data", "xml": "data", "log": "data",
    "jupyter": "code", "diff": "other",
}
_DOC_NAMES = re.compile(r"^(readme|changelog|changes|history|news|authors|contributing|"
                        r"contributors|code_of_conduct|security|todo|install|usage|faq)"
                        r"(\.[\w.-]+)?$", re.I)
_CONFIG_NAMES = re.compile(r"^(\.(editorconfig|gitignore|gitattributes|gitmodules|ignore|"
                           r"ovignore|dockerignore|npmrc|env(\..+)?|[\w-]+rc)|"
                           r"[\w.-]+\.(env|lock|properties|plist))$", re.I)
_DATA_EXT = frozenset(".csv .tsv .jsonl .ndjson .parquet .arrow .feather .avro .orc .dat "
                      ".npy .npz .h5 .hdf5 .sqlite .db .xlsx .xls .ods .geojson .pkl "
                      ".pickle .bin .gz .zip .tar .xz .bz2 .zst .7z .jpg .jpeg .png .gif "
                      ".webp .svg .pdf .wav .mp3 .mp4".split())


def category(path: str) -> str:
    """"code", "docs", "config", "data" or "other", from the file's name."""
    name = os.path.basename(path)
    ext = os.path.splitext(name)[1].lower()
    if _DOC_NAMES.match(name):
        return "docs"
    if _CONFIG_NAMES.match(name):
        return "config"
    if ext in _DATA_EXT:
        return "data"
    t = file_type(path)
    if t and t not in ADDED_TYPES:  # (an added type's file is categorised as before it)
        return _CATEGORY_BY_TYPE.get(t, "code")
    return "code" if kind_of(path) == "code" else "other"


def type_matcher(types: Sequence[str], types_not: Sequence[str] = ()) -> Callable[[str], bool]:
    """A predicate on root-relative paths: the file name matches one of `types`' globs (any
    name when none is given) and none of `types_not`'s (grep's `-T`, as rg's: it wins over
    `-t`, so `-t c -T h` leaves out the `.h` files)."""
    from wcmatch import fnmatch as wc_fnmatch  # noqa: PLC0415 - grep -t alone pays for it

    def compiled(names: Sequence[str], field: str):
        globs = [g for t in type_names(names, field) for g in type_globs(t)]  # extensions too, as the ranked searches
        return wc_fnmatch.compile(globs, flags=wc_fnmatch.BRACE | wc_fnmatch.DOTMATCH) if globs else None

    want, refuse = compiled(types, "type"), compiled(types_not, "type_not")

    def keep(rel: str) -> bool:
        name = rel.rsplit("/", 1)[-1]
        return (want is None or want.match(name)) and (refuse is None or not refuse.match(name))

    return keep


def type_names(types: Sequence[str] | None, field: str = "type") -> list[str]:
    """`-t` values: a file type name or an extension. An extension given with its dot
    stands for itself (`.tsx`: `*.tsx`, not every TypeScript file; `.d.ts`, `.canvas`); a
    bare extension of one of ov's own types is that type (`yml`: `yaml`; not of a type
    learnt from rg, which refuses such a name: `inc` is no bitbake), while any other bare
    name is refused (a misspelt type would select nothing; `d.ts` was read as `ts`),
    saying how to ask for the extension."""
    if not types:
        return []
    names = []
    for raw in types:
        t = raw.strip().lstrip(".")
        if raw.strip().startswith(".") and _EXTENSION.fullmatch("." + t):
            names.append("." + t)  # (`.ts` too: `*.ts`, not the `ts` type's .tsx, .cts, .mts)
            continue
        if t in TYPES:
            names.append(t)
            continue
        guessed = "" if "." in t else file_type(f"x.{t}")
        # (not into a type learnt from rg, which refuses such a name: `inc` is no bitbake)
        if guessed and guessed != "other" and guessed not in ADDED_TYPES:
            names.append(guessed)
        else:
            ext = f"files named *.{t}: .{t}" if _EXTENSION.fullmatch("." + t) else "or an extension such as .canvas"
            raise _unknown_type(raw, ext, field)
    return names
