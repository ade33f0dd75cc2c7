"""`{% bundle_upload_limits as bundle %}`: the paste box (_paste.html, on the home page and the
encyclopedia's entries) says and pre-checks a bundle's limits without each view passing them."""

from __future__ import annotations

from django import template

from diagnosis.bundles import UploadLimits, upload_limits

register = template.Library()


@register.simple_tag(name="bundle_upload_limits")
def bundle_upload_limits_tag() -> UploadLimits:
    return upload_limits()


@register.filter(name="thousands")
def thousands(value: int) -> str:
    """20000 as 20,000 (the page's pre-check writes counts the same way)."""
    return f"{value:,}"
