"""The strict ``response_format`` built from models, other types and schema dicts, against hand-written schemas."""

from __future__ import annotations

import enum
import json
from typing import Literal

import pytest
from pydantic import BaseModel, Field, ValidationError

from holysheep import InvalidRequestError
from holysheep._clients.resources.chat import parse_chat_completion
from holysheep._core.json_check import SchemaMismatch, schema_errors
from holysheep._core.request import build_chat_spec
from holysheep._core.schema import response_format_for, strict_json_schema


class Currency(str, enum.Enum):
    usd = "USD"
    eur = "EUR"


class Address(BaseModel):
    street: str
    city: str


class LineItem(BaseModel):
    sku: str
    quantity: int = Field(description="units ordered")
    unit_price: float


class Invoice(BaseModel):
    number: str
    currency: Currency
    status: Literal["paid", "open"]
    billing: Address
    shipping: Address | None = None
    note: str | None = None
    discount: float = 0.0
    items: list[LineItem]
    tags: list[str] = []


NULL = {"type": "null"}
ADDRESS = {"type": "object", "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
           "required": ["street", "city"], "additionalProperties": False}
LINE_ITEM = {"type": "object",
             "properties": {"sku": {"type": "string"},
                            "quantity": {"type": "integer", "description": "units ordered"},
                            "unit_price": {"type": "number"}},
             "required": ["sku", "quantity", "unit_price"], "additionalProperties": False}
INVOICE_SCHEMA = {
    "type": "object",
    "properties": {
        "number": {"type": "string"},
        "currency": {"$ref": "#/$defs/Currency"},
        "status": {"type": "string", "enum": ["paid", "open"]},
        "billing": {"$ref": "#/$defs/Address"},
        "shipping": {"anyOf": [{"$ref": "#/$defs/Address"}, NULL]},
        "note": {"anyOf": [{"type": "string"}, NULL]},
        "discount": {"anyOf": [{"type": "number"}, NULL]},
        "items": {"type": "array", "items": {"$ref": "#/$defs/LineItem"}},
        "tags": {"anyOf": [{"type": "array", "items": {"type": "string"}}, NULL]},
    },
    "required": ["number", "currency", "status", "billing", "shipping", "note", "discount", "items", "tags"],
    "additionalProperties": False,
    "$defs": {
        "Address": ADDRESS,
        "Currency": {"type": "string", "enum": ["USD", "EUR"]},
        "LineItem": LINE_ITEM,
    },
}


def envelope(name: str, schema: dict[str, object]) -> dict[str, object]:
    return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": True}}


def test_nested_optional_enum_and_list_fields_give_the_exact_strict_schema() -> None:
    assert response_format_for(Invoice).param == envelope("Invoice", INVOICE_SCHEMA)


def test_every_object_in_the_schema_is_closed_and_fully_required() -> None:
    schema = response_format_for(Invoice).param["json_schema"]["schema"]
    objects = [schema, *[d for d in schema["$defs"].values() if d.get("type") == "object"]]
    assert len(objects) == 3
    for obj in objects:
        assert obj["additionalProperties"] is False
        assert obj["required"] == list(obj["properties"])


def test_list_of_models_is_wrapped_in_an_object_under_value() -> None:
    fmt = response_format_for(list[Address])
    assert fmt.param == envelope("list_Address", {
        "type": "object",
        "properties": {"value": {"type": "array", "items": {"$ref": "#/$defs/Address"}}},
        "required": ["value"], "additionalProperties": False, "$defs": {"Address": ADDRESS}})
    assert fmt.validate('{"value": [{"street": "1 Main St", "city": "Oslo"}]}') == [
        Address(street="1 Main St", city="Oslo")]


def test_literal_classification_is_wrapped_and_unwrapped() -> None:
    fmt = response_format_for(Literal["spam", "ham"])
    assert fmt.param == envelope("Literal_spam_ham", {
        "type": "object", "properties": {"value": {"type": "string", "enum": ["spam", "ham"]}},
        "required": ["value"], "additionalProperties": False})
    assert fmt.validate('{"value": "ham"}') == "ham"
    with pytest.raises(ValidationError):
        fmt.validate('{"value": "eggs"}')


def test_plain_json_schema_dict_is_made_strict_and_named_by_its_title() -> None:
    schema = {"title": "Person", "type": "object",
              "properties": {"name": {"type": "string"}, "age": {"type": "integer"}}, "required": ["name"]}
    fmt = response_format_for(schema)
    assert fmt.param == envelope("Person", {
        "type": "object",
        "properties": {"name": {"type": "string"}, "age": {"anyOf": [{"type": "integer"}, NULL]}},
        "required": ["name", "age"], "additionalProperties": False})
    assert fmt.validate('{"name": "Ann", "age": null}') == {"name": "Ann", "age": None}
    with pytest.raises(ValueError):
        fmt.validate("{not json")
    with pytest.raises(SchemaMismatch) as info:
        fmt.validate('{"name": 1, "nick": "A", "age": 2.5}')
    assert info.value.errors == [("name", "Input should be of type string"), ("nick", "Extra inputs are not permitted"),
                                 ("age", "matches none of the allowed alternatives")]


def test_schema_errors_cover_refs_enums_and_arrays() -> None:
    schema = response_format_for(Invoice).param["json_schema"]["schema"]
    reply = {"number": "7", "currency": "GBP", "status": "paid", "billing": {"street": "a"}, "shipping": None,
             "note": None, "discount": None, "items": [{"sku": "s", "quantity": True, "unit_price": 1}],
             "tags": None}
    assert schema_errors(reply, schema) == [
        ("currency", "Input should be one of 'USD', 'EUR'"), ("billing.city", "Field required"),
        ("items.0.quantity", "Input should be of type integer")]
    assert schema_errors({**reply, "currency": "USD", "billing": {"street": "a", "city": "b"},
                          "items": []}, schema) == []


def test_a_built_envelope_passes_through_unchanged() -> None:
    built = envelope("X", {"type": "object", "properties": {}, "required": [], "additionalProperties": False})
    assert response_format_for(built).param == built
    assert response_format_for({"type": "json_object"}).param == {"type": "json_object"}


def test_one_of_becomes_any_of_and_titles_defaults_are_dropped() -> None:
    schema = {"type": "object", "title": "T",
              "properties": {"v": {"oneOf": [{"type": "string"}, {"type": "integer"}], "default": "x",
                                   "title": "V"}}}
    assert strict_json_schema(schema) == {
        "type": "object",
        "properties": {"v": {"anyOf": [{"type": "string"}, {"type": "integer"}, NULL]}},
        "required": ["v"], "additionalProperties": False}


def test_a_property_named_title_is_kept() -> None:
    class Book(BaseModel):
        title: str

    schema = response_format_for(Book).param["json_schema"]["schema"]
    assert schema == {"type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"],
                      "additionalProperties": False}


def test_null_for_a_defaulted_field_that_is_not_optional_gives_the_default() -> None:
    fmt = response_format_for(Invoice)
    reply = {"number": "7", "currency": "EUR", "status": "paid", "billing": {"street": "a", "city": "b"},
             "shipping": None, "note": None, "discount": None,
             "items": [{"sku": "s", "quantity": 2, "unit_price": 1.5}], "tags": None}
    invoice = fmt.validate(json.dumps(reply))
    assert invoice == Invoice(number="7", currency=Currency.eur, status="paid",
                              billing=Address(street="a", city="b"),
                              items=[LineItem(sku="s", quantity=2, unit_price=1.5)])
    assert invoice.discount == 0.0 and invoice.tags == []


def test_free_form_dict_fields_are_rejected_before_any_request() -> None:
    class Loose(BaseModel):
        extra: dict[str, int]

    with pytest.raises(InvalidRequestError, match="free-form mapping") as info:
        response_format_for(Loose)
    assert info.value.field == "response_format"


def test_a_type_pydantic_cannot_describe_is_a_clear_error() -> None:
    class Opaque:
        pass

    with pytest.raises(InvalidRequestError, match="cannot build a JSON schema"):
        response_format_for(Opaque)


def test_create_with_a_model_sends_the_same_strict_envelope() -> None:
    spec = build_chat_spec(model="m", messages=[{"role": "user", "content": "x"}], stream=False,
                           params={"response_format": Invoice}, parse=parse_chat_completion)
    assert spec.body is not None
    assert spec.body["response_format"] == envelope("Invoice", INVOICE_SCHEMA)


def test_create_with_another_type_sends_the_wrapped_envelope_and_rejects_junk() -> None:
    spec = build_chat_spec(model="m", messages=[{"role": "user", "content": "x"}], stream=False,
                           params={"response_format": list[Address]}, parse=parse_chat_completion)
    assert spec.body is not None
    assert spec.body["response_format"] == response_format_for(list[Address]).param
    with pytest.raises(InvalidRequestError, match="cannot build a JSON schema"):
        build_chat_spec(model="m", messages=[{"role": "user", "content": "x"}], stream=False,
                        params={"response_format": object()}, parse=parse_chat_completion)
