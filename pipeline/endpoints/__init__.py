"""Everything that talks HTTP to a served model, and the panels that say which ones.

Modules: client (OpenAI-compatible chat client on aiohttp), wire (request bodies and reply
parsing), http_status (status -> exception policy), errors (the rooted exception tree),
retry (the one tenacity policy), limits (per-endpoint rpm/tpm/concurrency), usage (usage and
cost dialects), probe (capability verdicts), catalog and panels (snapshot, recency rule,
panel kinds), local (managed llama.cpp servers), sim and sim_process (simulated endpoints,
serving a study's `pipeline.simulated.SimBehaviour`).

Nothing is re-exported here on purpose: `pipeline.chat.errors` must stay importable by
the pure protocol layer without pulling in aiohttp.
"""

__all__: list[str] = []
