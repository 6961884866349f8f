"""The clients: `Client`, `AsyncClient`, their resources, streams and batch senders (shells over the core).
"""
