"""The package's version, in a module of its own: the server's ``/schema``
reports it without importing the package that imports the server."""

__version__ = "0.1.0"
