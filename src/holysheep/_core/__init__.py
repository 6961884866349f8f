"""The sans-I/O core: every decision of a call, as pure code (no sockets, no event loop).

Request specs and argument checks, settings, one call's retry and error decisions, SSE decoding and stream
state, strict schemas for structured outputs, key hygiene. Imports only the bottom layer and `types`.
"""
