from __future__ import annotations

from django.db import models

from rootcause.catalogue import SEVERITIES


class Entry(models.Model):
    """One failure class of the catalogue. `data` is the whole validated YAML entry.

    slug, title, category, severity and tags are copies of fields in `data`, kept as columns so the
    list pages and the API can filter and order without decoding every entry.
    """

    slug = models.SlugField(max_length=100, unique=True)
    title = models.CharField(max_length=200)
    category = models.CharField(max_length=32)
    # the values the catalogue schema allows (a change there is a migration here)
    severity = models.CharField(max_length=8, choices=[(s, s.capitalize()) for s in SEVERITIES])
    tags = models.JSONField(default=list)
    data = models.JSONField()
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name_plural = "entries"
        ordering = ["category", "slug"]
        indexes = [
            # The encyclopedia list filtered by category (API ?category= and the index page).
            models.Index(fields=["category", "slug"], name="entry_category_slug"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(severity__in=list(SEVERITIES)),
                name="entry_severity_valid",
            )
        ]

    def __str__(self) -> str:
        return self.slug


class CatalogueVersion(models.Model):
    """Append-only history of catalogue versions; the newest row is the current catalogue.

    The version string is `catalogue_files.catalogue_version()` of the loaded entries, so it changes
    with the fingerprints, fixes and verifications. Each diagnosis records the version it ran with.
    """

    version = models.CharField(max_length=32)
    created_at = models.DateTimeField(auto_now_add=True)
    entry_count = models.PositiveIntegerField()
    reason = models.CharField(max_length=200, blank=True)

    class Meta:
        ordering = ["-id"]
        get_latest_by = "id"

    def __str__(self) -> str:
        return f"{self.version} ({self.created_at:%Y-%m-%d %H:%M})"
