"""The transports: they move bytes and nothing else (httpx and aiohttp backends, deadlines, redirects,
bounded body reading). Imports only the core.
"""
