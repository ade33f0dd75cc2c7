"""DRF serializers whose fields are built once per class, not once per use.

DRF deep-copies every declared field and binds the copies to each serializer it makes: for the
diagnosis answered with every 202, that is four fifths of the 0.3 ms its representation took
(docs/benchmarks.md, 2026-12-06), spent on fields that are the same every time.
"""

from __future__ import annotations

import threading

from rest_framework import serializers
from rest_framework.utils.serializer_helpers import BindingDict

_bound: dict[type[serializers.Serializer], BindingDict] = {}
_binding = threading.Lock()


class FieldsBoundOnce(serializers.Serializer):
    """A serializer whose fields are made and bound once per class, to a serializer of their own,
    and shared by every instance (and thread) after that.

    Serializing and validating only read the fields, so sharing them is safe as long as nothing
    reaches the serializer in use through a field: no field or validator that reads the context
    or the request (`requires_context`, hyperlinks), no `partial` validation (a field asks its
    root whether the validation is partial), no field that sets another's state. Each serializer
    that uses this states it; `validate_<field>` and `validate` methods still run on the instance.
    """

    @property
    def fields(self) -> BindingDict:
        cls = type(self)
        fields = _bound.get(cls)
        if fields is None:
            with _binding:
                fields = _bound.get(cls)
                if fields is None:
                    # Bound to a serializer made for them, which no request's context reaches.
                    owner = cls()
                    fields = BindingDict(owner)
                    for name, field in owner.get_fields().items():
                        fields[name] = field
                    _bound[cls] = fields
        return fields


class StringField(serializers.CharField):
    """A CharField that takes only a string: DRF's turns a JSON number into its digits, so
    `{"log": 0}` was the log "0" (accepted and charged) where the schema says a string."""

    default_error_messages = {"invalid": "Not a string."}

    # DRF's signature: the value is whatever the parsed body held
    def to_internal_value(self, data: object) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return str(super().to_internal_value(data))
