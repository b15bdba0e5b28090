// Grammars for JSON output: any JSON object (OpenAI's response_format
// json_object) or the documents a JSON Schema describes (json_schema), as
// bytes. The output is compact or pretty-printed: between tokens at most one
// space, or a newline and up to 20 spaces or tabs of indent (unbounded
// whitespace lets a model pad until max_tokens, as llama.cpp's grammars note);
// the same before the document, nothing after it (the output ends there).
//
// Schemas: type (one or a list), properties / required (members in the order
// the schema lists them; optional ones may be left out; no others are
// generated, which every additionalProperties allows), additionalProperties as
// a schema for objects without properties (a map), items, minItems, maxItems,
// minLength, maxLength, pattern (regex.h), format (string_formats.h), minimum,
// maximum, exclusiveMinimum, exclusiveMaximum (integral bounds for numbers;
// number_range.h), enum, const, anyOf, oneOf (when no document can match two
// branches), allOf of one schema, $ref to "#", "#/$defs/..." or
// "#/definitions/...", and the annotations (title, description, default,
// examples, ...), which change nothing. Keywords that constrain in ways these
// grammars do not follow (multipleOf, patternProperties, prefixItems, ...)
// are refused, naming the keyword and where it is, rather than ignored: the
// output would break the schema.
#pragma once
#include <nlohmann/json.hpp>

#include "text/grammar/grammar.h"

namespace qinfer::grammar {

Grammar json_object_grammar();

// Throws qinfer::Error naming the schema keyword it cannot follow, with its
// JSON pointer ("/properties/age/minimum"). Members come in the schema's order
// (an ordered_json keeps it).
Grammar json_schema_grammar(const nlohmann::ordered_json& schema);

// The documents of `schema`, whitespace before them allowed, as an
// expression of `builder`'s grammar, for grammars that wrap JSON (a tool
// call's tags around its arguments). One call per builder.
Expr json_schema_expr(GrammarBuilder& builder, const nlohmann::ordered_json& schema);

}  // namespace qinfer::grammar
