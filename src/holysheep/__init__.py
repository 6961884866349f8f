"""holysheep: the Python SDK for the HolySheep multi-model inference API."""

from ._exceptions import *  # noqa: F403
from ._exceptions import __all__ as _exc_all
from ._version import __version__

__all__ = ["__version__", *_exc_all]
