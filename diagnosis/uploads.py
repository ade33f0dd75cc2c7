"""What a submission sends: the log and its metadata from a raw body, a multipart form (a log
or a bundle's files) or a JSON document, and the metadata's names, headers and schemas as the API
document gives them."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import cast
from urllib.parse import unquote

from django.core.files.uploadedfile import UploadedFile
from django.http import QueryDict
from rest_framework.exceptions import UnsupportedMediaType
from rest_framework.request import Request

from diagnosis.bundles import HEAD_BYTES
from diagnosis.intake import body_chunks
from diagnosis.serializers import (
    RUN_URL_PATTERN,
    DiagnosisSubmissionSerializer,
    SubmissionMetadataSerializer,
)
from diagnosis.services import JobMetadata
from plumbing.problems import ApplicationError
from rootcause.hangs import is_archive

METADATA_HEADERS = {
    "filename": ("X-Rootcause-Filename", "The log's file name."),
    "job": ("X-Rootcause-Job", "The CI job's name."),
    "run_url": ("X-Rootcause-Run-Url", "The CI run's address (http or https)."),
    "commit": ("X-Rootcause-Commit", "The commit that was built."),
    "labels": ("X-Rootcause-Labels", "Labels, comma-separated."),
}
# The metadata's values as the document gives them, in a form and in the headers (the JSON form's
# are its component's). Each is held to the validation's bounds: SubmissionMetadataSerializer.
_RUN_URL_SCHEMA: dict[str, object] = {
    "oneOf": [
        {"type": "string", "pattern": RUN_URL_PATTERN, "maxLength": 500},
        {"type": "string", "maxLength": 0},
    ]
}
METADATA_SCHEMAS: dict[str, dict[str, object]] = {
    "filename": {"type": "string", "maxLength": 255},
    "job": {"type": "string", "maxLength": 200},
    "run_url": _RUN_URL_SCHEMA,
    "commit": {"type": "string", "maxLength": 100},
    # Up to 20, comma-separated, each at most 100 characters; blank ones are left out.
    "labels": {"type": "string", "pattern": "^[^,]{0,100}(?:,[^,]{0,100}){0,19}$"},
}
# Bodies read as the log itself, streamed. curl's --data-binary sends a form content type unless
# told otherwise, and a log is never a form: read that as the log too.
RAW_MEDIA_TYPES = (
    "application/octet-stream",
    "application/gzip",
    "application/x-gzip",
    "application/x-www-form-urlencoded",
)

# What a form's `file` may hold, as the document says: a text log, gzip-compressed or not, or a
# bundle's archive.
FILE_CONTENT_TYPES = [
    "text/plain",
    "application/gzip",
    "application/x-tar",
    "application/zip",
]


@dataclass(frozen=True)
class Upload:
    chunks: Iterable[bytes]
    filename: str
    metadata: JobMetadata
    # A bundle's files, (name, bytes) each: several `file` parts of a form, or one archive.
    files: list[tuple[str, bytes]] | None = None


def split_labels(values: Iterable[str]) -> list[str]:
    return [label.strip() for value in values for label in value.split(",") if label.strip()]


def upload_of(request: Request) -> Upload:
    """The log and its metadata from whichever form the request uses; metadata headers first,
    then the form's or JSON document's fields over them."""
    fields: dict[str, object] = {}
    for name, (header, _) in METADATA_HEADERS.items():
        value = request.headers.get(header)
        if value is not None:
            value = unquote(value)
            fields[name] = split_labels([value]) if name == "labels" else value
    media_type = (request.content_type or "").split(";")[0].strip().lower()
    chunks: Iterable[bytes]
    files = None
    if media_type == "multipart/form-data":
        uploads = request.FILES.getlist("file")
        if not uploads:
            raise ApplicationError("Send the log as the `file` field of the form.")
        form = cast(QueryDict, request.data)  # the multipart parser gives a QueryDict
        files = bundle_files(uploads, bundle=form.get("kind") == "bundle")
        if files is None or len(files) == 1:
            fields.setdefault("filename", uploads[0].name or "")
        for name in METADATA_HEADERS:
            if name == "labels" and "labels" in form:
                fields["labels"] = split_labels(form.getlist("labels"))
            elif name in form:
                fields[name] = form[name]
        chunks = uploads[0].chunks()
    elif media_type == "application/json":
        if not isinstance(request.data, dict):
            raise ApplicationError('Send a JSON object: {"log": "…", "filename": "…"}.')
        document = DiagnosisSubmissionSerializer(data={**fields, **request.data})
        document.is_valid(raise_exception=True)
        return Upload(
            encoded(document.validated_data["log"]),
            document.validated_data.get("filename", ""),
            document.metadata(),
        )
    elif not media_type or media_type.startswith("text/") or media_type in RAW_MEDIA_TYPES:
        chunks = body_chunks(request._request)  # the WSGI body stream, read as it arrives
    else:
        raise UnsupportedMediaType(
            media_type,
            detail=f'Unsupported media type "{media_type}": send the log as text/plain, '
            "application/octet-stream, a multipart/form-data `file` or JSON.",
        )
    filename, metadata = validated_metadata(
        tuple((name, tuple(v) if isinstance(v, list) else v) for name, v in fields.items())
    )
    return Upload(chunks, filename, metadata, files)


@lru_cache(maxsize=512)
def validated_metadata(fields: tuple[tuple[str, object], ...]) -> tuple[str, JobMetadata]:
    """The file name and metadata of a raw or multipart submission, validated (400 if invalid);
    `fields`: (name, value) as the headers or the form give them, the labels as a tuple.

    CI jobs send the same few values over and over, and DRF's validation of them is a pure
    function of the values: a valid set's result is remembered (512 sets), an invalid one is
    validated again each time (nothing cached on an error)."""
    data = {name: list(v) if isinstance(v, tuple) else v for name, v in fields}
    metadata = SubmissionMetadataSerializer(data=data)
    metadata.is_valid(raise_exception=True)
    return metadata.validated_data.get("filename", ""), metadata.metadata()


def bundle_files(uploads: list[UploadedFile], *, bundle: bool) -> list[tuple[str, bytes]] | None:
    """The files of a bundle, if the form is one: several `file` parts, one archive (.tar.gz,
    .tar, .zip, by its first bytes), or one file with `kind=bundle`. None for a log. The parts
    are in memory already (settings.FILE_UPLOAD_HANDLERS): read, not spooled."""
    if len(uploads) == 1 and not bundle:
        head = uploads[0].read(HEAD_BYTES)
        uploads[0].seek(0)
        if not is_archive(head):
            return None
    return [(upload.name or f"file{i}", upload.read()) for i, upload in enumerate(uploads)]


def encoded(text: str, size: int = 1 << 20) -> Iterator[bytes]:
    """A JSON document's log as UTF-8, a piece at a time: never a second whole copy."""
    for start in range(0, len(text), size):
        yield text[start : start + size].encode("utf-8")
