"""The one place the package version is defined (read by hatchling and at run time)."""

__version__ = "0.1.0"
