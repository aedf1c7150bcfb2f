"""The store: the only SQL in `ov` (tests/test_one_home.py holds it).

- `db`: the index file — connecting, the schema and its migrations, the index's own files,
  transactions, SQLite's errors as `OvError`s;
- `queries`: `Store`, an open index with every query the commands run, and `Filters`
  turned into SQL inside each branch;
- `text`: what the keyword and trigram rows hold, and user text quoted for FTS5;
- `vectors`: the index's vectors held in memory, answering as sqlite-vec does;
- `warm`: a `Store` that remembers the facts every ranked query re-reads until the index
  changes, and may hold the vectors (for a long-lived `ov.Index`);
- `searched`: the vectors searches computed for themselves while the index's own are still
  coming, kept beside the index for the searches after them.

The keyword ranking's arithmetic is `ov.bm25`, beside `ov.rank`, not here. This package
re-exports what the rest of `ov` uses, so callers say `from ov.store import Store`.
"""

from ov.store.db import (DIM, KNN_MAX, NO_VECTOR, REPAIR_ADVICE, SCHEMA_VERSION, SENTENCE_LEVEL,
                         connect, damaged, driver_name, map_error, prepare_index_dir,
                         salvage_file_meta, sqlite_errors)
from ov.store.queries import ChunkRow, Filters, Store
from ov.store.searched import SearchedVectors
from ov.store.text import camel_words, fts_phrase, keyword_text, or_phrases, title_of, trigram_doc

__all__ = ["DIM", "KNN_MAX", "NO_VECTOR", "REPAIR_ADVICE", "SCHEMA_VERSION", "SENTENCE_LEVEL",
           "ChunkRow", "Filters", "SearchedVectors", "Store", "camel_words", "connect", "damaged", "driver_name", "fts_phrase",
           "keyword_text", "map_error", "or_phrases", "prepare_index_dir", "salvage_file_meta",
           "sqlite_errors", "title_of", "trigram_doc"]
