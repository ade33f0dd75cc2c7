"""The errors of reading a bundle, as the CLI and the API map them: 400 and 413."""

from __future__ import annotations


class BundleError(ValueError):
    """The bundle cannot be read (not a bundle, a malformed archive, a refused pickle): a 400."""

    status = 400


class BundleTooLarge(BundleError):
    """A limit on sizes, counts or archive expansion was passed: a 413, checked before reading
    (or, for what an archive does not declare, the moment the limit is crossed)."""

    status = 413
