-- vectorport pgvector catalog, version 1: one row per collection (table) in this schema.
--
-- vectorport applies the files of this folder in order, in one transaction holding an advisory
-- lock, with the collection's schema first on search_path (so the names below land in that
-- schema), and records each one in vectorport_migrations (version, name, sha256, applied_at).
-- Never edit an applied file: add 0002_….sql instead.

CREATE TABLE IF NOT EXISTS vectorport_collections (
    table_name           text COLLATE "C" PRIMARY KEY,
    dimension            integer NOT NULL CHECK (dimension BETWEEN 1 AND 16000),
    metric               text NOT NULL CHECK (metric IN ('cosine', 'euclidean', 'dot')),
    embedding_model      text,
    index_kind           text NOT NULL CHECK (index_kind IN ('hnsw', 'exact')),
    hnsw_m               integer CHECK (hnsw_m BETWEEN 2 AND 100),
    hnsw_ef_construction integer CHECK (hnsw_ef_construction BETWEEN 4 AND 1000),
    text_search_config   text NOT NULL DEFAULT 'english',
    created_at           timestamptz NOT NULL DEFAULT now(),
    CHECK ((index_kind = 'hnsw') = (hnsw_m IS NOT NULL AND hnsw_ef_construction IS NOT NULL))
);

COMMENT ON TABLE vectorport_collections IS
    'vectorport: the dimension, metric, embedding model and index settings of each collection table; '
    'opening a collection with another dimension or metric is refused.';
