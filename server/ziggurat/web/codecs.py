"""The web port's message codecs: requests decoded as strictly as the gRPC port decodes them.

Why not connectrpc's own codecs: they answer an undecodable body with Python's own text
(``unmarshal message: Failed to parse JSON: TypeError: ...``) and no reason, read a JSON
``[]`` as an empty request, and drop an enum *name* they do not know, so a misspelt
``"variant": "PYLOS_VARIANT_ADVANCD"`` created a standard match. Here:

* bytes that are not a message (corrupt protobuf, invalid UTF-8, text that is not JSON, a
  JSON value that is not an object, nesting deeper than :data:`MAX_JSON_DEPTH`, a value of
  the wrong type) are refused with INVALID_ARGUMENT ``MALFORMED_REQUEST`` and the very
  message the gRPC port gives (:func:`ziggurat.api.status_guard.undecodable`; for JSON
  it says what JSON is expected instead of "corrupt bytes");
* an enum name the schema does not have is refused with the reason the servicer gives for
  an enum *number* it does not know — ``BAD_FILTER`` in a ListMatches filter,
  ``INVALID_CONFIG`` everywhere else (every other enum of a served request is part of a
  match's configuration) — and a message naming the field and the names it takes;
* an unknown field *name* is ignored, as the gRPC port ignores an unknown field number (a
  newer client's field reaches an older server), and an enum *number* goes through to the
  servicer, which answers it as over gRPC.

Responses the servicer already serialized (WatchMatch's cached event bytes, ListMatches'
summaries) go out byte for byte in binary and are parsed once for JSON.
"""

from __future__ import annotations

import json
from typing import Any

from connectrpc.compat import google_protobuf_binary_codec, google_protobuf_json_codec
from connectrpc.errors import ConnectError
from google.protobuf import json_format
from google.protobuf.descriptor import Descriptor, EnumDescriptor, FieldDescriptor
from google.protobuf.message import Message

from ziggurat.api.status_guard import undecodable
from ziggurat.web.details import connect_error
from ziggurat.wire import errors
from ziggurat.wire.reasons import Reason

# Deeper JSON than any request needs (the deepest, CreateMatch, nests 3 objects); past it
# the body is refused before Python's recursion limit is anywhere near.
MAX_JSON_DEPTH = 32
# The requests whose enum fields are filters, not configuration (ListMatches' status and game).
FILTER_REQUESTS = frozenset({"ziggurat.v1.ListMatchesRequest"})


class Raw:
    """A response message the servicer already serialized (WatchMatch's cached event bytes)."""

    __slots__ = ("data", "message_type")

    def __init__(self, data: bytes, message_type: type[Message]) -> None:
        self.data = data
        self.message_type = message_type


JSON_WHY = f"not a JSON object of its fields, nested at most {MAX_JSON_DEPTH} deep, in UTF-8"


def _malformed(message_class: type[Any], why: str | None = None) -> ConnectError:
    name = message_class.DESCRIPTOR.full_name
    return connect_error(undecodable(name) if why is None else undecodable(name, why))


class BinaryCodec:
    """Protobuf binary; pre-serialized responses go out byte for byte."""

    _inner = google_protobuf_binary_codec()

    def name(self) -> str:
        """The codec's Connect name (``application/proto``)."""
        return "proto"

    def encode(self, message: Any) -> bytes:
        """A response's bytes."""
        if isinstance(message, Raw):
            return message.data
        return self._inner.encode(message)

    def decode(self, data: bytes | bytearray, message_class: type[Any]) -> Any:
        """A request; MALFORMED_REQUEST when the bytes are not one (as on the gRPC port)."""
        try:
            return self._inner.decode(data, message_class)
        except Exception:  # DecodeError, and whatever else a parser raises on hostile bytes
            raise _malformed(message_class) from None


class JsonCodec:
    """Protobuf JSON (handy with curl), read strictly (see the module docstring)."""

    _inner = google_protobuf_json_codec()

    def name(self) -> str:
        """The codec's Connect name (``application/json``)."""
        return "json"

    def encode(self, message: Any) -> bytes:
        """A response in protobuf JSON; pre-serialized responses are parsed first."""
        if isinstance(message, Raw):
            message = message.message_type.FromString(message.data)
        return self._inner.encode(message)

    def decode(self, data: bytes | bytearray, message_class: type[Any]) -> Any:
        """A request: a JSON object of the message's fields; refusals as the module says."""
        try:
            value = json.loads(bytes(data).decode("utf-8"))  # UTF-8 only, as protobuf JSON is
        except (ValueError, RecursionError):  # not JSON, not UTF-8, or nested past Python's limit
            raise _malformed(message_class, JSON_WHY) from None
        if not isinstance(value, dict) or _depth(value) > MAX_JSON_DEPTH:
            raise _malformed(message_class, JSON_WHY)
        descriptor: Descriptor = message_class.DESCRIPTOR
        unknown = unknown_enum_name(descriptor, value)
        if unknown is not None:
            raise connect_error(_unknown_enum_error(descriptor, *unknown))
        message = message_class()
        try:
            json_format.ParseDict(value, message, ignore_unknown_fields=True)
        except Exception:  # ParseError (a value of the wrong type), and anything else it raises
            raise _malformed(message_class, JSON_WHY) from None
        return message


def _depth(value: object) -> int:
    """How deeply ``value`` nests objects and arrays (iteratively: no recursion to overflow)."""
    deepest = 0
    pending: list[tuple[object, int]] = [(value, 1)]
    while pending:
        item, level = pending.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, level)
        if deepest > MAX_JSON_DEPTH:
            return deepest
        pending.extend((child, level + 1) for child in children)
    return deepest


def _field(descriptor: Descriptor, key: str) -> FieldDescriptor | None:
    """The field a JSON key names (its JSON name or its proto name, as protobuf JSON allows)."""
    for field in descriptor.fields:
        if key in (field.json_name, field.name):
            return field
    return None


def _known(enum: EnumDescriptor, value: object) -> bool:
    """Whether a JSON enum value names a value of ``enum`` (numbers are left to the servicer)."""
    if not isinstance(value, str) or value in enum.values_by_name:
        return True
    try:
        int(value)
    except ValueError:
        return False
    return True


UnknownEnum = tuple[str, str, EnumDescriptor]


def unknown_enum_name(descriptor: Descriptor, value: dict[str, Any], prefix: str = "") -> UnknownEnum | None:
    """The first enum name in the JSON object ``value`` that its field's enum does not have:
    (field path, the name, the enum), or None.

    >>> from ziggurat.v1 import match_service_pb2 as spb
    >>> found = unknown_enum_name(spb.ListMatchesRequest.DESCRIPTOR, {"status": "MATCH_STATUS_NOSUCH"})
    >>> found[:2]
    ('status', 'MATCH_STATUS_NOSUCH')
    >>> unknown_enum_name(spb.ListMatchesRequest.DESCRIPTOR, {"status": "MATCH_STATUS_ACTIVE"}) is None
    True
    """
    for key, item in value.items():
        field = _field(descriptor, key)
        if field is None or item is None:
            continue
        path = f"{prefix}{field.name}"
        elements: list[Any] = [item]
        target = field
        if field.message_type is not None and field.message_type.GetOptions().map_entry:
            target = field.message_type.fields_by_name["value"]
            elements = list(item.values()) if isinstance(item, dict) else []
        elif field.is_repeated and isinstance(item, list):
            elements = item
        enum, message = target.enum_type, target.message_type
        for element in elements:
            if enum is not None and not _known(enum, element):
                return path, str(element), enum
            if message is not None and isinstance(element, dict):
                found = unknown_enum_name(message, element, path + ".")
                if found is not None:
                    return found
    return None


def _unknown_enum_error(
    descriptor: Descriptor, path: str, name: str, enum: EnumDescriptor
) -> errors.ApiError:
    """The refusal of an enum name the schema does not have: the reason an unknown number gets."""
    reason = Reason.BAD_FILTER if descriptor.full_name in FILTER_REQUESTS else Reason.INVALID_CONFIG
    shown = name if len(name) <= 64 else name[:64] + "…"
    names = ", ".join(value.name for value in enum.values)
    return errors.refuse(reason, f"{path}: {shown!r} is not a {enum.name} ({names})")
