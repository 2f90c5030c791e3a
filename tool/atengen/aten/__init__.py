"""The in-tree emitters of `generate`: per-key registration shards, custom namespaces' schemas and headers, kernel-signature sources."""
