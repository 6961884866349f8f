"""The docs generator: every Markdown block that comes from data, rebuilt from the data by `tools/gen_docs.py`.

A page marks such a block `<!-- generated: NAME -->` ... `<!-- end generated -->` (on their own lines around a
table or code fence, or inline around a number); `BLOCKS` maps NAME to the function that writes its text.
"""

from .blocks import BLOCKS
from .engine import PAGES, Stale, find_stale, regenerate, rewrite

__all__ = ["BLOCKS", "PAGES", "Stale", "find_stale", "regenerate", "rewrite"]
