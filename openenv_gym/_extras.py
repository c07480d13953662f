"""Optional dependencies: one error that names what is really missing.

A feature behind an extra imports its dependencies at module level and turns
a failure into :func:`missing_extra`'s error, which names the module that
could not be imported (often not the one the feature is about: PettingZoo's
chess imports ``pygame``) and the extra that installs it:

    >>> try:
    ...     import not_a_real_module
    ... except ImportError as exc:
    ...     error = missing_extra(exc, "the demo feature", "chess")
    >>> print(error)
    the demo feature needs the module 'not_a_real_module', which is not installed: pip install 'openenv-gym[chess]'
"""

from __future__ import annotations

__all__ = ["missing_extra"]


def missing_extra(exc: ImportError, feature: str, extra: str) -> ImportError:
    """An :class:`ImportError` for ``feature``, naming the module ``exc`` could not
    import and the extra to install. Raise it ``from exc``."""
    missing = f"the module {exc.name!r}, which is not installed" if exc.name else f"a module ({exc})"
    return ImportError(
        f"{feature} needs {missing}: pip install 'openenv-gym[{extra}]'", name=exc.name
    )
