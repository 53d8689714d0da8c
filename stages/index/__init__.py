"""The index flow's stages: discover -> parse (entities, facts, graph edges) -> embed -> store (catalog, BM25, vectors)."""
