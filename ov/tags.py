"""Tags: strict `k=v` pairs, one parser for every command that takes them (`ov tag`,
and `--tags` filters of search, find, grep and glob). Light: grep imports it."""

from __future__ import annotations

import re

from ov.errors import OvError

_TAG_KEY = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.:-]*")
_BAD_VALUE = re.compile("[\x00-\x1f\x7f\ud800-\udfff]")


def parse_tags(items) -> tuple[tuple[str, str], ...]:
    """Strict `k=v` tags; a bare word or an empty key is refused, naming the tag. The
    library also takes (key, value) pairs and a lone "k=v" string; they are checked the
    same way (a pair's key was stored unchecked: a space, a newline, an empty key)."""
    if isinstance(items, dict):  # {key: value}: its pairs
        items = list(items.items())
    if isinstance(items, str) or (isinstance(items, tuple) and len(items) == 2
                                   and all(isinstance(x, str) for x in items) and "=" not in items[0]):
        items = [items]  # one "k=v", or one (key, value) pair
    if items is not None and not isinstance(items, (list, tuple, set, frozenset)):
        raise OvError("invalid_argument", f"invalid tags {items!r}: give key=value strings or "
                      "(key, value) pairs of strings", field="tags")
    out = []
    for item in items or []:
        if isinstance(item, (tuple, list)) and len(item) == 2 and all(isinstance(x, str) for x in item):
            k, sep, v = item[0], "=", item[1]
        elif isinstance(item, str):
            k, sep, v = item.partition("=")
        else:
            raise OvError("invalid_argument", f"invalid tag {item!r}: give key=value strings or "
                          "(key, value) pairs of strings", field="tags")
        if not sep or not k or not _TAG_KEY.fullmatch(k):
            raise OvError("invalid_argument",
                          f"invalid tag {item!r}: tags are key=value with a key of letters, digits, "
                          "'_', '.', ':' or '-'", field="tags")
        if _BAD_VALUE.search(v):  # a control character, or bytes that are not UTF-8
            raise OvError("invalid_argument", f"invalid tag {item!r}: a value holds no control "
                          "characters and is UTF-8", field="tags")
        out.append((k, v))
    return tuple(out)


def parse_filters(items) -> tuple[tuple[str, str], ...]:
    """`--tags` filters: `k=v`, matched exactly. Front matter stores keys `ov tag` would
    refuse (`área`, `owner name`) and empty values (`draft=`), and a filter must reach
    them: any key but an empty one, any value, neither with a control character. One
    reading for every command (grep and glob trimmed and refused an empty value; search
    and find did the reverse)."""
    if isinstance(items, dict):  # {key: value}: its pairs
        items = list(items.items())
    if isinstance(items, str) or (isinstance(items, tuple) and len(items) == 2
                                   and all(isinstance(x, str) for x in items) and "=" not in items[0]):
        items = [items]  # one "k=v", or one (key, value) pair
    out = []
    for item in items or []:
        if isinstance(item, (tuple, list)) and len(item) == 2 and all(isinstance(x, str) for x in item):
            item = f"{item[0]}={item[1]}"  # the library's (key, value) form
        if not isinstance(item, str):
            raise OvError("invalid_argument", f"invalid tag filter {item!r}: give key=value strings "
                          "or (key, value) pairs", field="tags")
        k, sep, v = item.partition("=")
        if not sep or not k or _BAD_VALUE.search(item):
            raise OvError("invalid_argument", f"invalid tag filter {item!r}: use key=value (no control "
                          "characters; matched exactly)", field="tags")
        out.append((k, v))
    return tuple(out)
