"""Tags: strict `k=v` pairs, one parser for every command that takes them (`ov tag`,
and `--tags` filters of search, find, grep and glob). Light: grep imports it."""

from __future__ import annotations

import re

from ov.errors import OvError

_TAG_KEY = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.:-]*")
_BAD_VALUE = re.compile("[\x00-\x1f\x7f\ud800-\udfff]")


def _pairs(items, what: str) -> list[tuple[object, str, str]]:
    """(item as given, key, value) of each tag in the forms the library takes: "k=v"
    strings, (key, value) pairs of strings, a {key: value} dict, or one string or pair
    alone; `invalid_argument` for anything else. The key and value are not checked yet."""
    if isinstance(items, dict):
        items = list(items.items())
    if isinstance(items, str) or (isinstance(items, tuple) and len(items) == 2
                                   and all(isinstance(x, str) for x in items) and "=" not in items[0]):
        items = [items]
    if items is not None and not isinstance(items, (list, tuple, set, frozenset)):
        items = [items]  # refused below, by name
    out = []
    for item in items or []:
        if isinstance(item, (tuple, list)) and len(item) == 2 and all(isinstance(x, str) for x in item):
            out.append((item, item[0], "=" + item[1]))
        elif isinstance(item, str):
            k, sep, v = item.partition("=")
            out.append((item, k, sep + v))
        else:
            raise OvError("invalid_argument", f"invalid {what} {item!r}: give key=value strings or "
                          "(key, value) pairs of strings", field="tags")
    return out


def parse_tags(items) -> tuple[tuple[str, str], ...]:
    """Strict `k=v` tags; a bare word or an empty key is refused, naming the tag. The
    library's other forms (`_pairs`) are checked the same way (a pair's key was stored
    unchecked: a space, a newline, an empty key)."""
    out = []
    for item, k, sv in _pairs(items, "tag"):
        if not sv or not k or not _TAG_KEY.fullmatch(k):
            raise OvError("invalid_argument",
                          f"invalid tag {item!r}: tags are key=value with a key of letters, digits, "
                          "'_', '.', ':' or '-'", field="tags")
        if _BAD_VALUE.search(sv):  # a control character, or bytes that are not UTF-8
            raise OvError("invalid_argument", f"invalid tag {item!r}: a value holds no control "
                          "characters and is UTF-8", field="tags")
        out.append((k, sv[1:]))
    return tuple(out)


def parse_filters(items) -> tuple[tuple[str, str], ...]:
    """`--tags` filters: `k=v`, matched exactly. Front matter stores keys `ov tag` would
    refuse (`área`, `owner name`) and empty values (`draft=`), and a filter must reach
    them: any key but an empty one, any value, neither with a control character. One
    reading for every command (grep and glob trimmed and refused an empty value; search
    and find did the reverse)."""
    out = []
    for item, k, sv in _pairs(items, "tag filter"):
        if not sv or not k or _BAD_VALUE.search(k) or _BAD_VALUE.search(sv):
            raise OvError("invalid_argument", f"invalid tag filter {item!r}: use key=value (no control "
                          "characters; matched exactly)", field="tags")
        out.append((k, sv[1:]))
    return tuple(out)
