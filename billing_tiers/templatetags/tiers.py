"""`{% load tiers %}`: tier labels for pages of other apps, read from the tier table, so that no
template outside billing_tiers names a tier.

`{% unlocking_tier "alerts" %}`: the label of the lowest tier with that feature.
`{% evaluation_tier %}`: the label of the tier an evaluation code opens.
"""

from __future__ import annotations

from django import template

from billing_tiers import tiers

register = template.Library()


@register.simple_tag
def unlocking_tier(feature: tiers.Feature) -> str:
    return tiers.unlocking_label(feature)


@register.simple_tag
def evaluation_tier() -> str:
    return tiers.evaluation_tier().label
