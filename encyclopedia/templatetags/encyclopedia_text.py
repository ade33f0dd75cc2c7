from __future__ import annotations

import re

from django import template
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

register = template.Library()

_CODE_SPAN = re.compile(r"`([^`\n]+)`")


@register.filter
def inline_code(text: str) -> SafeString:
    """Entry prose marks code with backticks; show those spans as <code>. Escapes everything."""
    # Escaping first means the only markup in the result is the <code> tags added here.
    return mark_safe(_CODE_SPAN.sub(r"<code>\1</code>", escape(text)))  # noqa: S308
