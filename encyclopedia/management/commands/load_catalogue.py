from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from encyclopedia import services
from rootcause.catalogue import CatalogueError


class Command(BaseCommand):
    help = "Load rootcause/catalogue/entries/*.yaml into the database (idempotent)."

    def handle(self, *args: object, **options: object) -> None:
        try:
            report = services.load_catalogue()
        except CatalogueError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(
            f"catalogue {report.version}: {len(report.created)} created, "
            f"{len(report.updated)} updated, {len(report.deleted)} deleted, "
            f"{report.unchanged} unchanged" + (" (new version)" if report.version_changed else "")
        )
