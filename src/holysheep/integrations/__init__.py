"""Integrations with other frameworks, each behind its own extra (``holysheep[ray]``).

Nothing here is imported by ``import holysheep``; import the submodule you need, e.g.
``from holysheep.integrations.ray import build_processor``.
"""
